"""Recorded digests (one per channel and ISO week) and their items."""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlite_utils import Database

from db.transactions import write_transaction

log = logging.getLogger(__name__)

Row = dict[str, Any]


def get_digest(db: Database, channel: str, week: str) -> Row | None:
    """The digest recorded for a channel and week, with its `items` in rank order."""
    rows = list(db.query("select * from digests where channel = ? and week = ?", [channel, week]))
    if not rows:
        return None
    return _with_items(db, rows[0])


def _with_items(db: Database, digest: Row) -> Row:
    digest = dict(digest)
    digest["topics"] = json.loads(digest["topics"])
    digest["items"] = [
        {**item, "topics": json.loads(item["topics"])}
        for item in db.query(
            "select * from digest_items where digest_id = ? order by rank", [digest["id"]]
        )
    ]
    return digest


def insert_digest(
    db: Database, channel: str, week: str, built_at: str, topics: list[str], items: list[Row]
) -> Row:
    """Record a digest and its items in one transaction; returns it as `get_digest` would."""
    with write_transaction(db):
        db.table("digests").insert(
            {
                "channel": channel,
                "week": week,
                "built_at": built_at,
                "topics": json.dumps(topics),
                "empty": 0 if items else 1,
            }
        )
        digest_id = db.execute("select last_insert_rowid()").fetchone()[0]
        db.table("digest_items").insert_all(
            {
                "digest_id": digest_id,
                "channel": channel,
                "paper_id": item["paper_id"],
                "rank": rank,
                "topics": json.dumps(item["topics"]),
                "score": item["score"],
            }
            for rank, item in enumerate(items, start=1)
        )
    found = get_digest(db, channel, week)
    assert found is not None
    return found


def last_digest(db: Database, channel: str) -> Row | None:
    rows = list(
        db.query(
            "select * from digests where channel = ? order by built_at desc, id desc limit 1",
            [channel],
        )
    )
    return _with_items(db, rows[0]) if rows else None
