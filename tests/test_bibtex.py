"""digests/bibtex.py: entry types, stable keys, and text that survives a BibTeX parser
(bibtexparser 2.x parses every entry back)."""

from __future__ import annotations

import re
from typing import Any

import bibtexparser
import pytest
from bibtexparser import middlewares
from hypothesis import given, settings
from hypothesis import strategies as st

from digests.bibtex import bibtex, cite_key, entry, latex_text


def paper(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "p380c62ca5bf30379",
        "title": "Conservative Q-Learning for Offline Reinforcement Learning",
        "authors": ["Aviral Kumar", "Aurick Zhou", "George Tucker", "Sergey Levine"],
        "venue": "NeurIPS",
        "year": 2020,
        "arxiv_url": None,
        "categories": [],
    }
    return base | fields


def parse(text: str, *extra: Any) -> Any:
    library = bibtexparser.parse_string(text, append_middleware=list(extra))
    assert not library.failed_blocks, [block.error for block in library.failed_blocks]
    return library


def fields_of(library: Any) -> list[dict[str, str]]:
    return [{f.key: f.value for f in item.fields} for item in library.entries]


def bibtex_balanced(text: str) -> bool:
    """Braces balanced as BibTeX itself counts them: a backslash escapes nothing."""
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_a_venue_paper_is_inproceedings_with_its_booktitle() -> None:
    (item,) = fields_of(parse(bibtex([paper()])))
    library = parse(bibtex([paper()]))
    assert library.entries[0].entry_type == "inproceedings"
    assert item["booktitle"] == "Advances in Neural Information Processing Systems ({NeurIPS})"
    assert item["year"] == "2020"
    assert "eprint" not in item


def test_an_arxiv_paper_is_misc_with_its_eprint() -> None:
    preprint = paper(
        venue="arXiv",
        year=2025,
        arxiv_url="https://arxiv.org/abs/2502.01234v2",
        categories=["cs.LG", "cs.AI"],
    )
    library = parse(bibtex([preprint]))
    (item,) = fields_of(library)
    assert library.entries[0].entry_type == "misc"
    assert item["eprint"] == "2502.01234"
    assert item["archivePrefix"] == "arXiv"
    assert item["primaryClass"] == "cs.LG"
    assert "booktitle" not in item


def test_an_arxiv_link_in_url_or_pdf_url_is_its_eprint() -> None:
    for field in ("url", "pdf_url"):
        linked = entry(paper(venue=None, **{field: "https://arxiv.org/pdf/2401.00001v3"}))
        assert (linked.kind, dict(linked.fields)["eprint"]) == ("misc", "2401.00001")
    assert "eprint" not in dict(entry(paper(url="https://example.org/paper")).fields)


def test_a_venue_paper_on_arxiv_keeps_both() -> None:
    both = paper(venue="ICLR 2025 Oral", arxiv_url="https://arxiv.org/abs/2502.01234")
    library = parse(bibtex([both]))
    (item,) = fields_of(library)
    assert library.entries[0].entry_type == "inproceedings"
    assert item["booktitle"] == "International Conference on Learning Representations ({ICLR})"
    assert item["eprint"] == "2502.01234"


def test_journals_workshops_and_unknown_venues() -> None:
    journal = entry(paper(venue="TMLR"))
    assert journal.kind == "article"
    assert ("journal", "Transactions on Machine Learning Research") in journal.fields
    workshop = entry(paper(venue="ICML 2025 Workshop"))
    assert (workshop.kind, dict(workshop.fields)["booktitle"]) == (
        "inproceedings",
        "{ICML} 2025 Workshop",
    )
    nothing = entry(paper(venue=None, year=None))
    assert nothing.kind == "misc"
    assert [name for name, _ in nothing.fields] == ["title", "author"]


def test_a_paper_without_authors_has_no_author_field_and_a_key_from_its_title() -> None:
    seed = paper(id="p12bf38103b60b560", authors=[], venue="ICML", year=2025, title="Benchmarking")
    made = entry(seed)
    assert "author" not in dict(made.fields)
    assert made.key == "benchmarking2025_12bf38"


def test_a_derived_title_is_noted() -> None:
    derived = dict(entry(paper(title_derived=1)).fields)
    assert (
        derived["note"] == "Title derived from the abstract by Paperboy; check the published title"
    )
    assert "note" not in dict(entry(paper(title_derived=0)).fields)


