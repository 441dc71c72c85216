"""Ctrl-C during `paperboy ingest` (issue 11): one line saying what the committed chunks
stored, that the file was not finished, and that the same command finishes it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.papers import count_papers, last_ingest
from digests.ingest import bulk
from tests.test_ingest_chunks import papers_file


def interrupt_after(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Ctrl-C (KeyboardInterrupt) once `count` papers were read, in the second pass."""
    import bot.cli

    def progress(records: Iterable[Any]) -> Iterator[Any]:
        for number, record in enumerate(records):
            if number == count:
                raise KeyboardInterrupt
            yield record

    monkeypatch.setattr(bot.cli, "_progress", progress)


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
