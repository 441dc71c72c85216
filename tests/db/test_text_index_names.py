"""What the search index holds besides the text: authors' names and a paper's own
acronyms; and an index of the previous format (without them) is rebuilt, not used."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from db import open_db, text_index
from db.search import search_papers
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.search_papers import search_store
from tests.fakes.search_store import db_path, forget


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Store]:
    db = search_store(open_db(tmp_path / "p.db"))
    yield db
    forget(db)


def _by_levine(db: Store) -> list[str]:
    return [hit.paper["title"] for hit in search_papers(db, "Sergey Levine", 10)]


def test_an_index_of_the_previous_format_is_rebuilt_with_the_authors(
    file_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an older release left beside the store: a current index, in search-v1, of
    documents without authors. Used as it is, "Sergey Levine" would find nothing; kept, it
    would hold the disk (183 MB at a million papers) for nothing."""
    real_document = text_index._document

    def without_authors(row: dict[str, Any]) -> Any:
        return real_document({**row, "authors": "[]"})

    with monkeypatch.context() as old:
        old.setattr(text_index, "FORMAT", 1)
        old.setattr(text_index, "_document", without_authors)
        assert _by_levine(file_db) == []
        assert (db_path(file_db).parent / "p.db.search-v1" / text_index.META).is_file()
    forget(file_db)  # a new process, of this release
    assert len(_by_levine(file_db)) == 4
    assert (text_index.index_folder(db_path(file_db)) / text_index.META).is_file()
    assert text_index.index_folder(db_path(file_db)).name != "p.db.search-v1"
    assert not (db_path(file_db).parent / "p.db.search-v1").exists()  # no release reads it


@pytest.mark.parametrize(
    ("title", "abstract", "own"),
    [
        (
            "Direct Preference Optimization: Your Language Model is Secretly a Reward Model",
            "RLHF is complex. We introduce Direct Preference Optimization (DPO), a new method.",
            ["dpo", "directpreferenceoptimization"],
        ),
        # Builds on IQL (no introducing words): IQL is not its own.
        (
            "IDQL: Implicit Q-Learning as an Actor-Critic Method",
            "Implicit Q-learning (IQL) addresses this. We reinterpret IQL.",
            ["idql"],
        ),
        ("A title", "We dub our method implicit Q-learning (IQL).", ["iql", "implicitqlearning"]),
        (
            "KTO: Model Alignment",
            "We propose Kahneman-Tversky Optimization (KTO), which works.",
            ["kto", "kahnemantverskyoptimization"],
        ),
        ("A title", "A method called Learning to Rank (LTR).", ["ltr", "learningtorank"]),
        # Initials that do not spell the acronym, or one capital: not a definition.
        ("A title", "We propose a fast model (GPT) and a thing (X).", []),
        ("Offline RL with Q-functions", "", ["rl"]),
        # An acronym joined by a hyphen names a compound, not the acronym itself.
        ("Beta-DPO: Direct Preference Optimization with Dynamic Beta", "", ["betadpo"]),
        ("β-DPO: Direct Preference Optimization with Dynamic β", "", ["βdpo"]),
        (
            "Smaug: Fixing Failure Modes of Preference Optimisation with DPO-Positive",
            "",
            ["dpopositive"],
        ),
        ("GPT-4 Technical Report", "", ["gpt4"]),
        ("DPO Meets PPO: Reinforced Token Optimization for RLHF", "", ["dpo", "ppo", "rlhf"]),
        # A title in capitals names no acronym (ICLR 2021 has such titles).
        ("ARELU: ATTENTION-BASED RECTIFIED LINEAR UNIT", "", []),
        ("DEBERTA: DECODING-ENHANCED BERT WITH DISENTANGLED ATTENTION", "", []),
        ("FAST GRAPH ATTENTION NETWORKS USING EFFECTIVE RESISTANCE BASED GRAPH", "", []),
        # A title that is only a name in capitals names it.
        ("SAM 2", "", ["sam"]),
        ("DPO", "", ["dpo"]),
        (
            "ATTENTION IS ALL YOU NEED",
            "We propose Scaled Attention (SA), a layer.",
            ["sa", "scaledattention"],
        ),
    ],
)
def test_own_acronyms(title: str, abstract: str, own: list[str]) -> None:
    assert text_index.own_acronyms(title, abstract) == own


def test_author_text_holds_names_run_together_and_initials_apart() -> None:
    names = ["Sergey Levine", "Jonathan J Hunt", "Zoë", " ", "Kai An"]
    assert text_index.author_text(names).split() == [
        "sergey", "levine", "sergeylevine",
        "jonathan", "j", "hunt", "jonathanjhunt",
        "zoe",
        "kai", "an", "kaian",
    ]  # fmt: skip
    # Initial + surname in a field of its own: "kan" is no word a plain `find kan` hits.
    assert text_index.author_initials(names).split() == ["slevine", "jhunt", "kan"]


def test_a_merge_that_brings_authors_reindexes_the_paper(file_db: Store) -> None:
    """A later record of a stored paper fills in its authors; the index must see them."""
    row = file_db.execute("select id, abstract from papers where title like 'KTO%'").fetchone()
    with file_db.conn:
        file_db.execute("update papers set authors = '[]' where id = ?", [row[0]])
    text_index.rebuild(file_db)
    assert search_papers(file_db, "Kiela", 5) == []
    path = db_path(file_db).parent / "again.jsonl"
    record = {"abstract": row[1], "authors": ["Douwe Kiela"]}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ingest_files(file_db, [path], now=NOW)
    assert [hit.paper["id"] for hit in search_papers(file_db, "Kiela", 5)] == [row[0]]