def test_keys_are_stable_and_do_not_depend_on_the_export() -> None:
    one = paper()
    assert cite_key(one) == "kumar2020conservative_380c62"
    others = [paper(id=f"p{i:016x}", title=f"Paper {i}") for i in range(5)]
    alone = parse(bibtex([one])).entries[0].key
    among = {e.key for e in parse(bibtex([*others, one])).entries}
    assert alone in among


def test_same_author_year_and_word_still_get_different_keys_whatever_the_order() -> None:
    twins = [
        paper(id="p1111110000000001", title="Conservative policies"),
        paper(id="p2222220000000002", title="Conservative estimates"),
    ]
    forward = {e.key for e in parse(bibtex(twins)).entries}
    backward = {e.key for e in parse(bibtex(twins[::-1])).entries}
    assert len(forward) == 2
    assert (
        forward
        == backward
        == {
            "kumar2020conservative_111111",
            "kumar2020conservative_222222",
        }
    )


def test_a_full_key_clash_takes_longer_suffixes_from_the_ids() -> None:
    # Same author, year, word and first six hex digits: only the long suffix tells them apart.
    twins = [
        paper(id="p1111110000000001", title="Conservative policies"),
        paper(id="p1111110000000002", title="Conservative estimates"),
    ]
    keys = [e.key for e in parse(bibtex(twins)).entries]
    assert keys == [
        "kumar2020conservative_1111110000000001",
        "kumar2020conservative_1111110000000002",
    ]
    assert [e.key for e in parse(bibtex(twins[::-1])).entries] == keys[::-1]


def test_one_paper_twice_is_one_entry() -> None:
    assert len(parse(bibtex([paper(), paper()])).entries) == 1


TITLES = {
    r"$\alpha$-DPO: Adaptive Reward Margin": r"{$\alpha$}-{DPO}: Adaptive Reward Margin",
    "Q&A at 50% of #1 my_var": r"Q\&A at 50\% of \#1 my\_var",
    "LoRA and GPT-4 in $O(n^2)$ time": r"{LoRA} and {GPT-4} in {$O(n^2)$} time",
    "Müller's naïve Ω-nets: 深度学习": "Müller's naïve Ω-nets: 深度学习",
    "{BERT} keeps its braces": "{BERT} keeps its braces",
    "Costs $5 a month": r"Costs \$5 a month",
}


def test_titles_survive_the_round_trip() -> None:
    papers = [paper(id=f"p{i:016x}", title=title) for i, title in enumerate(TITLES)]
    raw = [item["title"] for item in fields_of(parse(bibtex(papers)))]
    assert raw == list(TITLES.values())
    decoded = parse(bibtex(papers), middlewares.LatexDecodingMiddleware())
    # Decoded (braces and escapes gone), each title is what the paper says, math kept.
    wanted = [title.replace("{BERT}", "BERT") for title in TITLES]
    assert [item["title"] for item in fields_of(decoded)] == wanted


def test_authors_survive_the_round_trip() -> None:
    names = [
        "Jörg Müller",
        "Zoë Çelik-Ñúñez",
        "李 小龙",
        "Smith, Jr., John",
        "Research and Development Team",
        *[f"Author Number{i}" for i in range(60)],
    ]
    library = parse(bibtex([paper(authors=names)]), middlewares.SeparateCoAuthors())
    got = library.entries[0].fields_dict["author"].value
    assert got == [*names[:4], "{Research and Development Team}", *names[5:]]
    assert len(got) == 65


HOSTILE = [
    "Nice title} , author = {Evil},",
    "x @comment{ injected } y",
    "}@misc{evil, title={pwned}}",
    "ends with a backslash \\",
    "escaped \\} and \\{ braces",
    "line one\n@misc{evil,\ntitle = {two}}",
    "{{{ open only",
    "$unclosed math",
]


def test_hostile_titles_stay_inside_their_entry() -> None:
    papers = [paper(id=f"p{i:016x}", title=title) for i, title in enumerate(HOSTILE)]
    text = bibtex(papers)
    library = parse(text)
    assert [e.entry_type for e in library.blocks] == ["inproceedings"] * len(HOSTILE)
    assert [e.key for e in library.entries] == [cite_key(p) for p in papers]
    for item in fields_of(library):
        assert set(item) == {"title", "author", "booktitle", "year"}
        assert item["author"].startswith("Aviral Kumar")
        assert bibtex_balanced(item["title"])
        assert "\n" not in item["title"]
        assert "\\}" not in item["title"] and "\\{" not in item["title"]
    assert all(bibtex_balanced(block) for block in text.split("\n\n"))


