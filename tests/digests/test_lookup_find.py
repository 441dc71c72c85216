"""`find` by authors' names, exact method names before the compounds that contain them,
and `-word` to leave papers out; the results list their authors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlite_utils import Database

from config.settings import Settings
from digests.commands import Context, handle
from digests.ingest import ingest_files
from digests.lookup import FindQuery, find, format_results, parse_find
from digests.render.discord import reply_messages as discord_messages
from digests.render.slack import reply_messages as slack_messages
from digests.render.text import reply_text
from digests.topics import load_catalog
from tests.conftest import NOW
from tests.fakes.search_papers import BY_LEVINE, PAPERS, arxiv_ids, search_store


@pytest.fixture
def store(fresh_db: Database) -> Database:
    return search_store(fresh_db)


def _jsonl(tmp_path: Path, *papers: dict[str, object]) -> Path:
    path = tmp_path / "more.jsonl"
    path.write_text("".join(json.dumps(paper) + "\n" for paper in papers), encoding="utf-8")
    return path


@pytest.mark.parametrize("query", ["levine", "Sergey Levine", "S. Levine", "sergey levine"])
def test_an_author_s_name_finds_the_papers_by_that_author(store: Database, query: str) -> None:
    found = arxiv_ids(find(store, query, 5))
    assert set(found) == BY_LEVINE, query


def test_a_paper_by_the_author_ranks_above_one_that_names_him(
    tmp_path: Path, fresh_db: Database
) -> None:
    mention = {
        "id": "mention",
        "title": "Revisiting expectile regression for value learning",
        "authors": ["Ada Lovelace"],
        "abstract": "Following Levine and colleagues, we revisit expectile regression and show "
        "where it fails for value learning with small datasets.",
    }
    db = search_store(fresh_db, _jsonl(tmp_path, mention))
    for query in ("levine", "Sergey Levine"):
        titles = [result["title"] for result in find(db, query, 10)]
        assert titles[-1] == mention["title"], query
        assert len(titles) == len(BY_LEVINE) + 1


def test_author_words_must_all_be_in_one_paper_s_authors(store: Database) -> None:
    # "Sergey" and "Finn" are both authors, never of one paper: no author match.
    assert find(store, "Sergey Finn", 5) == []


def test_an_exact_acronym_beats_a_compound_that_contains_it(store: Database) -> None:
    # AlphaDPO's names hold "DPO" (AlphaDPO split); the DPO paper introduces DPO itself.
    for query in ("dpo", "DPO"):
        assert arxiv_ids(find(store, query, 5))[0] == "2305.18290", query
    assert arxiv_ids(find(store, "direct preference optimization", 5))[0] == "2305.18290"


def test_a_method_name_beats_a_title_that_contains_it(tmp_path: Path, fresh_db: Database) -> None:
    """IQL's abstract only dubs the method, so no method name is derived for it, while
    IDQL's title puts "Implicit Q-Learning" behind its own method name."""
    iql = {
        "id": "iql-dubbed",
        "title": "Offline RL without off-policy evaluation",
        "authors": ["Ilya Kostrikov"],
        "abstract": "Most offline RL methods query the value of unseen actions. We never do: "
        "we fit an upper expectile of the value distribution instead. We dub our method "
        "implicit Q-learning (IQL).",
    }
    db = fresh_db
    # Without the IQL paper that names its method, so that only "dub" can place it.
    lines = PAPERS.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["id"] != "2110.06169"]
    others = tmp_path / "others.jsonl"
    others.write_text("\n".join(kept) + "\n", encoding="utf-8")
    ingest_files(db, [others, _jsonl(tmp_path, iql)], now=NOW)
    for query in ("implicit q-learning", "Implicit Q-Learning", "iql"):
        assert find(db, query, 5)[0]["title"] == iql["title"], query


def test_the_method_name_itself_stays_first(store: Database) -> None:
    assert arxiv_ids(find(store, "implicit q-learning", 5))[:2] == ["2110.06169", "2304.10573"]
    assert arxiv_ids(find(store, "IDQL", 5))[0] == "2304.10573"
    assert arxiv_ids(find(store, "alphadpo", 5))[0] == "2410.10148"


@pytest.mark.parametrize(
    ("query", "parsed"),
    [
        ("offline rl -diffusion", FindQuery("offline rl", ("diffusion",))),
        (
            'offline rl -"diffusion policies" -IQL',
            FindQuery("offline rl", ("diffusion policies", "IQL")),
        ),
        ("offline rl -“diffusion policies”", FindQuery("offline rl", ("diffusion policies",))),
        ("implicit q-learning", FindQuery("implicit q-learning")),
        ("q-learning -in-context", FindQuery("q-learning", ("in-context",))),
        ("offline rl - diffusion", FindQuery("offline rl - diffusion")),
        ("-diffusion", FindQuery("", ("diffusion",))),
        ("rl -?!", FindQuery("rl")),
    ],
)
def test_minus_words_are_cut_from_the_query(query: str, parsed: FindQuery) -> None:
    assert parse_find(query) == parsed


