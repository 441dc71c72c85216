"""Ranked lookup: method names first, and any user text is safe."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import open_db
from db.search import match_expression, search_papers, tokens
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import ICLR2021, NOW, SAMPLES

SEEDS = [SAMPLES / "icml2025.txt", SAMPLES / "iclr2025.txt"]


@pytest.fixture(scope="module")
def seeded() -> Store:
    db = open_db(":memory:")
    ingest_files(db, SEEDS, now=NOW)
    return db


@pytest.fixture(scope="module")
def big() -> Store:
    if not ICLR2021.is_file():
        pytest.skip("../shared/corpora/iclr2021-openreview.tsv is not here")
    db = open_db(":memory:")
    ingest_files(db, [*SEEDS, ICLR2021], now=NOW)
    return db


@pytest.mark.parametrize(
    ("query", "method"),
    [
        ("AlphaDPO", "AlphaDPO"),
        ("alpha dpo", "AlphaDPO"),
        ("alpha-dpo", "AlphaDPO"),
        ("LoMAP", "LoMAP"),
        ("lomap", "LoMAP"),
        ("ResDex", "ResDex"),
        ("res dex", "ResDex"),
        ("Flow of Options", "FoO"),
        ("digi-q", "Digi-Q"),
        ("UCB-TQL", "UCB-TQL"),
    ],
)
def test_method_names_find_their_paper_first(seeded: Store, query: str, method: str) -> None:
    hits = search_papers(seeded, query, 5)
    assert hits and hits[0].paper["method"] == method


@pytest.mark.parametrize("query", ["AlphaDPO", "alpha dpo", "LoMAP", "ResDex"])
def test_method_names_win_among_3000_papers(big: Store, query: str) -> None:
    hits = search_papers(big, query, 5)
    assert hits[0].paper["method"].lower().replace("-", "") == query.replace(" ", "").lower()


def test_topic_words_rank_relevant_papers(seeded: Store) -> None:
    titles = [hit.paper["method"] for hit in search_papers(seeded, "multi-agent communication", 3)]
    assert "ExpoComm" in titles
    scores = [hit.score for hit in search_papers(seeded, "diffusion", 10)]
    assert scores == sorted(scores, reverse=True)


def test_limit_is_respected(seeded: Store) -> None:
    assert len(search_papers(seeded, "reinforcement learning", 4)) == 4
    assert search_papers(seeded, "reinforcement learning", 0) == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced quote',
        "AND OR NOT",
        "NEAR(a b, 3)",
        "title:foo",
        "-negated",
        "prefix*",
        "c++",
        "^start",
        "!!!???",
        "",
        "   ",
        "🙂🚀",
        "x" * 10_000,
        "word " * 2_000,
        "{braces} [brackets] (parens)",
        "SELECT * FROM papers; --",
        "\x00\x01",
    ],
)
def test_hostile_queries_never_raise(seeded: Store, query: str) -> None:
    assert isinstance(search_papers(seeded, query, 5), list)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.text(), st.text(alphabet="\"*:-^(){}[]+,.ANDORTE \\'")))
def test_any_text_is_a_safe_query(seeded: Store, query: str) -> None:
    hits = search_papers(seeded, query, 3)
    assert len(hits) <= 3
    if not tokens(query):
        assert hits == []


def test_match_expression_quotes_every_term() -> None:
    assert match_expression('alpha "dpo') == '"alpha" OR "dpo" OR "alphadpo"'
    assert match_expression("?!") is None


def test_search_on_a_file_database(tmp_path: Path) -> None:
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    assert search_papers(db, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
