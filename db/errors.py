"""What storage raises when the database fails, on SQLite and PostgreSQL alike, so that
callers of db/ catch these and never a driver's own errors (db/store.py maps them)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class StorageError(Exception):
    """The database failed or refused a statement; the message is the database's own."""


class Busy(StorageError):
    """A lock stayed held by another writer for longer than this statement may wait (SQLite's
    busy timeout, PostgreSQL's lock timeout, a deadlock or a serialization failure): the same
    work may succeed if tried again later."""


class Unavailable(StorageError):
    """The database server cannot be reached: it is down, restarting or cannot take
    connections now, or the connection was lost. Nothing of the failed statement was stored;
    try again once the server is back (with a new connection). A server that refuses the
    connection for its settings (no such database or role, a wrong password) is a plain
    `StorageError` instead: trying again will not help."""


class Conflict(StorageError):
    """A constraint refused the write: a unique key already stored, a reference to a row
    that is not there, a NULL where none may be."""
