"""Guards of the chunked ingest (issue 11) that no test covered: removing each passed
every ingest test (mutation runs of the ingest review)."""

from __future__ import annotations

import json
import queue
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.papers import count_papers
from digests.ingest import IngestError, bulk, ingest_files
from digests.ingest.errors import FileChanged
from tests.conftest import NOW


def ten_papers(tmp_path: Path) -> Path:
    lines = [
        json.dumps({"id": f"2508.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(10)
    ]
    path = tmp_path / "ten.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_file_the_worker_read_differently_from_the_check_is_refused() -> None:
    """The worker's read is compared with the check pass's when it ends: what was checked
    (secrets, format) must be what is stored."""

    class Alive:
        exitcode = None

        def is_alive(self) -> bool:
            return True

    workers = bulk.Workers.__new__(bulk.Workers)
    messages: queue.Queue[Any] = queue.Queue()
    messages.put(("end", {"papers.jsonl": "hash of what the worker read"}))
    workers.queues = [messages]  # type: ignore[list-item]
    workers.processes = [Alive()]  # type: ignore[list-item]
    with pytest.raises(FileChanged):
        list(workers.batches({"papers.jsonl": "hash of what the check pass read"}))


def test_a_worker_failing_after_its_first_batch_stops_the_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enriching in this process instead is only for workers that sent nothing: after a
    batch, starting over would hand the writer those papers twice (done > total)."""
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)
    monkeypatch.setattr(bulk, "WORKER_MIN_PAPERS", 1)
    monkeypatch.setattr(bulk, "MIN_PAPER_BYTES", 1)

    class DiesAfterTwoBatches:
        def __init__(self, db_path: str, paths: Any, *args: Any) -> None:
            self.db, self.paths, self.args = open_db(Path(db_path)), paths, args

        def batches(self, versions: dict[str, str]) -> Any:
            fmt, venue, limits, now, _ = self.args
            own: dict[str, str] = {}
            for number, batch in enumerate(
                bulk.prepared_items(self.db, self.paths, fmt, venue, limits, own, now)
            ):
                if number == 2:
                    raise bulk.WorkerFailed("an enrichment worker stopped (exit code -9)")
                yield batch

        def stop(self) -> None:
            self.db.close()

    monkeypatch.setattr(bulk, "Workers", DiesAfterTwoBatches)
    path = ten_papers(tmp_path)
    db = open_db(tmp_path / "p.db")
    with pytest.raises(IngestError, match="stopped there: 3 of 10 papers"):
        ingest_files(db, [path], now=NOW)
    assert count_papers(db) == 3


def test_papers_stored_before_titles_were_keyed_are_keyed_before_the_first_chunk(
    tmp_path: Path,
) -> None:
    """A store from before title keys: its papers get keys in the first chunk's
    transaction, so a new version of a paper (same title and authors, edited abstract)
    merges into it instead of being stored as a second paper."""
    db = open_db(tmp_path / "p.db")
    old = tmp_path / "old.jsonl"
    paper = {
        "title": "Sparse Reward Shaping for Offline Robot Grasping",
        "abstract": "We shape sparse rewards for offline grasping and beat the baselines.",
        "authors": ["Ann Writer", "Bo Common"],
    }
    old.write_text(json.dumps(paper) + "\n", encoding="utf-8")
    ingest_files(db, [old], now=NOW)
    db.execute("update papers set title_key = null")  # as stored before the keys
    db.conn.commit()
    new = tmp_path / "new.jsonl"
    edited = paper | {"abstract": paper["abstract"] + " Code is released."}
    new.write_text(json.dumps(edited) + "\n", encoding="utf-8")
    summary = ingest_files(db, [new], now=NOW)
    assert (summary.added, summary.merged, count_papers(db)) == (0, 1, 1)
