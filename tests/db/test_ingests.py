"""The `ingests` rows: the last id, the rows after one, a stop recorded in place."""

from __future__ import annotations

from db import open_db, papers

START = {"started_at": "2026-12-01T09:00:00+00:00", "files": ["a.csv"], "total": 10}


def test_the_ingests_after_an_id_latest_first() -> None:
    db = open_db()
    assert papers.last_ingest_id(db) == 0
    first = papers.start_ingest(db, START)
    before = papers.last_ingest_id(db)
    assert before == first
    second = papers.start_ingest(db, START | {"files": ["b.csv"]})
    third = papers.start_ingest(db, START | {"files": ["c.csv"]})
    assert [row["id"] for row in papers.ingests_after(db, before)] == [third, second]
    assert papers.ingests_after(db, third) == []
    assert papers.ingests_after(db, before)[0]["files"] == '["c.csv"]'  # as stored


def test_a_stop_sets_the_status_alone() -> None:
    db = open_db()
    ingest = papers.start_ingest(db, START | {"status": "running", "done": 4})
    papers.mark_ingest_stopped(db, ingest)
    (row,) = papers.ingests_after(db, 0)
    assert row["status"] == "stopped" and row["done"] == 4 and row["error"] is None
