"""Channels, their schedule (cadence, weekday, time, timezone), backlog and paused state,
and their subscriptions: one active row per channel and topic, and a bounded history."""

from __future__ import annotations

import logging
from typing import Any

from db.home import names_matched_before
from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]


def get_channel(db: Store, channel: str) -> Row | None:
    rows = list(db.query("select * from channels where id = ?", [channel]))
    return rows[0] if rows else None


def ensure_channel(db: Store, channel: str, platform: str, defaults: Row, now: str) -> Row:
    """The channel's row, created with `defaults` (weekday, time, timezone) if new."""
    existing = get_channel(db, channel)
    if existing:
        return existing
    row = {"id": channel, "platform": platform, "created_at": now, "paused": 0, **defaults}
    # Another thread may create it between the read and this insert: then theirs stands.
    db.insert("channels", row, ignore=True)
    created = get_channel(db, channel)
    assert created is not None
    return created


def set_schedule(
    db: Store,
    channel: str,
    weekday: str | None,
    time: str,
    timezone: str,
    by: str,
    now: str,
    cadence: str = "weekly",
) -> None:
    """Set the channel's schedule. A daily or weekdays schedule passes weekday None: the
    stored weekday stays, for a later switch back to weekly."""
    values: Row = {
        "cadence": cadence,
        "time": time,
        "timezone": timezone,
        "schedule_set_by": by,
        "schedule_set_at": now,
    }
    if weekday is not None:
        values["weekday"] = weekday
    db.update("channels", {"id": channel}, values)


def set_backlog(db: Store, channel: str, on: bool) -> None:
    """Whether older never-sent papers fill a digest's empty slots in this channel."""
    db.update("channels", {"id": channel}, {"backlog": 1 if on else 0})


def set_paused(db: Store, channel: str, reason: str | None, now: str) -> None:
    """Pause a channel with a reason, or resume it (reason None)."""
    db.update(
        "channels",
        {"id": channel},
        {
            "paused": 1 if reason else 0,
            "paused_reason": reason,
            "paused_at": now if reason else None,
        },
    )


def all_channels(db: Store) -> list[Row]:
    return list(db.query("select * from channels order by id"))


def subscribed_channels(db: Store) -> list[Row]:
    """The channels with at least one subscription, by id."""
    return list(
        db.query(
            "select * from channels where id in "
            "(select channel from subscriptions where removed_at is null) order by id"
        )
    )


def active_subscriptions(db: Store, channel: str) -> list[Row]:
    return list(
        db.query(
            "select * from subscriptions where channel = ? and removed_at is null order by id",
            [channel],
        )
    )


def add_subscription(
    db: Store, channel: str, topic_id: str, custom_text: str | None, by: str, now: str
) -> Row:
    """Subscribe the channel to the topic (a new row: who and when are this subscription's)
    and keep the topic's history bounded (`_prune_history`); the active row."""
    db.insert(
        "subscriptions",
        {
            "channel": channel,
            "topic_id": topic_id,
            "custom_text": custom_text,
            "created_by": by,
            "created_at": now,
        },
    )
    _prune_history(db, channel, topic_id)
    rows = list(
        db.query(
            "select * from subscriptions where channel = ? and topic_id = ? and removed_at is null",
            [channel, topic_id],
        )
    )
    return rows[0]


def _prune_history(db: Store, channel: str, topic_id: str) -> None:
    """Delete the channel's removed rows for the topic but the first (who first subscribed
    it), the latest (who last unsubscribed it), and those a Home still reads managers'
    display names from (`db.home.names_matched_before`): each subscribe after an
    unsubscribe adds a row, and nothing reads the ones between."""
    before = names_matched_before(db, channel)
    db.execute(
        "delete from subscriptions where channel = ? and topic_id = ? "
        "and removed_at is not null and created_at >= ? and removed_at >= ? "
        "and id > (select min(id) from subscriptions where channel = ? and topic_id = ?) "
        "and id < (select max(id) from subscriptions where channel = ? and topic_id = ? "
        "and removed_at is not null)",
        [channel, topic_id, before, before, channel, topic_id, channel, topic_id],
    )


def remove_subscription(db: Store, subscription_id: int, by: str, now: str) -> None:
    """Mark a subscription removed; the row stays, so who did what and when is kept (until
    a later subscribe to the topic prunes the rows between the first and the latest)."""
    db.execute(
        "update subscriptions set removed_by = ?, removed_at = ? "
        "where id = ? and removed_at is null",
        [by, now, subscription_id],
    )


def latest_custom_text(db: Store, channel: str, topic_id: str) -> str | None:
    """The text of the channel's latest subscription to the free-text topic `topic_id`."""
    found = db.execute(
        "select custom_text from subscriptions where channel = ? and topic_id = ? "
        "and custom_text is not null order by id desc limit 1",
        [channel, topic_id],
    ).fetchone()
    return None if found is None else str(found[0])


def custom_texts(db: Store, channel: str) -> list[str]:
    """Free-text topics this channel has ever followed, most recent first."""
    rows = db.query(
        "select custom_text, max(created_at) as latest from subscriptions "
        "where channel = ? and custom_text is not null group by custom_text order by latest desc",
        [channel],
    )
    return [str(row["custom_text"]) for row in rows]
