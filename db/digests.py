"""Recorded digests and their items, and failed builds. The `week` column holds the period
key (an ISO week, `2026-W49`, or a date, `2026-11-30`); (channel, week) is unique, so a
period never gets two digests."""

from __future__ import annotations

import json
import logging
from typing import Any

from db.outbox import CLAIMED_STATES
from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]


def get_digest(db: Store, channel: str, week: str) -> Row | None:
    """The digest recorded for a channel and week, with its `items` in rank order."""
    rows = list(db.query("select * from digests where channel = ? and week = ?", [channel, week]))
    if not rows:
        return None
    return _with_items(db, rows[0])


def _with_items(db: Store, digest: Row) -> Row:
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
    db: Store,
    channel: str,
    week: str,
    built_at: str,
    topics: list[str],
    items: list[Row],
    since: str | None = None,
) -> Row:
    """Record a digest and its items in one transaction; returns it as `get_digest` would.

    If the channel's digest for that week was recorded meanwhile (another process, such as
    a second `paperboy run` on the same database, won the race), that one stands and is
    returned: losing the race is normal, not an error."""
    with db.write():
        recorded = _insert(db, channel, week, built_at, topics, items, since)
    if recorded is not None:
        return recorded
    log.info("digest %s %s: built meanwhile by another process; using that one", channel, week)
    found = get_digest(db, channel, week)
    assert found is not None
    return found


def _insert(
    db: Store,
    channel: str,
    week: str,
    built_at: str,
    topics: list[str],
    items: list[Row],
    since: str | None,
) -> Row | None:
    """The digest as recorded, returned as written, not read back (a batch records
    thousands); None if the channel's digest for that week is recorded already. Each value
    as SQLite stores it (the column's type), so it equals what `get_digest` reads."""
    encoded = json.dumps(topics)
    # The unique (channel, week) decides between two writers: the second one waits for the
    # first one's commit, then inserts nothing (on PostgreSQL as on SQLite).
    found = db.execute(
        "insert into digests (channel, week, built_at, topics, empty, since) "
        "values (?, ?, ?, ?, ?, ?) on conflict (channel, week) do nothing returning id",
        [channel, week, built_at, encoded, 0 if items else 1, since],
    ).fetchone()
    if found is None:
        return None
    digest_id = found[0]
    rows = [
        (
            digest_id,
            channel,
            item["paper_id"],
            rank,
            json.dumps(item["topics"]),
            item["score"],
            1 if item.get("from_archive") else 0,
        )
        for rank, item in enumerate(items, start=1)
    ]
    db.executemany(
        "insert into digest_items (digest_id, channel, paper_id, rank, topics, score, "
        "from_archive) values (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return {
        "id": digest_id,
        "channel": channel,
        "week": week,
        "built_at": built_at,
        "topics": json.loads(encoded),
        "empty": 0 if items else 1,
        "since": since,
        "items": [
            {
                "digest_id": digest_id,
                "channel": channel,
                "paper_id": None if paper_id is None else str(paper_id),
                "rank": rank,
                "topics": json.loads(item_topics),
                "score": None if score is None else float(score),
                "from_archive": from_archive,
            }
            for _, _, paper_id, rank, item_topics, score, from_archive in rows
        ],
    }


def last_digest(
    db: Store, channel: str, at_or_before: str | None = None, with_items: bool = True
) -> Row | None:
    """The channel's most recently built digest (of those built at or before
    `at_or_before`, when given), with its items (unless `with_items` is False: the
    digest's own row only, with `topics` decoded)."""
    bound = "and built_at <= ? " if at_or_before is not None else ""
    rows = list(
        db.query(
            f"select * from digests where channel = ? {bound}"
            "order by built_at desc, id desc limit 1",
            [channel, *([at_or_before] if at_or_before is not None else [])],
        )
    )
    if not rows:
        return None
    if not with_items:
        return {**rows[0], "topics": json.loads(rows[0]["topics"])}
    return _with_items(db, rows[0])


def last_digest_with(db: Store, channel: str, paper_id: str) -> Row | None:
    """The channel's latest digest that has the paper among its items, with its items
    (as `get_digest` gives it)."""
    rows = list(
        db.query(
            "select d.* from digest_items i join digests d on d.id = i.digest_id "
            "where i.channel = ? and i.paper_id = ? order by i.digest_id desc limit 1",
            [channel, paper_id],
        )
    )
    return _with_items(db, rows[0]) if rows else None


