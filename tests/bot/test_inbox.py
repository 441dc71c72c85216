"""The inbox under contention: one ingest per file version, no "database is locked".

Six channels firing together must not each re-ingest one inbox file, and title derivation
runs outside the write transaction, so other writers do not time out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.inbox import ingest_inbox
from db import open_db
from db.app_state import set_state
from db.papers import count_papers
from db.store import Store
from digests.enrich import paper as enrich_paper
from digests.ingest import ingest_files, pipeline
from tests.conftest import NOW

SHORT_BUSY_MS = 1500  # shorter than the default, so a held lock shows up as an error fast
# A crafted abstract like the one in the issue: 45 KB, one long "sentence" full of "e.g.".
CRAFTED = "We propose X e.g. " * 2500


def connect(path: Path) -> Store:
    db = open_db(path)
    db.execute(f"PRAGMA busy_timeout = {SHORT_BUSY_MS}")
    return db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "paperboy.db"
    open_db(path).conn.close()
    return path


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "crafted.tsv").write_text(
        "title\tabstract\n"
        f"Crafted\t{CRAFTED}\n"
        "Grasping\tWe introduce GraspAll, a method for grasping anything with one hand.\n",
        encoding="utf-8",
    )
    return folder


class Paused:
    """Pauses enrichment (`build_row`) of the first record until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        real = enrich_paper.build_row

        def paused(*args, **kwargs):  # type: ignore[no-untyped-def]
            if not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(30), "never released"
            return real(*args, **kwargs)

        monkeypatch.setattr(pipeline, "build_row", paused)


@pytest.fixture
def paused(monkeypatch: pytest.MonkeyPatch) -> Iterator[Paused]:
    pause = Paused(monkeypatch)
    yield pause
    pause.release.set()


def write_something(db: Store, value: str) -> None:
    """A short write, as a command or a digest build does."""
    with db.write():
        set_state(db, "probe", value, NOW.isoformat())


def in_thread(target, *args):  # type: ignore[no-untyped-def]
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = target(*args)
        except BaseException as exc:  # reported by the test, not lost in the thread
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_other_writers_go_ahead_while_a_file_is_enriched(
    db_path: Path, inbox: Path, paused: Paused
) -> None:
    thread, outcome = in_thread(
        lambda: ingest_files(connect(db_path), [inbox / "crafted.tsv"], now=NOW)
    )
    assert paused.entered.wait(30)
    write_something(connect(db_path), "written while the ingest was enriching")
    paused.release.set()
    thread.join(60)
    assert "error" not in outcome, outcome
    assert count_papers(connect(db_path)) == 2


def test_concurrent_inbox_runs_ingest_a_file_once_and_never_fail(
    db_path: Path, inbox: Path, paused: Paused
) -> None:
    first, outcome = in_thread(lambda: ingest_inbox(connect(db_path), inbox, NOW))
    assert paused.entered.wait(30)
    # Five more runs (the other channels of the issue) while the first is enriching.
    others = [ingest_inbox(connect(db_path), inbox, NOW) for _ in range(5)]
    write_something(connect(db_path), "a digest being recorded")
    paused.release.set()
    first.join(60)
    assert "error" not in outcome, outcome
    assert outcome["value"].loaded == ["crafted.tsv"]  # type: ignore[attr-defined]
    for result in others:
        assert (result.loaded, result.failed) == ([], [])
    db = connect(db_path)
    assert len(list(db.query("select * from ingests"))) == 1
    [row] = db.query("select status from inbox_files")
    assert row["status"] == "loaded"
    # A later run does nothing: this version is done.
    again = ingest_inbox(db, inbox, NOW)
    assert (again.loaded, again.failed) == ([], [])


