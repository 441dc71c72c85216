"""Query functions for the sources that `paperboy run` and `paperboy fetch` read: one row
per source by canonical name (`SourceSpec.name`), claimed by one fetch at a time (`claim`),
its cursor and validators moved only on a complete fetch (`record_success`)."""

from __future__ import annotations

import logging
from typing import Any

from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]


def list_sources(db: Store) -> list[Row]:
    return [dict(row) for row in db.query("select * from sources order by name")]


def get_source(db: Store, name: str) -> Row | None:
    rows = list(db.query("select * from sources where name = ?", [name]))
    return dict(rows[0]) if rows else None


def add_source(db: Store, row: Row) -> bool:
    """Add a source; False (and nothing changed) when one of that name exists."""
    # One statement: of two processes adding the same name, one adds it, on both backends.
    return db.insert("sources", row, ignore=True, returning="name") is not None


def remove_source(db: Store, name: str) -> bool:
    with db.write():
        cursor = db.execute("delete from sources where name = ?", [name])
    return bool(cursor.rowcount)


def claim(db: Store, name: str, holder: str, now: str, expected: str | None) -> bool:
    """Take the fetch of `name` for `holder`, if its claim is still `expected` (None: not
    claimed; else the holder the caller found gone or stale). A conditional update: of
    two processes, only one wins."""
    with db.write():
        cursor = db.execute(
            "update sources set fetching_by = ?, fetch_started_at = ? "
            "where name = ? and coalesce(fetching_by, '') = ?",
            [holder, now, name, expected or ""],
        )
    return bool(cursor.rowcount)


def fetches_started_since(db: Store, since: str) -> list[str]:
    """When the fetches claimed at or after `since`, and not finished, started."""
    rows = db.query(
        "select fetch_started_at from sources where fetching_by is not null "
        "and fetch_started_at >= ?",
        [since],
    )
    return [str(row["fetch_started_at"]) for row in rows]


def release(db: Store, name: str, holder: str) -> None:
    with db.write():
        db.execute(
            "update sources set fetching_by = null, fetch_started_at = null "
            "where name = ? and fetching_by = ?",
            [name, holder],
        )


def record_success(
    db: Store,
    name: str,
    *,
    now: str,
    read: int,
    added: int,
    merged: int,
    complete: bool,
    cursor: str | None = None,
    etag: str | None = None,
    last_modified: str | None = None,
    note: str | None = None,
) -> None:
    """A fetch that ended without error. The cursor and validators advance only when it
    was `complete` (see `bot.fetching.pages`); its papers are counted either way."""
    with db.write():
        db.execute(
            "update sources set last_success_at = ?, consecutive_failures = 0, "
            "next_try_at = null, last_read = ?, last_added = ?, last_merged = ?, "
            "papers_added = papers_added + ? where name = ?",
            [now, read, added, merged, added, name],
        )
        if complete:
            db.execute(
                "update sources set cursor = coalesce(?, cursor), etag = ?, last_modified = ?, "
                "last_error = null, last_error_at = null where name = ?",
                [cursor, etag, last_modified, name],
            )
        elif note:  # what made it incomplete ("stopped at 10,000 results"), shown in status
            db.execute(
                "update sources set last_error = ?, last_error_at = ? where name = ?",
                [note, now, name],
            )


def record_failure(
    db: Store, name: str, *, now: str, error: str, next_try_at: str, added: int = 0
) -> int:
    """A failed fetch: its error, the time of the next try; the papers it stored before
    failing still count. Returns the failures in a row."""
    with db.write():
        db.execute(
            "update sources set last_error_at = ?, last_error = ?, next_try_at = ?, "
            "consecutive_failures = consecutive_failures + 1, "
            "papers_added = papers_added + ? where name = ?",
            [now, error, next_try_at, added, name],
        )
        row = get_source(db, name)
    return int(row["consecutive_failures"]) if row else 0