def last_received_digest(db: Store, channel: str, at_or_before: str) -> Row | None:
    """The channel's latest digest built at or before `at_or_before` that reached it, or
    is on its way: at least one of its messages is queued, being sent, sent or held while
    paused (a digest only printed, or skipped as empty, or given up, did not)."""
    placeholders = ", ".join("?" for _ in CLAIMED_STATES)
    rows = list(
        db.query(
            "select * from digests d where channel = ? and built_at <= ? and exists "
            f"(select 1 from outbox o where o.digest_id = d.id and o.state in ({placeholders})) "
            "order by built_at desc, id desc limit 1",
            [channel, at_or_before, *CLAIMED_STATES],
        )
    )
    return dict(rows[0]) if rows else None


def digest_channel(db: Store, digest_id: int) -> str | None:
    """The channel the digest was built for, or None for no such digest."""
    found = db.execute("select channel from digests where id = ?", [digest_id]).fetchone()
    return None if found is None else str(found[0])


def item_topics(db: Store, digest_id: int, paper_id: str) -> Row | None:
    """{"topics": the item's topics as stored (JSON text)}, or None when the digest has
    no such item."""
    found = db.execute(
        "select topics from digest_items where digest_id = ? and paper_id = ?",
        [digest_id, paper_id],
    ).fetchone()
    return None if found is None else {"topics": found[0]}


def item_paper_ids(db: Store, channel: str, digest_id: int) -> list[str]:
    """The papers of the channel's digest, in rank order ([] when the digest is not the
    channel's)."""
    rows = db.execute(
        "select i.paper_id from digest_items i join digests d on d.id = i.digest_id "
        "where d.id = ? and d.channel = ? order by i.rank",
        [digest_id, channel],
    ).fetchall()
    return [str(row[0]) for row in rows]


def picked_paper_ids(db: Store, channel: str, at_or_before: str) -> set[str]:
    """Papers the channel's digests built at or before `at_or_before` picked (whether or
    not they reached the channel)."""
    rows = db.query(
        "select distinct i.paper_id from digest_items i join digests d on d.id = i.digest_id "
        "where d.channel = ? and d.built_at <= ?",
        [channel, at_or_before],
    )
    return {str(row["paper_id"]) for row in rows}


def record_failure(
    db: Store, channel: str, due_at: str, error: str, next_attempt_at: str, now: str
) -> int:
    """Record that building the channel's digest for `due_at` failed; returns the number
    of failed attempts so far (a failure for another moment starts again at 1)."""
    # One statement, so two processes failing the same build count two attempts.
    (attempts,) = db.execute(
        "insert into digest_failures (channel, due_at, attempts, last_error, first_failed_at, "
        "next_attempt_at) values (?, ?, 1, ?, ?, ?) on conflict (channel) do update set "
        "attempts = case when digest_failures.due_at = excluded.due_at "
        "then digest_failures.attempts + 1 else 1 end, "
        "first_failed_at = case when digest_failures.due_at = excluded.due_at "
        "then digest_failures.first_failed_at else excluded.first_failed_at end, "
        "due_at = excluded.due_at, last_error = excluded.last_error, "
        "next_attempt_at = excluded.next_attempt_at returning attempts",
        [channel, due_at, error, now, next_attempt_at],
    ).fetchone()
    return int(attempts)


def put_failure(db: Store, row: Row) -> None:
    """Store a failed build's row as it is (`failures` gives them), in place of the
    channel's one."""
    db.upsert("digest_failures", row, ["channel"])


def clear_failure(db: Store, channel: str, up_to: str) -> None:
    """Forget the channel's failed build for a moment at or before `up_to` (it is built)."""
    db.execute("delete from digest_failures where channel = ? and due_at <= ?", [channel, up_to])


def failures(db: Store, channel: str | None = None) -> list[Row]:
    """Failed builds waiting for a retry (one channel's, or all), oldest first."""
    if channel is not None:
        return list(db.query("select * from digest_failures where channel = ?", [channel]))
    return list(db.query("select * from digest_failures order by due_at, channel"))


def due_failures(db: Store, now: str) -> list[Row]:
    return list(
        db.query("select * from digest_failures where next_attempt_at <= ? order by due_at", [now])
    )
