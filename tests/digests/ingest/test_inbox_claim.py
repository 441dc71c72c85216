"""The inbox's claim on a file lasts as long as its ingest: a large file takes longer
than CLAIM_MINUTES, and a claim that ran out would let a second process ingest it at once.
A worker that died part-way leaves the file to be retried, not marked bad."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import inbox
from db import open_db
from db.papers import count_papers
from digests.ingest import bulk
from tests.conftest import NOW


def papers_file(folder: Path, count: int) -> Path:
    lines = [
        json.dumps({"id": f"2505.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(count)
    ]
    path = folder / "list.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_claim_is_renewed_while_a_long_ingest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    path = papers_file(folder, 10)
    db = open_db(tmp_path / "p.db")
    clock = iter(range(0, 100_000, 300))  # each look at the clock: 5 minutes later
    monkeypatch.setattr(inbox, "_monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    taken_over = []
    real = bulk.Writer.commit

    def commit(self: Any, *, last: bool) -> None:
        if last:  # the ingest has run ~40 minutes by the clock: another caller looks
            stat = path.stat()
            later = NOW + timedelta(minutes=45)
            taken_over.append(inbox._claim(db, path, stat.st_size, stat.st_mtime_ns, later))
        real(self, last=last)

    monkeypatch.setattr(bulk.Writer, "commit", commit)
    result = inbox.ingest_inbox(db, folder, NOW)
    assert result.loaded == ["list.jsonl"] and count_papers(db) == 10
    assert taken_over == [False]  # still ours: renewed while it ran


def test_a_worker_dying_part_way_leaves_the_file_to_be_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    papers_file(folder, 10)
    db = open_db(tmp_path / "p.db")
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)
    real = bulk.prepared_items

    def dies(*args: Any, **kwargs: Any) -> Any:
        for number, batch in enumerate(real(*args, **kwargs)):
            if number == 2:
                raise bulk.WorkerFailed("an enrichment worker stopped (exit code -9)")
            yield batch

    with monkeypatch.context() as patch:
        patch.setattr(bulk, "prepared_items", dies)
        result = inbox.ingest_inbox(db, folder, NOW)
    assert result.failed and "will retry next run" in result.failed[0]
    assert count_papers(db) == 3
    result = inbox.ingest_inbox(db, folder, NOW + timedelta(minutes=1))
    assert result.loaded == ["list.jsonl"] and count_papers(db) == 10
