"""Transaction control: write transactions that take the write lock up front (`BEGIN
IMMEDIATE` waits for it, where a deferred transaction that reads then writes can fail at
once with "database is locked" in WAL mode), and the steps of a batch in savepoints."""

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


def in_transaction(db: Database) -> bool:
    """Whether a transaction is open on `db`'s connection (SQLite may end one by itself:
    a full disk or an I/O error rolls it back)."""
    return db.conn.in_transaction


def begin_immediate(db: Database) -> None:
    """Open a write transaction, waiting for the write lock (`write_transaction`)."""
    db.conn.execute("BEGIN IMMEDIATE")


def savepoint(db: Database, name: str) -> None:
    """Open the savepoint `name` (a name from our code, not input)."""
    db.conn.execute(f"SAVEPOINT {name}")


def release(db: Database, name: str) -> None:
    """Keep what was done since the savepoint `name`, and end it."""
    db.conn.execute(f"RELEASE SAVEPOINT {name}")


def undo(db: Database, name: str) -> None:
    """Undo what was done since the savepoint `name`, and end it."""
    db.conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
    db.conn.execute(f"RELEASE SAVEPOINT {name}")


def commit(db: Database) -> None:
    db.conn.commit()


def rollback(db: Database) -> None:
    """Undo the open transaction, if any."""
    db.conn.rollback()
