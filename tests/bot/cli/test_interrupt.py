"""Ctrl-C during `paperboy ingest`: one line saying what the committed chunks
stored, that the file was not finished, and that the same command finishes it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.papers import count_papers, last_ingest
from digests.ingest import bulk
from tests.fakes.ingest_files import papers_file


def interrupt_after(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Ctrl-C (KeyboardInterrupt) once `count` papers were read, in the second pass."""
    import bot.cli.ingest

    def progress(records: Iterable[Any]) -> Iterator[Any]:
        for number, record in enumerate(records):
            if number == count:
                raise KeyboardInterrupt
            yield record

    monkeypatch.setattr(bot.cli.ingest, "progress", progress)


def test_ctrl_c_during_a_chunked_ingest_says_what_was_stored_and_the_rerun_finishes(
    run,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)
    path = papers_file(tmp_path, count=10)
    db_path = str(tmp_path / "x.db")
    interrupt_after(monkeypatch, 7)  # two chunks of three committed, the seventh pending
    result = run("ingest", str(path), "--db", db_path)
    assert result.exit_code == 130
    lines = result.output.strip().splitlines()
    assert lines == [
        "interrupted: papers.jsonl not finished: 6 of 10 papers (6 added, 0 merged, "
        "0 skipped) stored; run the same command again to finish (stored papers are skipped)"
    ]
    db = open_db(Path(db_path))
    assert count_papers(db) == 6
    row = last_ingest(db)
    assert row is not None and row["status"] == "stopped"
    db.close()

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    again = run("ingest", str(path), "--db", db_path)
    assert again.exit_code == 0, again.output
    assert "4 added" in again.output and "6 skipped" in again.output
    db = open_db(Path(db_path))
    assert count_papers(db) == 10


def test_ctrl_c_before_the_first_chunk_says_nothing_was_stored_and_leaves_no_database(
    run,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = papers_file(tmp_path, count=10)  # one chunk: one transaction
    db_path = tmp_path / "x.db"
    interrupt_after(monkeypatch, 5)
    result = run("ingest", str(path), "--db", str(db_path))
    assert result.exit_code == 130
    assert result.output.strip() == (
        "interrupted: nothing was stored; run the same command again to finish "
        "(stored papers are skipped)"
    )
    assert not db_path.exists()


def test_a_second_ctrl_c_while_reporting_the_first_still_reports_and_cleans_up(
    run,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C pressed again while the first is being reported (impatient users press it
    twice) gave click's bare "Aborted!" (exit 1) and left the new empty database behind:
    the report and the clean-up now run with Ctrl-C ignored, and it is restored after."""
    import os
    import signal

    import bot.cli.ingest

    path = papers_file(tmp_path, count=10)
    db_path = tmp_path / "x.db"
    interrupt_after(monkeypatch, 5)
    real_note = bot.cli.ingest.interrupted_note

    def note_pressed_again(db: Any, before: int) -> str:
        os.kill(os.getpid(), signal.SIGINT)  # a real signal: Python's handler would raise
        for _ in range(1000):  # give the handler its chance to run
            pass
        return real_note(db, before)

    monkeypatch.setattr(bot.cli.ingest, "interrupted_note", note_pressed_again)
    handler = signal.getsignal(signal.SIGINT)
    result = run("ingest", str(path), "--db", str(db_path))
    assert result.exit_code == 130
    assert result.output.strip().startswith("interrupted: nothing was stored;")
    assert not db_path.exists()
    assert signal.getsignal(signal.SIGINT) is handler


def test_ctrl_c_never_removes_a_database_that_existed_before(
    run,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing stored by this run, but the database was there before, empty (made by an
    earlier command) or an empty file: it stays, as it was."""
    path = papers_file(tmp_path, count=10)
    empty = tmp_path / "empty.db"
    open_db(empty).close()
    zero = tmp_path / "zero.db"
    zero.write_bytes(b"")
    interrupt_after(monkeypatch, 5)
    for db_path in (empty, zero):
        result = run("ingest", str(path), "--db", str(db_path))
        assert result.exit_code == 130, result.output
        assert db_path.exists()
    db = open_db(empty)
    assert count_papers(db) == 0 and db.sqlite["_sqlite_migrations"].count > 0
    db.close()


def test_ctrl_c_never_removes_a_new_database_another_process_wrote_to(
    run,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The database is new, this run stored nothing, but another process committed a
    paper to the same path meanwhile (a `paperboy run` started on it): it is kept."""
    import sqlite3

    from db import fresh

    path = papers_file(tmp_path, count=10)
    db_path = tmp_path / "x.db"
    interrupt_after(monkeypatch, 5)
    real_discard = fresh.NewDatabase.discard

    def discard_after_another_write(self: fresh.NewDatabase, db: Any) -> None:
        other = sqlite3.connect(db_path, timeout=5)
        with other:
            other.execute("create table if not exists notes (text)")
            other.execute("insert into notes values ('kept')")
        other.close()
        real_discard(self, db)

    monkeypatch.setattr(fresh.NewDatabase, "discard", discard_after_another_write)
    result = run("ingest", str(path), "--db", str(db_path))
    assert result.exit_code == 130
    other = sqlite3.connect(db_path)
    assert other.execute("select text from notes").fetchall() == [("kept",)]
    other.close()
