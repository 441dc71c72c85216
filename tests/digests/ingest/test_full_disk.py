"""A disk that fills or fails during an ingest, for real: SQLite's `max_page_count` on
the ingest's connection makes a write fail with "database or disk is full" as a full disk
does; a file size limit (RLIMIT_FSIZE, in a child process) makes the commit itself fail
when it writes the write-ahead log, as a disk does that fills or fails just then (the
kernel refuses the write: SQLite says "disk I/O error"). Neither fills this machine's
disk. The message says what failed and what was stored, the status says the ingest
stopped part-way, and a run with room finishes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.errors import Busy, StorageError
from db.papers import count_papers, last_ingest
from digests.ingest import bulk, ingest_files
from tests.conftest import NOW, ROOT

PAPERS = 120
CHUNK = 50  # papers: more than the room left in the pages already there


def papers_file(path: Path, count: int = PAPERS) -> Path:
    lines = [
        json.dumps(
            {
                "id": f"2508.{n:05d}",
                "abstract": f"We study problem{n} with method{n} and word{n * 7}. " * 3,
            }
        )
        for n in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return papers_file(tmp_path / "papers.jsonl")


def no_room(db: Any) -> None:
    """The database may not grow by one page from now on (this connection)."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")


def packed(path: Path) -> Any:
    """The database at `path`, migrated and without free pages (a write needs new ones)."""
    db = open_db(path)
    db.execute("VACUUM")
    return db


FULL = "database or disk is full"
AGAIN = "run the same ingest again to finish (stored papers are skipped)"


def test_a_disk_full_in_the_first_chunk_says_so_and_the_status_says_stopped(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", CHUNK)
    db_path = tmp_path / "p.db"
    db = packed(db_path)
    no_room(db)
    with pytest.raises(StorageError) as caught:
        ingest_files(db, [source], now=NOW)
    assert str(caught.value) == (
        f"{FULL}; stopped there: 0 of 120 papers before it were stored "
        f"(0 added, 0 merged, 0 skipped); {AGAIN}"
    )
    assert count_papers(db) == 0
    row = last_ingest(db)
    assert row is not None and (row["status"], row["done"], row["total"]) == ("stopped", 0, PAPERS)
    assert row["error"] == f"StorageError: {FULL}"
    status = run("status", "--db", str(db_path)).output
    assert (
        "The last ingest (papers.jsonl, 2026-11-30 09:00 UTC) stopped part-way: 0 of 120 papers "
        f"done (0 added, 0 merged, 0 skipped); {AGAIN}." in status
    )
    assert ingest_files(open_db(db_path), [source], now=NOW).added == PAPERS  # room again
    assert "stopped part-way" not in run("status", "--db", str(db_path)).output


CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
from bot.cli import main
sys.argv = ["paperboy", "ingest", sys.argv[2], "--db", sys.argv[3]]
main()
"""


def test_a_commit_that_fails_on_the_disk_says_so_through_the_cli(tmp_path: Path, run: Any) -> None:
    """The commit of the first chunk writes the write-ahead log, which cannot grow past
    the limit: SQLite rolls the chunk back, the `ingests` row with it (so the stop must
    not be recorded on a row that is gone, the CLI saying only "unexpected failure
    (NotFoundError: )")."""
    db_path = tmp_path / "p.db"
    open_db(db_path).conn.close()  # migrated, its log checkpointed and gone
    source = papers_file(tmp_path / "many.jsonl", 400)  # one chunk, about 400 KB of log
    # Past the database file (written only by checkpoints), short of the chunk's log.
    limit = db_path.stat().st_size + 100_000
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PAPERBOY_DB", None)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), str(source), str(db_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 2, child.stderr
    assert child.stderr.strip().splitlines()[-1] == (
        "error: database problem: disk I/O error; stopped there: 0 of 400 papers before it were "
        f"stored (0 added, 0 merged, 0 skipped); {AGAIN}"
    )
    db = open_db(db_path)
    assert count_papers(db) == 0
    assert "stopped part-way: 0 of 400 papers done" in run("status", "--db", str(db_path)).output
    assert ingest_files(db, [source], now=NOW).added == 400


def full_after(items: int, db: Any) -> Any:
    """A progress wrapper: the disk fills once `items` papers went by (their chunk is
    committed when the next one comes)."""

    def progress(papers: Iterable[Any]) -> Iterator[Any]:
        for number, paper in enumerate(papers):
            if number == items + 1:
                no_room(db)
            yield paper

    return progress


def test_a_disk_full_after_a_chunk_keeps_it_and_the_status_says_stopped(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", CHUNK)
    db_path = tmp_path / "p.db"
    db = packed(db_path)
    with pytest.raises(StorageError) as caught:
        ingest_files(db, [source], now=NOW, progress=full_after(CHUNK, db))
    assert str(caught.value) == (
        f"{FULL}; stopped there: 50 of 120 papers before it were stored "
        f"(50 added, 0 merged, 0 skipped); {AGAIN}"
    )
    assert count_papers(db) == CHUNK
    assert "stopped part-way: 50 of 120 papers done" in run("status", "--db", str(db_path)).output


def test_a_stop_that_cannot_be_written_in_full_is_still_said(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    """The stop with its error is a bigger row than the one stored: on a full disk it may
    need a page there is no room for. Its status alone is written then, in place."""
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", CHUNK)
    db_path = tmp_path / "p.db"
    db = packed(db_path)
    real_update = bulk.papers.update_ingest

    def no_room_for_the_error(db: Any, ingest_id: int, changes: Any) -> None:
        if "error" in changes:
            raise StorageError("database or disk is full")
        real_update(db, ingest_id, changes)

    monkeypatch.setattr(bulk.papers, "update_ingest", no_room_for_the_error)
    with pytest.raises(StorageError):
        ingest_files(db, [source], now=NOW, progress=full_after(CHUNK, db))
    row = last_ingest(db)
    assert row is not None and (row["status"], row["done"]) == ("stopped", CHUNK)
    assert "stopped part-way: 50 of 120 papers done" in run("status", "--db", str(db_path)).output


def test_the_inbox_says_the_disk_is_full_not_busy_and_retries(tmp_path: Path, source: Path) -> None:
    from bot.inbox import ingest_inbox

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    source.rename(inbox / source.name)
    db_path = tmp_path / "p.db"
    db = packed(db_path)
    no_room(db)
    result = ingest_inbox(db, inbox, NOW)
    assert result.failed == [
        f"papers.jsonl: {FULL}; stopped there: 0 of 120 papers before it were stored "
        f"(0 added, 0 merged, 0 skipped); {AGAIN}; will retry next run"
    ]
    assert ingest_inbox(open_db(db_path), inbox, NOW).loaded == ["papers.jsonl"]  # room again


def test_a_busy_database_in_the_first_chunk_records_no_stop(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Busy is not a stop to report in the status (the inbox retries the file next run),
    and recording it would wait for the busy lock a second time."""

    def locked(*args: Any) -> None:
        raise Busy("database is locked")

    monkeypatch.setattr(bulk, "store_chunk", locked)
    db = open_db(tmp_path / "p.db")
    with pytest.raises(Busy, match=r"^database is locked; stopped there: 0 of"):
        ingest_files(db, [source], now=NOW)
    assert last_ingest(db) is None