def test_a_minus_word_leaves_out_the_papers_that_mention_it(store: Database) -> None:
    with_it = find(store, "offline rl", 10)
    without = find(store, "offline rl -diffusion", 10)
    assert any("iffusion" in result["abstract"] for result in with_it)
    assert without and all("diffusion" not in str(r).casefold() for r in without)
    assert [r["id"] for r in without] == [
        r["id"] for r in with_it if "diffusion" not in str(r).casefold()
    ][: len(without)]


def test_a_minus_word_leaves_out_an_author_s_papers(store: Database) -> None:
    found = arxiv_ids(find(store, "offline reinforcement learning -levine", 10))
    assert found and not set(found) & BY_LEVINE


def test_a_minus_phrase_leaves_out_only_the_phrase(tmp_path: Path, fresh_db: Database) -> None:
    apart = {
        "id": "apart",
        "title": "Offline RL policies that never need a diffusion model",
        "abstract": "Offline RL policies can match a diffusion model with a plain Gaussian.",
    }
    store = search_store(fresh_db, _jsonl(tmp_path, apart))
    found = find(store, 'offline rl -"diffusion policies"', 10)
    texts = [f"{r['title']} {r['abstract']}".casefold() for r in found]
    assert texts and all("diffusion policies" not in text for text in texts)
    # A paper with both words apart, but not the phrase, stays.
    assert any("diffusion" in text and "policies" in text for text in texts)


def test_the_fts5_lookup_leaves_out_the_same_and_finds_authors(
    store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db import text_index

    def unavailable(db: Database) -> text_index.TextIndex:
        raise text_index.IndexUnavailable("a test")

    indexed = {q: find(store, q, 5) for q in ("Sergey Levine", "offline rl -diffusion", "dpo")}
    monkeypatch.setattr(text_index, "ready", unavailable)
    assert set(arxiv_ids(find(store, "Sergey Levine", 5))) == BY_LEVINE
    assert arxiv_ids(find(store, "dpo", 5))[0] == "2305.18290"
    fts = find(store, "offline rl -diffusion", 5)
    assert fts and all("diffusion" not in str(r).casefold() for r in fts)
    assert indexed["Sergey Levine"] and indexed["offline rl -diffusion"]


def _ctx(db: Database, settings: Settings) -> Context:
    return Context(db, "local:lab", "@a", NOW, settings, load_catalog())


def test_the_reply_says_what_was_left_out(store: Database, settings: Settings) -> None:
    reply = handle("find offline rl -diffusion", _ctx(store, settings))
    assert reply.text.startswith("Top 3 for “offline rl” without “diffusion”:")
    reply = handle('find offline rl -"diffusion policies" -kostrikov', _ctx(store, settings))
    assert "for “offline rl” without “diffusion policies” and “kostrikov”:" in reply.text
    reply = handle("find offline rl -diffusion -offline", _ctx(store, settings))
    assert reply.text.startswith("No papers match “offline rl” without “diffusion” and “offline”.")


def test_only_minus_words_get_a_message_and_no_lookup(store: Database, settings: Settings) -> None:
    for query in ("-diffusion", '-"diffusion policies" -rl'):
        reply = handle(f"find {query}", _ctx(store, settings))
        assert reply.papers == ()
        assert reply.text.startswith(f"“{query}” only says what to leave out"), reply.text
        assert "\n" not in reply.text.split("\n")[0]


def test_find_results_list_the_authors_on_every_platform(
    store: Database, settings: Settings
) -> None:
    reply = handle("find direct preference optimization", _ctx(store, settings))
    shown = "Rafael Rafailov, Archit Sharma, Eric Mitchell et al."
    assert reply.papers[0]["authors"][:3] == ["Rafael Rafailov", "Archit Sharma", "Eric Mitchell"]
    assert shown in reply_text(reply)
    assert shown in format_results(list(reply.papers), "")
    assert shown in json.dumps([m.payload() for m in slack_messages(reply)], ensure_ascii=False)
    discord = json.dumps([m.payload() for m in discord_messages(reply)], ensure_ascii=False)
    assert shown in discord


def test_show_lists_the_authors_on_every_platform(store: Database, settings: Settings) -> None:
    reply = handle("show 2110.06169", _ctx(store, settings))
    assert "Authors: Ilya Kostrikov, Ashvin Nair, Sergey Levine" in reply_text(reply)
    shown = "Ilya Kostrikov, Ashvin Nair, Sergey Levine"
    assert shown in json.dumps([m.payload() for m in slack_messages(reply)], ensure_ascii=False)
    assert shown in json.dumps([m.payload() for m in discord_messages(reply)], ensure_ascii=False)
