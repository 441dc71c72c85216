"""Files caught half-written: the inbox leaves alone a file modified just before the run,
and neither the inbox nor `paperboy ingest` stores a chunk of a file whose size or time
changed since it was found (scanned) or read: a cut-off last paper ("We propose Net30, a
model for t") would otherwise stay stored for good, beside the whole one read later."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import bot.inbox as inbox_module
from bot.inbox import SETTLE_SECONDS, ingest_inbox
from db import open_db
from db.papers import count_papers
from digests.ingest import bulk

WHOLE = "We propose Net30, a model for tabular data that beats boosted trees on 30 suites."
CUT = WHOLE[:31]  # "We propose Net30, a model for t"


def abstracts(db: Any) -> list[str]:
    return sorted(str(row["abstract"]) for row in db.query("select abstract from papers"))


def write(path: Path, text: str, at: datetime) -> Path:
    """`text` in `path`, modified at `at`."""
    path.write_text(text, encoding="utf-8")
    stamp = int(at.timestamp() * 1e9)
    os.utime(path, ns=(stamp, stamp))
    return path


T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(seconds=SETTLE_SECONDS + 1)
FIRST = "We propose GraspAll, a method for grasping anything with one hand.\n\n"


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    return folder


@pytest.fixture
def db(tmp_path: Path) -> Any:
    return open_db(tmp_path / "p.db")


def test_a_file_modified_just_before_the_run_is_left_for_the_next(inbox: Path, db: Any) -> None:
    write(inbox / "new.txt", FIRST + CUT, T0)
    result = ingest_inbox(db, inbox, T0 + timedelta(seconds=1))
    assert (result.loaded, result.failed, result.waiting) == ([], [], ["new.txt"])
    assert count_papers(db) == 0
    assert list(db.query("select * from inbox_files")) == []  # not claimed, not recorded
    # The writer finishes; once it is quiet for the settle time, the whole file loads.
    write(inbox / "new.txt", FIRST + WHOLE + "\n", T0)
    assert ingest_inbox(db, inbox, LATER).loaded == ["new.txt"]
    assert CUT not in abstracts(db) and WHOLE in abstracts(db)


def test_a_file_modified_after_the_run_began_is_left_too(inbox: Path, db: Any) -> None:
    """The run's clock was read before the inbox (a digest waits for its sources first):
    a file written since then has a time after it."""
    write(inbox / "new.txt", FIRST, T0 + timedelta(seconds=90))
    assert ingest_inbox(db, inbox, T0).waiting == ["new.txt"]
    assert count_papers(db) == 0


def test_a_time_far_past_the_runs_clock_does_not_hold_a_file_back(inbox: Path, db: Any) -> None:
    """Another machine's clock, or an archive's times: a write now cannot be told from it,
    and waiting for that time would hold the file back for as long."""
    write(inbox / "new.txt", FIRST, T0 + timedelta(days=400))
    assert ingest_inbox(db, inbox, T0).loaded == ["new.txt"]


def test_the_settle_time_is_a_parameter(inbox: Path, db: Any) -> None:
    write(inbox / "new.txt", FIRST, T0)
    at = T0 + timedelta(seconds=1)
    assert ingest_inbox(db, inbox, at, settle_seconds=30).waiting == ["new.txt"]
    assert ingest_inbox(db, inbox, at, settle_seconds=0.5).loaded == ["new.txt"]


def growing(path: Path, tail: str) -> Any:
    """A progress wrapper that appends `tail` to `path` once the papers were all read
    (the second pass included), just before they are stored: what a writer still at
    work does, and neither pass can see."""

    def progress(items: Iterable[Any]) -> Iterator[Any]:
        yield from items
        with path.open("a", encoding="utf-8") as out:
            out.write(tail)

    return progress


def test_a_file_that_grows_before_the_commit_stores_nothing_and_is_retried(
    inbox: Path, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(inbox / "new.txt", FIRST + CUT, T0)
    monkeypatch.setattr(inbox_module, "_renewing", lambda db, path, now: growing(path, "x"))
    result = ingest_inbox(db, inbox, LATER)
    assert result.failed == ["new.txt: changed while it was being ingested; will retry"]
    assert count_papers(db) == 0
    monkeypatch.undo()
    write(path, FIRST + WHOLE + "\n", T0)  # complete, and quiet
    assert ingest_inbox(db, inbox, LATER).loaded == ["new.txt"]
    assert CUT not in abstracts(db) and WHOLE in abstracts(db)


def test_a_file_that_changes_between_the_scan_and_the_read_is_retried(
    inbox: Path, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version read must be the one the scan found (and records as loaded): another
    one, still being written, would be recorded under the scan's size and time."""
    path = write(inbox / "new.txt", FIRST + CUT, T0)
    real = inbox_module.ingest_files

    def written_on_meanwhile(db: Any, paths: Any, **kwargs: Any) -> Any:
        with path.open("a", encoding="utf-8") as out:
            out.write("ask")  # still cut off: "... a model for task"
        return real(db, paths, **kwargs)

    monkeypatch.setattr(inbox_module, "ingest_files", written_on_meanwhile)
    result = ingest_inbox(db, inbox, LATER)
    assert result.failed == ["new.txt: changed while it was being ingested; will retry"]
    assert count_papers(db) == 0


def test_a_chunk_is_not_stored_once_the_file_grew_and_the_next_run_finishes(
    inbox: Path, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    papers = "".join(f"We study problem {n} with method {n}.\n\n" for n in range(7))
    path = write(inbox / "big.txt", papers, T0)

    def grows_after_the_first_chunk(db: Any, path: Path, now: Any) -> Any:
        def progress(items: Iterable[Any]) -> Iterator[Any]:
            for number, item in enumerate(items):
                if number == 4:  # the first chunk is committed
                    with path.open("a", encoding="utf-8") as out:
                        out.write(CUT)
                yield item

        return progress

    with monkeypatch.context() as patch:
        patch.setattr(inbox_module, "_renewing", grows_after_the_first_chunk)
        result = ingest_inbox(db, inbox, LATER)
    assert result.failed == ["big.txt: changed while it was being ingested; will retry"]
    assert count_papers(db) == 3
    write(path, papers + WHOLE + "\n", T0)  # complete, and quiet
    assert ingest_inbox(db, inbox, LATER).loaded == ["big.txt"]
    assert count_papers(db) == 8
    assert CUT not in abstracts(db) and WHOLE in abstracts(db)


def test_the_cli_refuses_a_file_that_grows_while_it_is_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    import bot.cli.ingest as cli

    path = tmp_path / "new.txt"
    path.write_text(FIRST + CUT, encoding="utf-8")
    monkeypatch.setattr(cli, "progress", growing(path, "ask"))
    result = run("ingest", str(path), "--db", str(tmp_path / "p.db"))
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"error: {path}: changed while it was being ingested (is it still being written?); "
        "nothing was stored; try again once it is complete"
    )
    assert not (tmp_path / "p.db").exists()  # a new database that got nothing is removed
