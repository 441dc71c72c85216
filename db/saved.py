"""Each user's saved papers, their reading list. `user` is a user key
(`digests.actions.user_key`: `slack:T0123/U0456`, `discord:…`, `local:NAME`); (user,
paper) is the primary key, so saving twice keeps the first save."""

from __future__ import annotations

import logging
from typing import Any

from db.papers import decode
from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]


def save(db: Store, user: str, paper_id: str, at: str, channel: str | None = None) -> bool:
    """Add a paper to the user's saved list; False if it was already there (unchanged)."""
    cursor = db.execute(
        'insert into saved ("user", paper_id, saved_at, channel) values (?, ?, ?, ?) '
        'on conflict ("user", paper_id) do nothing',
        [user, paper_id, at, channel],
    )
    return cursor.rowcount > 0


def unsave(db: Store, user: str, paper_id: str) -> bool:
    """Remove a paper from the user's saved list; False if it was not there."""
    cursor = db.execute('delete from saved where "user" = ? and paper_id = ?', [user, paper_id])
    return cursor.rowcount > 0


def is_saved(db: Store, user: str, paper_id: str) -> bool:
    return (
        db.execute(
            'select 1 from saved where "user" = ? and paper_id = ?', [user, paper_id]
        ).fetchone()
        is not None
    )


def saved_papers(db: Store, user: str, limit: int | None = None) -> list[Row]:
    """The user's saved papers (the `limit` most recent, when given), newest save first:
    each the paper's row (list columns decoded, as `db.papers.get_paper`) with `saved_at`
    and `saved_from` (the channel it was saved from, or None). A saved paper no longer in
    the store is left out."""
    bound = "" if limit is None else " limit ?"
    rows = db.query(
        "select p.*, s.saved_at as saved_at, s.channel as saved_from from saved s "
        "join papers p on p.id = s.paper_id where s.user = ? "
        f"order by s.saved_at desc, s.rowid desc{bound}",
        [user, *([] if limit is None else [limit])],
    )
    return [decode(row) for row in rows]


def count_saved(db: Store, user: str) -> int:
    """How many papers `saved_papers` gives the user, without reading them (a user may
    have saved thousands; a list or a Home shows a few)."""
    (count,) = db.execute(
        "select count(*) from saved s join papers p on p.id = s.paper_id where s.user = ?",
        [user],
    ).fetchone()
    return int(count)
