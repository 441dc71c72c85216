"""Markup to plain text, links, ids."""

from __future__ import annotations

from digests.enrich.links import extract_links
from digests.identity import paper_id
from digests.text import name_key, plain_text, sentences, shorten, split_camel


def test_latex_reads_sensibly() -> None:
    assert plain_text(r"a bound of $\tilde{\mathcal{O}}(\sqrt{eH^5N})$ here") == (
        "a bound of Õ(√(eH^5N)) here"
    )
    assert plain_text(r"model \(\hat{\pi}_{\text{ref}} \propto U(y|x)\)") == "model π̂_ref ∝ U(y|x)"
    assert plain_text(r"win rate (58.7\% LC) and \underline{task shift}") == (
        "win rate (58.7% LC) and task shift"
    )


def test_markdown_is_stripped_but_words_kept() -> None:
    text = "a *training-free* method by [Guez et al. (2019)](https://arxiv.org/abs/1901.03559)"
    assert plain_text(text) == "a training-free method by Guez et al. (2019)"
    assert plain_text("**bold** and `code` and {braced words}") == "bold and code and braced words"
    assert plain_text("snake_case_name stays") == "snake_case_name stays"


def test_lone_dollar_is_not_maths() -> None:
    assert plain_text("costs under $1 per task") == "costs under $1 per task"


def test_links_are_found_and_classified() -> None:
    abstract = (
        "by [Guez et al. (2019)](https://arxiv.org/abs/1901.03559). Code at "
        "[https://github.com/LXXXXR/ExpoComm](https://github.com/LXXXXR/ExpoComm). "
        "See https://github.com/jan-o-e/RL4qcWpc. and https://rewarped.github.io/."
    )
    links = [(link.url, link.kind) for link in extract_links(abstract)]
    assert links == [
        ("https://arxiv.org/abs/1901.03559", "reference"),
        ("https://github.com/LXXXXR/ExpoComm", "code"),
        ("https://github.com/jan-o-e/RL4qcWpc", "code"),
        ("https://rewarped.github.io/", "project"),
    ]


def test_sentences_keep_abbreviations() -> None:
    text = "Pairs (e.g., audio+image) exist. Guez et al. (2019) said so. Fine."
    assert sentences(text) == [
        "Pairs (e.g., audio+image) exist.",
        "Guez et al. (2019) said so.",
        "Fine.",
    ]


def test_shorten_cuts_at_a_word() -> None:
    assert shorten("one two three four", 12) == "one two…"
    assert shorten("short", 12) == "short"


def test_names() -> None:
    assert name_key("Alpha-DPO") == "alphadpo"
    assert split_camel("AlphaDPO") == "Alpha DPO"
    assert split_camel("HyPoGen") == "Hy Po Gen"


def test_paper_id_ignores_markup_case_and_spacing() -> None:
    a = "We propose *LoMAP*, a  method.\r\n"
    b = "we propose LoMAP, a method"
    assert paper_id(a) == paper_id(b)
    assert paper_id(a) != paper_id("We propose LoMAP, another method.")
    assert paper_id(a).startswith("p") and len(paper_id(a)) == 17
