"""A user who may only read the store (and its index folder) gets the right papers, no
traceback, no warning, and leaves no file behind."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from db import open_db, text_index
from db.connection import open_read_only
from db.search import search_papers
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.search_store import SEEDS, db_path, forget

ROOT = os.geteuid() == 0  # chmod does not stop root


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[Path]:
    """A store file with its index built and its write-ahead log folded in, closed."""
    folder = tmp_path / "store"
    folder.mkdir()
    db = open_db(folder / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    assert search_papers(db, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = db_path(db)
    db.close()
    forget(db)
    yield path
    text_index._open.clear()


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def make_read_only(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def make_writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.mark.skipif(ROOT, reason="chmod does not stop root")
def test_a_read_only_store_and_index_answer_without_a_trace(
    indexed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = indexed.parent
    make_read_only(folder)
    try:
        before = listing(folder)
        with caplog.at_level(logging.WARNING):
            for opener in (open_read_only, lambda p: open_db(p, create=False)):
                reader: Store = opener(indexed)  # open_db: no WAL on a read-only folder
                assert not text_index.may_write(reader)
                for _ in range(2):
                    assert search_papers(reader, "LoMAP", 1)[0].paper["method"] == "LoMAP"
                    assert search_papers(reader, "graph neural networks", 3)
                reader.close()
                text_index._open.clear()
        assert listing(folder) == before
        assert not [r for r in caplog.records if r.name.startswith("db.")]
    finally:
        make_writable(folder)


def test_an_index_folder_this_user_may_not_read_is_no_failure(
    indexed: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's index folder (tantivy writes meta.json owner-only, and the folder
    may be 0700): the reader answers from FTS5, with no warning and no failure pause.
    Simulated, so that it also runs as root."""
    folder = text_index.index_folder(indexed)
    real = Path.is_file

    def is_file(path: Path) -> bool:
        if path.parent == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(Path, "is_file", is_file)
    text_index._failures.clear()
    reader = open_read_only(indexed)
    assert not text_index.may_write(reader)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert search_papers(reader, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    assert not [r for r in caplog.records if r.name.startswith("db.")]
    assert not text_index._failures


def test_an_index_this_user_may_not_lock_is_no_failure(
    indexed: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tantivy takes a lock file even to read: a reader who may not write it gets FTS5."""

    def refused(folder: Path | None) -> object:
        raise ValueError("Failed to acquire Lockfile: Permission denied")

    monkeypatch.setattr(text_index, "_new_index", refused)
    text_index._failures.clear()
    reader = open_read_only(indexed)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert search_papers(reader, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    assert not [r for r in caplog.records if r.name.startswith("db.")]
    assert not text_index._failures
