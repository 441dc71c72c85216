"""The inbox's record of files: each file's last version seen (size, modification time)
and what became of it (`status`: ingesting, loaded or error; `detail`: who claims it)."""

from __future__ import annotations

import logging
from typing import Any

from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]


def get_file(db: Store, path: str) -> Row | None:
    """The file's row, or None for a file never seen."""
    rows = list(db.query("select * from inbox_files where path = ?", [path]))
    return rows[0] if rows else None


def file_version(db: Store, path: str) -> Row | None:
    """The file's `size`, `mtime_ns` and `status` only, or None for a file never seen."""
    rows = list(db.query("select size, mtime_ns, status from inbox_files where path = ?", [path]))
    return rows[0] if rows else None


def record_file(
    db: Store, path: str, size: int, mtime_ns: int, status: str, detail: str, seen_at: str
) -> None:
    """Set the file's row (made if new)."""
    db.upsert(
        "inbox_files",
        {
            "path": path,
            "size": size,
            "mtime_ns": mtime_ns,
            "status": status,
            "detail": detail,
            "seen_at": seen_at,
        },
        ["path"],
    )


def renew_claim(db: Store, path: str, holder: str, seen_at: str) -> None:
    """Move `holder`'s claim on the file (status `ingesting`) to `seen_at`; no other's."""
    db.execute(
        "update inbox_files set seen_at = ? where path = ? and status = 'ingesting' and detail = ?",
        [seen_at, path, holder],
    )


def drop_claim(db: Store, path: str, holder: str) -> None:
    """Forget the file if `holder` claims it (status `ingesting`), so it is tried again."""
    db.execute(
        "delete from inbox_files where path = ? and status = 'ingesting' and detail = ?",
        [path, holder],
    )
