"""What a user's Home (Slack's App Home tab) reads: the channels they manage (recorded by
user key, `record_manager`; older changes matched by display name, `managed_channels`)
and their last personal digest. Storage only; `bot.slack.home` lays it out."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from db.papers import decode
from db.saved import count_saved as count_saved  # the Home's count, read here too
from db.saved import saved_papers
from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]

MANAGER_PREFIX = "manages "  # app_state key: "manages {user_key} {channel}"
# app_state key: when the first manager was recorded. Changes from then on are recorded by
# key, so display names are matched only against changes older than that.
RECORDED_SINCE = "home: managers recorded since"


def _manager_key(user_key: str, channel: str) -> str:
    return f"{MANAGER_PREFIX}{user_key} {channel}"


def record_manager(db: Store, channel: str, user_key: str, at: str) -> None:
    """Remember that the user (`user_key`) changed this channel's topics or schedule at
    `at`, in `app_state`, one row per (user, channel): the tables name who changed them by
    display name, which a user can change and another take later. Idempotent: a later
    change only moves the time. Committed here, or with the caller's transaction when
    there is one (the command's own, in the writer's batch)."""
    with db.write():
        db.execute(
            "insert into app_state (key, value, updated_at) values (?, ?, ?) "
            "on conflict (key) do update set value = excluded.value, "
            "updated_at = excluded.updated_at",
            [_manager_key(user_key, channel), at, at],
        )
        db.execute(
            "insert into app_state (key, value, updated_at) values (?, ?, ?) "
            "on conflict (key) do nothing",
            [RECORDED_SINCE, at, at],
        )


def recorded_channels(db: Store, user_key: str) -> list[str]:
    """The channels `record_manager` recorded for this user, in reference order."""
    prefix = f"{MANAGER_PREFIX}{user_key} "
    # A range on the primary key: keys start with the prefix iff prefix <= key < end,
    # where end is the prefix with its last character (a space) replaced by the next one.
    end = prefix[:-1] + "!"
    rows = db.execute(
        "select key from app_state where key >= ? and key < ? order by key", [prefix, end]
    ).fetchall()
    return [str(key)[len(prefix) :] for (key,) in rows]


def names_matched_before(db: Store, channel: str) -> str:
    """The time before which `managed_channels` matches this channel's subscription rows
    by display name: the first recorded manager's, in a Slack channel (before any is
    recorded, every row: "9999"); "" in a personal digest or off Slack, where it never
    looks."""
    if not channel.startswith("slack:") or "/@" in channel:
        return ""
    found = db.execute("select value from app_state where key = ?", [RECORDED_SINCE])
    return str((found.fetchone() or ["9999"])[0])


def managed_channels(
    db: Store,
    user_key: str,
    channel_prefix: str,
    legacy_names: Iterable[str] = (),
) -> list[Row]:
    """The channels this user manages, as rows of `channels` (channels never stored are
    left out) with `subscriptions`: their active subscription rows, oldest first.

    A user manages a channel they changed: recorded under their key (`record_manager`),
    or, for changes older than that record, a subscription created or removed, or a
    schedule set, by one of `legacy_names` (e.g. "@alice"). Only channels whose reference
    starts with `channel_prefix` (the user's workspace, e.g. "slack:T0123/") count, and
    never a personal digest (`slack:T0123/@U...`): that is the user's own list. A display
    name can be renamed and taken by someone else, so a legacy match may show a channel to
    its name's new owner; the recorded key cannot be mistaken. Names are matched only
    against changes older than the first recorded manager (`RECORDED_SINCE`): every
    change since is recorded by key."""
    channels = {ref for ref in recorded_channels(db, user_key) if ref.startswith(channel_prefix)}
    names = sorted({name for name in legacy_names if name})
    if names:
        marks = ", ".join("?" for _ in names)
        # Only changes older than the first recorded manager: later ones are recorded by
        # key, and a name matched there could be a later owner of the name.
        found = db.execute("select value from app_state where key = ?", [RECORDED_SINCE])
        since = (found.fetchone() or ["9999"])[0]
        # The prefix is compared with substr, not LIKE: `_` in it must not be a wildcard.
        size = len(channel_prefix)
        query = (
            f"select channel from subscriptions where substr(channel, 1, {size}) = ? "
            f"and ((created_by in ({marks}) and created_at < ?) "
            f"or (removed_by in ({marks}) and removed_at < ?)) "
            f"union select id from channels where substr(id, 1, {size}) = ? "
            f"and schedule_set_by in ({marks}) and schedule_set_at < ?"
        )
        params = [channel_prefix, *names, since, *names, since, channel_prefix, *names, since]
        channels.update(str(channel) for (channel,) in db.execute(query, params).fetchall())
    personal = f"{channel_prefix}@"
    wanted = sorted(ref for ref in channels if not ref.startswith(personal))
    if not wanted:
        return []
    marks = ", ".join("?" for _ in wanted)
    rows = [dict(row) for row in db.query(f"select * from channels where id in ({marks})", wanted)]
    subscriptions: dict[str, list[Row]] = {row["id"]: [] for row in rows}
    for sub in db.query(
        f"select * from subscriptions where channel in ({marks}) and removed_at is null "
        "order by id",
        wanted,
    ):
        if sub["channel"] in subscriptions:
            subscriptions[sub["channel"]].append(dict(sub))
    for row in rows:
        row["subscriptions"] = subscriptions[row["id"]]
    return sorted(rows, key=lambda row: str(row["id"]))


def last_digest(db: Store, channel: str) -> Row | None:
    """The channel's most recently built digest, with `items`: its papers in rank order,
    each the paper's row (decoded) with the item's `rank`. None if it never had one.
    Papers no longer in the store are left out."""
    found = db.execute(
        "select id, week, built_at, empty from digests where channel = ? "
        "order by built_at desc, id desc limit 1",
        [channel],
    ).fetchone()
    if found is None:
        return None
    digest_id, week, built_at, empty = found
    items = [
        decode(row)
        for row in db.query(
            "select p.*, i.rank as rank from digest_items i join papers p on p.id = i.paper_id "
            "where i.digest_id = ? order by i.rank",
            [digest_id],
        )
    ]
    return {"id": digest_id, "week": week, "built_at": built_at, "empty": empty, "items": items}


def saved_page(db: Store, user_key: str, limit: int) -> list[Row]:
    """The user's `limit` most recently saved papers (`db.saved.saved_papers`)."""
    return saved_papers(db, user_key, limit)


def subscription(db: Store, subscription_id: int) -> Row | None:
    """One subscription row by id (active or removed), or None."""
    rows = list(db.query("select * from subscriptions where id = ?", [subscription_id]))
    return rows[0] if rows else None


HOME_OPENED_PREFIX = "home opened "  # app_state key: "home opened {user_key}"


def record_home_opened(db: Store, user_key: str, at: str) -> bool:
    """Remember that this user has opened the app's Home (first time `at`), so a later
    change to what it shows (a personal digest delivered, a paper saved) re-publishes it:
    `views.publish` for everyone else would only spend Slack's rate limit on Homes nobody
    looks at. True the first time. Read first, so a Home opened again writes nothing."""
    if has_opened_home(db, user_key):
        return False
    key = f"{HOME_OPENED_PREFIX}{user_key}"
    with db.write():
        inserted = db.execute(
            "insert into app_state (key, value, updated_at) values (?, ?, ?) "
            "on conflict (key) do nothing",
            [key, at, at],
        ).rowcount
    return bool(inserted)


def has_opened_home(db: Store, user_key: str) -> bool:
    """Whether `record_home_opened` was called for this user."""
    key = f"{HOME_OPENED_PREFIX}{user_key}"
    return db.execute("select 1 from app_state where key = ?", [key]).fetchone() is not None
