"""Opening the database: created only when asked, read-only when it must be."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from db import open_db
from db.connection import DatabaseUnreadable, NoDatabase, open_read_only
from db.errors import StorageError
from db.search import search_papers
from digests.ingest import ingest_files
from tests.conftest import NOW


@pytest.fixture
def stored(tmp_path: Path, seed_paths: list[Path]) -> Path:
    path = tmp_path / "p.db"
    db = open_db(path)
    ingest_files(db, seed_paths, now=NOW)
    db.close()
    return path


def test_a_missing_database_is_not_created_unless_asked(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such.db"
    with pytest.raises(NoDatabase, match="no database at"):
        open_db(missing, create=False)
    with pytest.raises(NoDatabase):
        open_read_only(missing)
    assert not (tmp_path / "no").exists()
    open_db(missing)
    assert missing.exists()


def test_read_only_open_reads_and_never_writes(stored: Path) -> None:
    db = open_read_only(stored)
    assert search_papers(db, "alphadpo", 1)[0].paper["method"] == "AlphaDPO"
    with pytest.raises(StorageError, match="readonly"):
        db.execute("delete from papers")
    db.close()
    assert open_db(stored).execute("select count(*) from papers").fetchone()[0] == 38


def test_read_only_open_of_an_old_schema_says_what_to_do(stored: Path) -> None:
    with sqlite3.connect(stored) as conn:
        conn.execute("delete from _sqlite_migrations where name = 'm002_channels_and_digests'")
    with pytest.raises(DatabaseUnreadable, match=r"needs an upgrade .*m002.*write access"):
        open_read_only(stored)


def _sidecars(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def test_read_only_open_creates_no_file_beside_the_database(stored: Path) -> None:
    # Opened plainly, SQLite creates p.db-wal and p.db-shm owned by the reader, with the
    # database file's mode: its owner can then no longer write them, and finds its own
    # database read-only. A lookup by another user must leave nothing behind.
    assert _sidecars(stored) == []
    db = open_read_only(stored)
    assert search_papers(db, "alphadpo", 1)[0].paper["method"] == "AlphaDPO"
    assert _sidecars(stored) == []
    db.close()
    assert _sidecars(stored) == []


def test_read_only_open_reads_through_a_running_writer_s_log(stored: Path) -> None:
    writer = open_db(stored)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("update papers set title = 'Changed in the log' where method = 'AlphaDPO'")
    writer.conn.commit()
    assert (stored.parent / "p.db-wal").stat().st_size > 0
    reader = open_read_only(stored)
    [row] = reader.query("select title from papers where method = 'AlphaDPO'")
    assert row["title"] == "Changed in the log"
    reader.close()
    writer.close()


def test_a_folder_is_not_a_database(tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    for create in (True, False):
        with pytest.raises(DatabaseUnreadable, match="is a folder, not a database file"):
            open_db(folder, create=create)
    with pytest.raises(DatabaseUnreadable, match="is a folder"):
        open_read_only(folder)
    for create in (True, False):  # SQLite said "disk I/O error"
        with pytest.raises(DatabaseUnreadable, match="/dev/null is a device, pipe or socket"):
            open_db("/dev/null", create=create)
