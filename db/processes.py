"""The running processes (one row each, kept alive by a heartbeat) and named leases such as
the clock, which one process at a time holds: the storage side of several `paperboy run`
processes that share one database."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from db.store import Row, Store

log = logging.getLogger(__name__)

ROLES = ("all", "web", "worker")
CLOCK = "clock"  # the lease whose holder runs the scheduler

_COLUMNS = "id, host, pid, role, started_at, heartbeat_at, stopped_at"


def stamp(moment: datetime) -> str:
    """`2026-11-30T09:00:00.250000+00:00`: the moment in UTC, to the microsecond, so stamps
    compare as text in time order and a lease's expiry is not rounded (naive is refused)."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def database_now(store: Store) -> datetime:
    """The database server's current time in UTC: one clock for every machine that shares
    it, whatever their own clocks say."""
    if store.dialect == "sqlite":
        row = store.one("select strftime('%Y-%m-%dT%H:%M:%f', 'now') as now")
    else:
        row = store.one("select clock_timestamp() at time zone 'utc' as now")
    assert row is not None
    value = row["now"]
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.replace(tzinfo=UTC)


def register(store: Store, id: str, host: str, pid: int, role: str, now: datetime) -> None:
    """Record process `id` as running (again, if its row was marked stopped or removed)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    store.execute(
        "insert into processes (id, host, pid, role, started_at, heartbeat_at, stopped_at) "
        "values (?, ?, ?, ?, ?, ?, null) on conflict (id) do update set "
        "host = excluded.host, pid = excluded.pid, role = excluded.role, "
        "heartbeat_at = excluded.heartbeat_at, stopped_at = null",
        [id, host, pid, role, stamp(now), stamp(now)],
    )


def heartbeat(store: Store, id: str, now: datetime) -> bool:
    """Stamp process `id` alive at `now`. False if its row is gone or marked stopped: the
    others may already have taken its work, so it must register again."""
    changed = store.execute(
        "update processes set heartbeat_at = ? where id = ? and stopped_at is null",
        [stamp(now), id],
    ).rowcount
    return changed == 1


def stop(store: Store, id: str, now: datetime) -> None:
    """Mark process `id` stopped at `now` (a clean exit: it is gone at once, not when stale)."""
    store.execute(
        "update processes set stopped_at = ?, heartbeat_at = ? where id = ?",
        [stamp(now), stamp(now), id],
    )


def live(store: Store, now: datetime, stale_after: timedelta) -> list[Row]:
    """The processes running at `now`: not stopped, heartbeat within `stale_after`. Rows
    have id, host, pid, role, and started_at, heartbeat_at, stopped_at as datetimes."""
    rows = store.query(
        f"select {_COLUMNS} from processes where stopped_at is null and heartbeat_at >= ? "
        "order by host, pid, id",
        [stamp(now - stale_after)],
    )
    return [_parsed(row) for row in rows]


def gone(store: Store, now: datetime, stale_after: timedelta) -> list[Row]:
    """The processes not running at `now`: stopped, or silent for longer than `stale_after`
    (killed, or cut off from the database). Rows as `live` gives them."""
    rows = store.query(
        f"select {_COLUMNS} from processes where stopped_at is not null or heartbeat_at < ? "
        "order by host, pid, id",
        [stamp(now - stale_after)],
    )
    return [_parsed(row) for row in rows]


def forget_gone(store: Store, older_than: timedelta, now: datetime) -> int:
    """Delete the rows of processes stopped or silent for longer than `older_than` (at
    least the `stale_after` that `live` is given); how many. A stop stamps the heartbeat."""
    return store.execute(
        "delete from processes where heartbeat_at < ?",
        [stamp(now - older_than)],
    ).rowcount


def acquire(store: Store, name: str, holder: str, now: datetime, ttl: timedelta) -> bool:
    """Take or renew lease `name` for `holder` until `now + ttl`, in one statement, if it is
    free, expired or already `holder`'s. True if `holder` holds it afterwards."""
    rows = store.query(
        "insert into leases (name, holder, expires_at) values (?, ?, ?) "
        "on conflict (name) do update set holder = excluded.holder, "
        "expires_at = excluded.expires_at "
        "where leases.holder = excluded.holder or leases.expires_at <= ? "
        "returning holder",
        [name, holder, stamp(now + ttl), stamp(now)],
    )
    return bool(rows) and rows[0]["holder"] == holder


def release(store: Store, name: str, holder: str) -> bool:
    """Give up lease `name` if `holder` holds it (expired or not); whether it did."""
    changed = store.execute(
        "delete from leases where name = ? and holder = ?", [name, holder]
    ).rowcount
    return changed == 1


def holder(store: Store, name: str, now: datetime) -> str | None:
    """Who holds lease `name` at `now`, or None if nobody does (never taken, or expired)."""
    row = store.one(
        "select holder from leases where name = ? and expires_at > ?", [name, stamp(now)]
    )
    return str(row["holder"]) if row else None


def _parsed(row: Row) -> Row:
    out: dict[str, Any] = dict(row)
    for column in ("started_at", "heartbeat_at", "stopped_at"):
        if out[column] is not None:
            out[column] = datetime.fromisoformat(str(out[column]))
    return out
