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
    """Record a digest and its items in one transaction; returns it as `get_digest` would.

    If the channel's digest for that week was recorded meanwhile (another process, such as
    a second `paperboy run` on the same database, won the race), that one stands and is
    returned: losing the race is normal, not an error."""
    with write_transaction(db):
        if get_digest(db, channel, week) is not None:
            log.info(
                "digest %s %s: built meanwhile by another process; using that one", channel, week
            )
        else:
            _insert(db, channel, week, built_at, topics, items)
    found = get_digest(db, channel, week)
    assert found is not None
    return found


def _insert(
    db: Database, channel: str, week: str, built_at: str, topics: list[str], items: list[Row]
) -> None:
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


def last_digest(db: Database, channel: str) -> Row | None:
    rows = list(
        db.query(
            "select * from digests where channel = ? order by built_at desc, id desc limit 1",
            [channel],
        )
    )
    return _with_items(db, rows[0]) if rows else None


def record_failure(
    db: Database, channel: str, due_at: str, error: str, next_attempt_at: str, now: str
) -> int:
    """Record that building the channel's digest for `due_at` failed; returns the number
    of failed attempts so far (a failure for another moment starts again at 1)."""
    with write_transaction(db):
        rows = list(db.query("select * from digest_failures where channel = ?", [channel]))
        same = rows[0] if rows and rows[0]["due_at"] == due_at else None
        attempts = int(same["attempts"]) + 1 if same else 1
        db.table("digest_failures").upsert(
            {
                "channel": channel,
                "due_at": due_at,
                "attempts": attempts,
                "last_error": error,
                "first_failed_at": same["first_failed_at"] if same else now,
                "next_attempt_at": next_attempt_at,
            },
            pk="channel",
        )
    return attempts


def clear_failure(db: Database, channel: str, up_to: str) -> None:
    """Forget the channel's failed build for a moment at or before `up_to` (it is built)."""
    db.execute("delete from digest_failures where channel = ? and due_at <= ?", [channel, up_to])


def failures(db: Database, channel: str | None = None) -> list[Row]:
    """Failed builds waiting for a retry (one channel's, or all), oldest first."""
    if channel is not None:
        return list(db.query("select * from digest_failures where channel = ?", [channel]))
    return list(db.query("select * from digest_failures order by due_at, channel"))


def due_failures(db: Database, now: str) -> list[Row]:
    return list(
        db.query("select * from digest_failures where next_attempt_at <= ? order by due_at", [now])
    )
