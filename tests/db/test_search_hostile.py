"""The search index under attack: corrupt files, failures while searching,
permissions, crashes of a real process part-way through a sync."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import open_db, search, text_index
from db.search import search_papers
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW, SAMPLES

SEEDS = [SAMPLES / "icml2025.txt"]


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Store]:
    text_index._open.clear()
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    yield db
    text_index._open.clear()


def folder_of(db: Store) -> Path:
    file = text_index.database_file(db)
    assert file is not None
    return text_index.index_folder(file)


def add_paper(db: Store, pid: str, title: str, abstract: str = "Plain words here.") -> None:
    with db.conn:
        db.execute(
            "insert into papers (id, title, abstract, abstract_text, added_at) "
            "values (?, ?, ?, ?, '2026-01-01')",
            [pid, title, abstract, abstract],
        )


def test_a_corrupt_index_is_made_again_not_left_to_fts5_for_ever(
    file_db: Store, tmp_path: Path
) -> None:
    search_papers(file_db, "learning", 1)
    (folder_of(file_db) / "meta.json").write_text("garbage{")  # tantivy's own metadata
    text_index._open.clear()  # a new process
    add_paper(file_db, "z1", "Zebu milk yields")
    handle = text_index.ready(file_db)  # raised IndexUnavailable: FTS5 for every lookup
    assert (
        handle.searcher().num_docs == file_db.execute("select count(*) from papers").fetchone()[0]
    )
    assert [h.paper["id"] for h in search_papers(file_db, "zebu", 3)] == ["z1"]


def test_an_index_failing_while_searching_answers_from_fts5_and_is_reopened(
    file_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    search_papers(file_db, "learning", 1)

    def broken(*args: object) -> object:
        raise ValueError("Failed to open file for read: corrupted")

    monkeypatch.setattr(search, "_collect", broken)
    hits = search_papers(file_db, "LoMAP", 1)  # raised to the user before
    assert hits[0].paper["method"] == "LoMAP"
    assert text_index.database_file(file_db) is not None
    assert not text_index._open  # the failed handle is dropped: opened afresh next time


def test_a_restored_backup_written_past_the_watermark_gets_its_index_rebuilt(
    file_db: Store, tmp_path: Path
) -> None:
    """The watermark alone missed it: the restored store's log had gone past the index's
    watermark by the first lookup, so only its newest changes were applied, and the
    paper deleted after the backup stayed unfindable in the restored store for ever."""
    from bench.corpus import copy_db

    path = tmp_path / "p.db"
    search_papers(file_db, "learning", 1)
    backup = copy_db(path, tmp_path / "backup.db")
    lomap = search_papers(file_db, "LoMAP", 1)[0].paper["id"]
    with file_db.conn:
        file_db.execute("delete from paper_aliases where paper_id = ?", [lomap])
        file_db.execute("delete from papers where id = ?", [lomap])
    add_paper(file_db, "g1", "Gecko feet")
    assert search_papers(file_db, "gecko", 1)  # the index is at the old store's watermark
    text_index.trim(file_db)
    file_db.close()
    text_index._open.clear()
    copy_db(backup, path)  # restored; then written to, past the old watermark
    restored = open_db(path)
    for i in range(5):
        add_paper(restored, f"w{i}", f"Wallaby hops {i}")
    assert search_papers(restored, "LoMAP", 1)[0].paper["id"] == lomap
    assert search_papers(restored, "gecko", 1) == []
    count = restored.execute("select count(*) from papers").fetchone()[0]
    assert text_index.ready(restored).searcher().num_docs == count


def write_jsonl(path: Path, *records: dict[str, object]) -> Path:
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def same_as_fts5(db: Store, *queries: str) -> None:
    for query in queries:
        index = [h.paper["id"] for h in search_papers(db, query, 20)]
        fts = [h.paper["id"] for h in search._search_fts(db, query, 20)]
        assert sorted(index) == sorted(fts), query


def test_a_merged_paper_is_found_by_its_new_text_only(file_db: Store) -> None:
    """arXiv v2 replaces v1's title and abstract: the index drops v1's words."""
    from tests.fakes.fetched import arxiv_paper, store

    title = "Ocelot spots counted with camera traps"
    v1 = "We count ocelot spots with camera traps across the forest floor. " * 2
    v2 = "We measure serval ears with drones over the open savanna, not spots. " * 2
    assert store(file_db, arxiv_paper(1, v1, title=title)) == (1, 0)
    assert len(search_papers(file_db, "ocelot", 5)) == 1
    new_title = "Serval ears measured with drones"
    assert store(file_db, arxiv_paper(2, v2, title=new_title)) == (0, 1)
    rows = file_db.execute("select title, abstract_text from papers where title like 'Serval%'")
    assert len(rows.fetchall()) == 1
    assert [h.paper["title"] for h in search_papers(file_db, "drones", 5)] == [new_title]
    assert search_papers(file_db, "ocelot camera", 5) == []
    same_as_fts5(file_db, "ocelot", "serval", "camera traps", "drones savanna", "spots serval")


@pytest.fixture(scope="module")
def seeded() -> Store:
    db = open_db(":memory:")
    ingest_files(db, [SAMPLES / "icml2025.txt", SAMPLES / "iclr2025.txt"], now=NOW)
    return db


ODD = [
    'title:"graph',
    "abstract:x AND NOT y",
    "OR OR AND NOT",
    "* ? ~ ^2 +a -b",
    "(((",
    "id:p1 keys:lomap",
    "café naïve Ωmega 学习 表示",
    "🙂🚀 emoji only",
    "ＬｏＭＡＰ",  # full-width: NFKC makes it LoMAP
    "x" * 5000,
    " ".join(f"w{i}" for i in range(2000)),
    "a\x00b\u202ec",
]


@pytest.mark.parametrize("query", ODD)
def test_odd_text_on_both_engines(seeded: Store, query: str) -> None:
    """The index path (as search_papers runs it here) and the FTS5 fallback both answer
    odd text; no query language reaches either. FTS5 stems (Porter) and the index does
    not, so the index's matches are among FTS5's, not always all of them."""
    text_index.ready(seeded)
    index = {h.paper["id"] for h in search_papers(seeded, query, 50)}
    fts = {h.paper["id"] for h in search._search_fts(seeded, query, 50)}
    assert index <= fts


def test_full_width_method_name_on_the_index(seeded: Store) -> None:
    assert search_papers(seeded, "ＬｏＭＡＰ", 1)[0].paper["method"] == "LoMAP"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.text(), st.text(alphabet="\"*:-^(){}[]+,.ANDORTE \\'")))
def test_any_text_is_a_safe_query_on_the_fts5_fallback(seeded: Store, query: str) -> None:
    """test_search.py's property test runs the index path; this one the fallback."""
    assert len(search._search_fts(seeded, query, 3)) <= 3


