"""`paperboy run` brings the search index up to date in the background at start, so the
first lookup after an upgrade does not build it inline; a failure logs one line and
lookups go on from FTS5."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import runner
from db import open_db, text_index
from db.search import search_papers
from digests.ingest import ingest_files
from tests.conftest import NOW


@pytest.fixture
def upgraded(tmp_path: Path, seed_paths: list[Path]) -> Iterator[Path]:
    """A store with papers and no search index yet (as after the upgrade that added it),
    and no index open in this process."""
    path = tmp_path / "p.db"
    db = open_db(path)
    ingest_files(db, seed_paths, now=NOW)  # the library call: no catch-up of the index
    db.close()
    assert not (text_index.index_folder(path) / text_index.META).exists()
    text_index._open.clear()
    yield path
    text_index._open.clear()
    text_index._failures.clear()


def search_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "search-index"]


def test_run_builds_the_index_in_the_background_and_a_lookup_meanwhile_uses_fts5(
    run,  # type: ignore[no-untyped-def]
    upgraded: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(text_index, "BUSY_WAIT_S", 0.1)
    go, building = threading.Event(), threading.Event()
    builds: list[str] = []
    real_rebuild = text_index.rebuild

    def slow_rebuild(db: Any, handle: Any = None) -> int:
        builds.append(threading.current_thread().name)
        building.set()
        assert go.wait(30)  # a long build: 10-25 s per 100k papers
        return real_rebuild(db, handle)

    monkeypatch.setattr(text_index, "rebuild", slow_rebuild)
    started: list[bool] = []

    async def platforms_and_scheduler(parts: Any) -> None:
        started.append(True)  # the parts start while the index is being built

    monkeypatch.setattr(runner, "run", platforms_and_scheduler)
    result = run("run", "--db", str(upgraded))
    assert result.exit_code == 0, result.output
    assert started == [True]
    assert building.wait(30)
    assert builds == ["search-index"] and not go.is_set()  # still building: run went on
    db = open_db(upgraded)
    try:
        # A lookup meanwhile does not start a second build: it answers from FTS5.
        hits = search_papers(db, "LoMAP", 3)
        assert hits and builds == ["search-index"]
        go.set()
        for thread in search_threads():
            thread.join(30)
        assert builds == ["search-index"]
        handle = text_index._handle(db, writable=True)
        assert text_index._disk_seq(handle, db) == text_index._last_seq(db)  # current
        assert search_papers(db, "LoMAP", 1)[0].paper["id"] == hits[0].paper["id"]
        assert builds == ["search-index"]  # the lookup found it built
    finally:
        go.set()
        db.close()


def test_a_failed_build_at_start_logs_one_line_and_lookups_use_fts5(
    upgraded: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full_disk(db: Any, handle: Any = None) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(text_index, "rebuild", full_disk)
    caplog.set_level(logging.INFO)
    runner.index_in_background(upgraded).join(30)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1, lines
    assert lines[0][0] == "WARNING" and "No space left on device" in lines[0][1]
    assert all(record.exc_info is None for record in caplog.records)
    db = open_db(upgraded)
    try:
        assert search_papers(db, "LoMAP", 1)  # FTS5
    finally:
        db.close()


def test_a_lookup_during_the_build_at_start_answers_from_fts5_without_waiting(
    upgraded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the background thread builds the index (minutes at 1M papers), a lookup of
    this process does not wait BUSY_WAIT_S (2 s) for the index's lock first, which would
    make every command during the build 2 s slower. A short catch-up is still waited for
    (`test_search_index`)."""
    go, building = threading.Event(), threading.Event()
    real_rebuild = text_index.rebuild

    def slow_rebuild(db: Any, handle: Any = None) -> int:
        building.set()
        assert go.wait(30)
        return real_rebuild(db, handle)

    monkeypatch.setattr(text_index, "rebuild", slow_rebuild)
    monkeypatch.setattr(text_index, "BUSY_WAIT_S", 0.2)
    thread = runner.index_in_background(upgraded)
    db = open_db(upgraded)
    try:
        assert building.wait(30)
        with pytest.raises(text_index.WriterBusy, match="building"):
            text_index.ready(db)  # before: waited, then "another thread is updating"
        assert search_papers(db, "LoMAP", 1)[0].paper["method"] == "LoMAP"  # FTS5
    finally:
        go.set()
        thread.join(30)
        db.close()
    db = open_db(upgraded)
    try:
        handle = text_index.ready(db)  # built, and not flagged any more
        assert not handle.long_update
    finally:
        db.close()
