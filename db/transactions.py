"""Transaction control for code outside db/: a batch of changes in one transaction, each in
its own savepoint (bot/services.py), on either backend, through the Store's own steps."""

from __future__ import annotations

import logging

from db.store import Store

log = logging.getLogger(__name__)


def in_transaction(db: Store) -> bool:
    """Whether a transaction is open on `db` (SQLite may end one by itself: a full disk or
    an I/O error rolls it back)."""
    return db.in_transaction


def begin_immediate(db: Store) -> None:
    """Open a write transaction (SQLite: waiting for the write lock)."""
    db.begin()


def savepoint(db: Store, name: str) -> None:
    """Open the savepoint `name` (a name from our code, not input)."""
    db.savepoint(name)


def release(db: Store, name: str) -> None:
    """Keep what was done since the savepoint `name`, and end it."""
    db.release(name)


def undo(db: Store, name: str) -> None:
    """Undo what was done since the savepoint `name`, and end it."""
    db.undo(name)


def commit(db: Store) -> None:
    db.commit()


def rollback(db: Store) -> None:
    """Undo the open transaction, if any."""
    db.rollback()