def test_a_read_only_open_may_not_write_the_index_for_real(file_db: Store) -> None:
    """No monkeypatch: the connection `paperboy find` opens for a reader (open_read_only)
    neither builds nor updates the index, and answers from FTS5."""
    from db.connection import open_read_only

    path = text_index.database_file(file_db)
    assert path is not None
    file_db.close()
    reader = open_read_only(path)
    assert not text_index.may_write(reader)
    assert search_papers(reader, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    assert not text_index.index_folder(path).exists()


def test_a_full_disk_does_not_make_every_lookup_pay_a_failing_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    text_index._open.clear()
    text_index._failures.clear()
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    attempts = []

    def full(row: dict[str, object]) -> object:
        attempts.append(1)
        raise OSError(errno.ENOSPC, "No space left on device")

    real = text_index._document
    monkeypatch.setattr(text_index, "_document", full)
    clock = [1000.0]
    monkeypatch.setattr(text_index, "_clock", lambda: clock[0])
    for _ in range(5):  # each answered from FTS5
        assert search_papers(db, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    assert len(attempts) == 2  # once, once more at once (a folder removed), then a pause
    clock[0] += text_index.FAILURE_PAUSE_S + 1
    search_papers(db, "LoMAP", 1)
    assert len(attempts) == 3
    search_papers(db, "LoMAP", 1)
    assert len(attempts) == 3  # the pause doubled
    monkeypatch.setattr(text_index, "_document", real)  # space again
    clock[0] += text_index.FAILURE_PAUSE_MAX_S + 1
    assert search_papers(db, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    assert not text_index._failures
    assert text_index._disk_seq(text_index.ready(db), db) == text_index._last_seq(db)
    text_index._open.clear()
