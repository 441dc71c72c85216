"""Write transactions that take the write lock up front.

Several connections share the database (command handlers in worker threads, the
scheduler on the event loop). A deferred transaction that reads and then writes can
fail at once with "database is locked" in WAL mode when another connection wrote in
between, whatever the busy timeout; `BEGIN IMMEDIATE` waits for the lock instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from sqlite_utils import Database

log = logging.getLogger(__name__)


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """Like `db.atomic()`, but begins with BEGIN IMMEDIATE (nested: a savepoint)."""
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.conn.rollback()
        raise
    else:
        db.conn.commit()
