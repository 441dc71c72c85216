"""A large ingest killed with SIGKILL part-way, or run twice at once: real
processes, a real worker; and the failures around the worker (dies, hangs, cannot start).

What a kill -9 leaves must say so (`paperboy status`), hold only whole chunks, and a
re-run must finish it with nothing duplicated and nothing lost: the store then equals
one ingest that was never interrupted. Also: the enrichment worker of a killed ingest
must not run on alone (it would enrich the whole file into its spool, gigabytes at 1M).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.errors import StorageError
from db.papers import count_papers, last_ingest
from digests.ingest import bulk, ingest_files
from tests.conftest import NOW

PAPERS = 6_000
CHILD = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from db import open_db
from digests.ingest import ingest_files
db = open_db(Path(sys.argv[1]))
ingest_files(db, [Path(sys.argv[2])], now=datetime(2026, 11, 30, 9, tzinfo=timezone.utc))
"""


def big_file(path: Path) -> Path:
    """PAPERS papers with distinct abstracts and titles, ~300 bytes each (enough for the
    worker process: `bulk.WORKER_MIN_PAPERS`)."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(PAPERS):
            paper = {
                "id": f"2502.{n:05d}",
                "title": f"Model{n} Learns Task {n} From Sparse Signals",
                "abstract": (
                    f"We propose Model{n}, a method for task {n} with sparse rewards. "
                    f"It beats the strongest baseline by {n % 97} points on {n % 13} suites."
                ),
                "authors": [f"Ann Writer{n}", "Bo Common"],
            }
            out.write(json.dumps(paper) + "\n")
    return path


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def snapshot(db: Any) -> tuple[list[Any], list[Any]]:
    rows = [dict(r) for r in db.query("select * from papers order by id")]
    aliases = [dict(r) for r in db.query("select * from paper_aliases order by alias")]
    return rows, aliases


def test_an_ingest_killed_after_a_chunk_is_said_and_a_rerun_finishes_it(
    tmp_path: Path, run: Any
) -> None:
    source = big_file(tmp_path / "big.jsonl")
    db_path = tmp_path / "killed.db"
    open_db(db_path).conn.close()  # migrated before the child starts
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db_path), str(source)], cwd=tmp_path, env=env
    )
    watcher = open_db(db_path)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and child.poll() is None:
            workers.update(children(child.pid))
            row = last_ingest(watcher)
            if row is not None and row["done"] >= 2_000:
                break
            time.sleep(0.02)
        assert child.poll() is None, "the ingest ended before it could be killed"
        workers.update(children(child.pid))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert workers, "the ingest started no worker process"

    # The worker notices that its ingest is gone and stops, instead of enriching on.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.1)
    orphans = [pid for pid in workers if alive(pid)]
    for pid in orphans:
        os.kill(pid, signal.SIGKILL)
    assert not orphans, "the enrichment worker ran on after its ingest was killed"
    assert not list(tmp_path.glob(".paperboy-ingest-*")), "a spool file was left behind"

    # Only whole chunks are stored, and the status says the ingest did not finish.
    db = open_db(db_path)
    row = last_ingest(db)
    assert row is not None and row["status"] == "running"
    assert 2_000 <= row["done"] < PAPERS and row["done"] % 2_000 == 0
    assert count_papers(db) == row["done"] == row["added"]
    status = run("status", "--db", str(db_path)).output
    assert f"has not finished: {row['done']} of 6000 papers done" in status
    assert "run the same ingest again to finish" in status

    # A re-run finishes it: the store equals one uninterrupted ingest of the file.
    summary = ingest_files(db, [source], now=NOW)
    assert (summary.added, summary.skipped) == (PAPERS - row["done"], row["done"])
    assert count_papers(db) == PAPERS
    assert "has not finished" not in run("status", "--db", str(db_path)).output
    whole = open_db(tmp_path / "whole.db")
    ingest_files(whole, [source], now=NOW)
    assert snapshot(db) == snapshot(whole)


class Outbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []

    def put(self, message: tuple[str, Any]) -> None:
        self.messages.append(message)


def test_a_worker_whose_ingest_was_killed_stops_enriching(tmp_path: Path, monkeypatch: Any) -> None:
    from digests.ingest.decode import Limits

    class Dead:
        def is_alive(self) -> bool:
            return False

    source = big_file(tmp_path / "big.jsonl")
    db_path = tmp_path / "w.db"
    open_db(db_path).conn.close()
    spool = tmp_path / "w.spool"
    spool.touch()
    monkeypatch.setattr(bulk.multiprocessing, "parent_process", Dead)
    out = Outbox()
    bulk._worker(out, str(spool), str(db_path), [source], None, None, Limits(), NOW, (0, 1))
    assert out.messages == []  # neither a batch nor "end": it stopped at once


def test_a_worker_that_hangs_is_given_up_on_not_waited_for_for_ever(monkeypatch: Any) -> None:

    class Hung:
        exitcode = None

        def is_alive(self) -> bool:
            return True  # alive, but sends nothing (stopped, swapping, stuck on a disk)

    workers = bulk.Workers.__new__(bulk.Workers)
    workers.queues = [queue.Queue()]  # type: ignore[list-item]
    workers.processes = [Hung()]  # type: ignore[list-item]
    monkeypatch.setattr(bulk, "WORKER_POLL_SECONDS", 0.01)
    monkeypatch.setattr(bulk, "WORKER_STALL_SECONDS", 0.1)
    with pytest.raises(bulk.WorkerFailed, match="sent nothing for"):
        next(workers.batches({}))


def test_a_worker_dying_after_a_chunk_is_one_line_saying_what_was_stored(
    tmp_path: Path, monkeypatch: Any, run: Any
) -> None:

    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)
    real = bulk.prepared_items

    def dies_after_two_batches(*args: Any, **kwargs: Any) -> Any:
        for number, batch in enumerate(real(*args, **kwargs)):
            if number == 2:
                raise bulk.WorkerFailed("an enrichment worker stopped (exit code -9)")
            yield batch

    monkeypatch.setattr(bulk, "prepared_items", dies_after_two_batches)
    lines = [
        json.dumps({"id": f"2503.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(10)
    ]
    source = tmp_path / "ten.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db_path = tmp_path / "p.db"
    result = run("ingest", str(source), "--db", str(db_path))
    assert result.exit_code != 0
    error = result.output.strip().splitlines()
    assert error == [
        f"error: {source}: an enrichment worker stopped (exit code -9); stopped there: 3 of "
        "10 papers before it were stored (3 added, 0 merged, 0 skipped); run the same "
        "ingest again to finish (stored papers are skipped)"
    ]
    row = last_ingest(open_db(db_path))
    assert row is not None and (row["status"], row["done"]) == ("stopped", 3)
    assert "stopped part-way: 3 of 10 papers done" in run("status", "--db", str(db_path)).output


def test_a_full_disk_after_a_chunk_says_what_was_stored_and_stays_a_database_error(
    tmp_path: Path, monkeypatch: Any, run: Any
) -> None:

    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)
    real = bulk.papers.insert_papers
    calls = []

    def fills_the_disk(db: Any, rows: Any) -> None:
        calls.append(len(rows))
        if len(calls) == 2:
            raise StorageError("database or disk is full")
        real(db, rows)

    monkeypatch.setattr(bulk.papers, "insert_papers", fills_the_disk)
    lines = [
        json.dumps({"id": f"2504.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(10)
    ]
    source = tmp_path / "ten.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = open_db(tmp_path / "p.db")
    # The inbox retries a file whose ingest failed on the database: the kind stays.
    with pytest.raises(StorageError) as caught:
        ingest_files(db, [source], now=NOW)
    assert str(caught.value) == (
        "database or disk is full; stopped there: 3 of 10 papers before it were stored "
        "(3 added, 0 merged, 0 skipped); run the same ingest again to finish (stored papers "
        "are skipped)"
    )
    assert count_papers(db) == 3


def test_a_half_stored_file_is_still_reported_after_other_files_are_ingested(
    tmp_path: Path, monkeypatch: Any, run: Any
) -> None:

    db_path = tmp_path / "p.db"
    db = open_db(db_path)
    lines = [
        json.dumps({"id": f"2506.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(10)
    ]
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with monkeypatch.context() as patch:
        patch.setattr(bulk, "CHUNK_PAPERS", 3)
        patch.setattr(bulk.Writer, "stopped", lambda self, error: None)  # killed: no word
        real = bulk.store_chunk

        def killed_in_the_second_chunk(db: Any, rows: Any, *args: Any) -> None:
            if rows[0][0]["abstract"].startswith("We study problem 3 "):
                raise KeyboardInterrupt  # stands for the kill: the chunk rolls back
            real(db, rows, *args)

        patch.setattr(bulk, "store_chunk", killed_in_the_second_chunk)
        with pytest.raises(KeyboardInterrupt):
            ingest_files(db, [big], now=NOW)
    small = tmp_path / "small.jsonl"
    small.write_text(json.dumps({"abstract": "A small list on tabular data."}) + "\n")
    ingest_files(db, [small], now=NOW)
    status = run("status", "--db", str(db_path)).output
    assert "An earlier ingest (big.jsonl, " in status
    assert "has not finished: 3 of 10 papers done" in status
    ingest_files(db, [big], now=NOW)  # finished: nothing more to say
    assert "ingest (big.jsonl" not in run("status", "--db", str(db_path)).output
    assert count_papers(db) == 11


def test_no_room_for_the_spool_or_no_worker_process_leaves_the_work_to_this_process(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A folder the spool cannot be made in (read-only, full, over quota), or a worker
    that cannot start (no processes left): the ingest enriches in this process, leaving
    no spool behind, instead of failing with "unexpected failure (PermissionError)"."""
    import multiprocessing.context

    lines = [
        json.dumps({"id": f"2507.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(10)
    ]
    source = tmp_path / "ten.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(bulk, "WORKER_MIN_PAPERS", 1)
    monkeypatch.setattr(bulk, "MIN_PAPER_BYTES", 1)

    def no_room(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    def no_process(self: Any) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    for name, patch in (("a", ("mkstemp", no_room)), ("b", ("start", no_process))):
        folder = tmp_path / name
        folder.mkdir()
        db = open_db(folder / "p.db")
        with monkeypatch.context() as patched:
            if patch[0] == "mkstemp":
                patched.setattr(bulk.tempfile, "mkstemp", patch[1])
            else:
                patched.setattr(multiprocessing.context.SpawnProcess, "start", patch[1])
            assert ingest_files(db, [source], now=NOW).added == 10
        assert count_papers(db) == 10
        assert not list(folder.glob(".paperboy-ingest-*")), name


def test_two_processes_ingesting_one_file_at_once_store_it_once(tmp_path: Path) -> None:
    """Both decide which papers are new, chunk by chunk, each inside its write
    transaction: no UNIQUE constraint error, nothing stored twice, nothing lost."""
    source = big_file(tmp_path / "big.jsonl")
    db_path = tmp_path / "both.db"
    open_db(db_path).conn.close()
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    ingests = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(db_path), str(source)],
            cwd=tmp_path,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    errors = [child.communicate(timeout=600)[1] for child in ingests]
    assert [child.returncode for child in ingests] == [0, 0], errors
    db = open_db(db_path)
    whole = open_db(tmp_path / "whole.db")
    ingest_files(whole, [source], now=NOW)
    assert snapshot(db) == snapshot(whole)
    runs = list(db.query("select status, added, merged, skipped from ingests"))
    assert [r["status"] for r in runs] == ["complete", "complete"]
    assert sum(r["added"] for r in runs) == PAPERS