def test_six_channels_and_writers_at_once_none_locked_out(db_path: Path, inbox: Path) -> None:
    """The issue's scenario, unpaused: six inbox runs and busy writers, all succeed."""
    results: list[object] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def channel() -> None:
        try:
            result = ingest_inbox(connect(db_path), inbox, NOW)
            write_something(connect(db_path), "digest")
            with lock:
                results.append(result)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    def writer() -> None:
        db = connect(db_path)
        try:
            for n in range(20):
                write_something(db, str(n))
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=channel) for _ in range(6)]
    threads += [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert all(not result.failed for result in results)  # type: ignore[attr-defined]
    assert sum(len(result.loaded) for result in results) == 1  # type: ignore[attr-defined]
    assert count_papers(connect(db_path)) == 2


def test_a_dead_claim_is_taken_over(db_path: Path, inbox: Path) -> None:
    db = connect(db_path)
    stat = (inbox / "crafted.tsv").stat()
    db.sqlite.table("inbox_files").insert(
        {
            "path": str(inbox / "crafted.tsv"),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "status": "ingesting",
            "detail": "no-such-host-crashed:1",
            "seen_at": "2020-01-01T00:00:00+00:00",
        }
    )
    assert ingest_inbox(db, inbox, NOW).loaded == ["crafted.tsv"]


def test_an_unexpected_failure_with_one_file_does_not_stop_the_others(
    db_path: Path, inbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose ingest raises something unexpected (a full disk under the spool, an
    I/O error, a bug) fails alone and is retried; the files after it still load. Raised
    out of the inbox, it would stop every run at that file, and no later file would ever
    be ingested."""
    import bot.inbox as inbox_module

    (inbox / "a-first.tsv").write_text(
        "title\tabstract\nFirst\tWe introduce FirstNet, a method for anything.\n", encoding="utf-8"
    )
    real = inbox_module.ingest_files

    def disk_full_for_the_first(db, paths, **kwargs):  # type: ignore[no-untyped-def]
        if paths[0].name == "a-first.tsv":
            raise OSError(28, "No space left on device")
        return real(db, paths, **kwargs)

    monkeypatch.setattr(inbox_module, "ingest_files", disk_full_for_the_first)
    db = connect(db_path)
    result = ingest_inbox(db, inbox, NOW)
    assert result.loaded == ["crafted.tsv"]
    assert result.failed == ["a-first.tsv: unexpected failure (OSError); will retry next run"]
    monkeypatch.setattr(inbox_module, "ingest_files", real)
    assert ingest_inbox(db, inbox, NOW).loaded == ["a-first.tsv"]  # the claim was released


def test_a_file_changed_while_ingested_is_retried_even_if_its_version_looks_the_same(
    db_path: Path, inbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file edited between the two ingest passes is refused, and retried next run, not
    recorded as a bad version: a same-size edit within the file system's time granularity
    leaves size and mtime as they were, and that version would never be read again."""
    import os

    import bot.inbox as inbox_module

    path = inbox / "crafted.tsv"
    before = path.stat()
    real = inbox_module.ingest_files

    def edit_between_passes(records):  # type: ignore[no-untyped-def]
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("GraspAll", "GraspAny"), encoding="utf-8")  # same size
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # a coarse clock
        return records

    monkeypatch.setattr(
        inbox_module,
        "ingest_files",
        # In place of the inbox's own progress (it renews the claim): not needed here.
        lambda db, paths, progress=None, **kwargs: real(
            db, paths, progress=edit_between_passes, **kwargs
        ),
    )
    db = connect(db_path)
    first = ingest_inbox(db, inbox, NOW)
    assert first.failed == ["crafted.tsv: changed while it was being ingested; will retry"]
    assert count_papers(db) == 0
    monkeypatch.setattr(inbox_module, "ingest_files", real)
    assert ingest_inbox(db, inbox, NOW).loaded == ["crafted.tsv"]
    assert count_papers(db) == 2


def test_files_still_being_downloaded_or_saved_are_left_alone(db_path: Path, inbox: Path) -> None:
    """A browser's `.part`/`.crdownload` (renamed when done) would be read with its last
    paper cut off, and that half stored as a paper of its own."""
    half = "title\tabstract\nHalf\tWe introduce HalfNet, a method for\n"
    for name in ("more.tsv.part", "more.tsv.crdownload", "more.tsv.tmp", "more.tsv~"):
        (inbox / name).write_text(half, encoding="utf-8")
    db = connect(db_path)
    result = ingest_inbox(db, inbox, NOW)
    assert (result.loaded, result.failed) == (["crafted.tsv"], [])
    assert count_papers(db) == 2
