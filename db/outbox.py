"""The outbox: every message is written here before it is sent, and marked after.

States: `pending` (not sent yet), `sent` (with the platform's id for it), `failed`
(a transient error; retried from `next_attempt_at`), `paused` (the channel is paused).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlite_utils import Database

log = logging.getLogger(__name__)

Row = dict[str, Any]


def enqueue(
    db: Database, channel: str, digest_id: int, payloads: list[dict[str, Any]], now: str
) -> list[Row]:
    """Queue a digest's messages once; queuing the same digest again changes nothing."""
    with db.atomic():
        existing = messages_for_digest(db, digest_id)
        if existing:
            return existing
        db.table("outbox").insert_all(
            {
                "channel": channel,
                "digest_id": digest_id,
                "part": part,
                "payload": json.dumps(payload, ensure_ascii=False),
                "state": "pending",
                "attempts": 0,
                "created_at": now,
            }
            for part, payload in enumerate(payloads, start=1)
        )
    return messages_for_digest(db, digest_id)


def _decode(row: Row) -> Row:
    return {**row, "payload": json.loads(row["payload"])}


def messages_for_digest(db: Database, digest_id: int) -> list[Row]:
    return [
        _decode(row)
        for row in db.query("select * from outbox where digest_id = ? order by part", [digest_id])
    ]


def due(db: Database, channel: str, now: str) -> list[Row]:
    """Unsent messages of a channel whose time has come, oldest digest first, in part order."""
    return [
        _decode(row)
        for row in db.query(
            "select * from outbox where channel = ? and state in ('pending', 'failed') "
            "and (next_attempt_at is null or next_attempt_at <= ?) order by digest_id, part",
            [channel, now],
        )
    ]


def thread_root(db: Database, row: Row) -> str | None:
    """The platform id of part 1 of the same digest, if it has been sent."""
    rows = list(
        db.query(
            "select platform_id from outbox where digest_id = ? and part = 1 and state = 'sent'",
            [row["digest_id"]],
        )
    )
    return rows[0]["platform_id"] if rows else None


def mark_sent(db: Database, message_id: int, platform_id: str, now: str) -> None:
    db.execute(
        "update outbox set state = 'sent', platform_id = ?, sent_at = ?, "
        "attempts = attempts + 1, last_error = null where id = ?",
        [platform_id, now, message_id],
    )


def mark_failed(db: Database, message_id: int, error: str, next_attempt_at: str) -> None:
    db.execute(
        "update outbox set state = 'failed', last_error = ?, next_attempt_at = ?, "
        "attempts = attempts + 1 where id = ?",
        [error, next_attempt_at, message_id],
    )


def pause_channel(db: Database, channel: str, error: str) -> None:
    db.execute(
        "update outbox set state = 'paused', last_error = ? "
        "where channel = ? and state in ('pending', 'failed')",
        [error, channel],
    )


def resume_channel(db: Database, channel: str) -> None:
    db.execute(
        "update outbox set state = 'pending', next_attempt_at = null "
        "where channel = ? and state = 'paused'",
        [channel],
    )


def last_delivery(db: Database, channel: str) -> Row | None:
    """The channel's most recent message that was sent, failed or paused."""
    rows = list(
        db.query(
            "select * from outbox where channel = ? and state != 'pending' "
            "order by coalesce(sent_at, created_at) desc, id desc limit 1",
            [channel],
        )
    )
    return _decode(rows[0]) if rows else None
