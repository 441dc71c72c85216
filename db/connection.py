"""Opening the database: WAL, a busy timeout, and migrations applied on open."""

from __future__ import annotations

import logging
from pathlib import Path

from sqlite_utils import Database

from db.migrations import migrations

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000


def open_db(path: str | Path = ":memory:") -> Database:
    """Open (creating if needed) the database at `path` and bring its schema up to date.

    `":memory:"` gives a private in-memory database, as the tests use.
    """
    if str(path) == ":memory:":
        db = Database(memory=True)
    else:
        file = Path(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        db = Database(file)
        db.enable_wal()
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA foreign_keys = ON")
    pending = [m.name for m in migrations.pending(db)]
    if pending:
        log.info("applying migrations: %s", ", ".join(pending))
        migrations.apply(db)
    return db