def test_latex_text_writes_unmatched_braces_as_words() -> None:
    assert latex_text("a } b {") == r"a \textbraceright{} b \textbraceleft{}"
    assert latex_text("foo\\") == r"foo\textbackslash{}"


text_strategy = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60
)


@settings(max_examples=200, deadline=None)
@given(title=text_strategy, authors=st.lists(text_strategy, max_size=4))
def test_any_text_makes_exactly_one_well_formed_entry(title: str, authors: list[str]) -> None:
    text = bibtex([paper(title=title, authors=authors), paper(id="p0000000000000001")])
    library = parse(text)
    assert len(library.blocks) == 2
    assert [e.key for e in library.entries][1] == cite_key(paper(id="p0000000000000001"))
    first = fields_of(library)[0]
    assert set(first) <= {"title", "author", "booktitle", "year"}
    assert bibtex_balanced(first["title"])


def test_titles_cannot_run_tex_where_the_entry_is_compiled() -> None:
    # A title is text anyone can submit, compiled into the citing paper: commands that read
    # or write files, run programs or redefine things are written as text, and `^^5c` (a
    # backslash to TeX) is broken up in math. Other LaTeX is kept.
    hostile = {
        r"\input{/etc/passwd}": r"\textbackslash{}input{/etc/passwd}",
        r"A \immediate\write18{curl x|sh} Title": (
            r"A \textbackslash{}immediate\textbackslash{}write18{curl x|sh} Title"
        ),
        r"\def\alpha{x} $\alpha$-DPO": r"\textbackslash{}def\alpha{x} {$\alpha$}-{DPO}",
        r"Stop \end{document} here": r"Stop \textbackslash{}end{document} here",
        r"$^^5cinput{/etc/passwd}$": r"{$^{}{}^5cinput{/etc/passwd}$}",
        r"Fast \emph{and} \textbf{Inputs}": r"Fast \emph{and} \textbf{Inputs}",
    }
    papers = [paper(id=f"p{i:016x}", title=title) for i, title in enumerate(hostile)]
    library = parse(bibtex(papers))
    assert [item["title"] for item in fields_of(library)] == list(hostile.values())
    unsafe = re.compile(r"(?<!\\textbackslash\{\})\\(input|write|immediate|def|end)\b|\^\^")
    assert not unsafe.search(bibtex(papers))
    # Author names too: they are compiled the same way.
    (item,) = fields_of(parse(bibtex([paper(authors=[r"Eve \input{x}", "Bob"])])))
    assert item["author"] == r"Eve \textbackslash{}input{x} and Bob"


def test_findings_and_submissions_are_not_the_main_conference() -> None:
    # arXiv comments give "ACL 2024 Findings" (digests.sources.records); a file's venue
    # column may say "Submitted to ICLR 2025". Both were cited as the main conference.
    findings = entry(paper(venue="ACL 2024 Findings", year=2024))
    assert findings.kind == "inproceedings"
    assert dict(findings.fields)["booktitle"] == (
        "Findings of the Association for Computational Linguistics: {ACL} 2024"
    )
    emnlp = dict(entry(paper(venue="EMNLP 2023 Findings")).fields)["booktitle"]
    assert emnlp.endswith(": {EMNLP} 2023")
    for venue in ("Submitted to ICLR 2025", "ICLR 2025 Conference Withdrawn Submission",
                  "NeurIPS 2024 (rejected)", "Under review at ICML"):  # fmt: skip
        made = entry(paper(venue=venue))
        assert made.kind == "misc" and "booktitle" not in dict(made.fields), venue
    assert entry(paper(venue="ACL 2024")).kind == "inproceedings"  # the main one is unchanged
    assert "Annual Meeting" in dict(entry(paper(venue="ACL 2024")).fields)["booktitle"]


@pytest.mark.parametrize("title", ["\\\\", "a \\\\", "{\\\\}", "A {B \\\\}", "$x \\\\$"])
def test_a_line_break_before_a_brace_still_closes_the_entry(title: str) -> None:
    # bibtexparser reads `\\}` as a backslash and an escaped brace (hypothesis found a
    # title of two backslashes that left the entry open, swallowing the next one).
    text = bibtex([paper(title=title), paper(id="p0000000000000001")])
    library = parse(text)
    assert len(library.entries) == 2
    assert not library.failed_blocks
    assert "\\\\" in fields_of(library)[0]["title"]  # the break is kept
