"""Hostile review of the search index (issue 11): corrupt files, failures while searching,
permissions, crashes of a real process part-way through a sync."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlite_utils import Database

from db import open_db, search, text_index
from db.search import search_papers
from digests.ingest import ingest_files
from tests.conftest import NOW, SAMPLES

SEEDS = [SAMPLES / "icml2025.txt"]


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Database]:
    text_index._open.clear()
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    yield db
    text_index._open.clear()


def folder_of(db: Database) -> Path:
    file = text_index.database_file(db)
    assert file is not None
    return text_index.index_folder(file)


def add_paper(db: Database, pid: str, title: str, abstract: str = "Plain words here.") -> None:
    with db.conn:
        db.execute(
            "insert into papers (id, title, abstract, abstract_text, added_at) "
            "values (?, ?, ?, ?, '2026-01-01')",
            [pid, title, abstract, abstract],
        )


def test_a_corrupt_index_is_made_again_not_left_to_fts5_for_ever(
    file_db: Database, tmp_path: Path
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
    file_db: Database, monkeypatch: pytest.MonkeyPatch
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
    file_db: Database, tmp_path: Path
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
