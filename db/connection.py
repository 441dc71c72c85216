"""Opening the database: WAL, a busy timeout, and migrations applied on open.

Three ways in:

- `open_db(path)` creates the file (and its folder) if needed and migrates it: for the
  commands that store things (`ingest`, `demo`, `run`).
- `open_db(path, create=False)` needs the file to exist (`NoDatabase` otherwise), so a
  mistyped path never leaves an empty database behind. When the file or its folder is
  not writable it opens read-only (below) instead of failing at the first query.
- `open_read_only(path)` never writes: no migration, no WAL switch. A WAL database
  needs its `-shm` index, which SQLite cannot create in a read-only folder; then the
  file is opened as immutable, which is exact as long as no write-ahead log holds
  changes (it is checked) and nobody writes meanwhile (nobody can: it is read-only).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from sqlite_utils import Database

from db.migrations import migrations

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000


class NoDatabase(FileNotFoundError):
    """There is no database file at `path` (and the command must not create one)."""

    def __init__(self, path: Path):
        super().__init__(f"no database at {path}")
        self.path = path


class DatabaseUnreadable(sqlite3.OperationalError):
    """The database exists but cannot be opened read-only; the message says why."""


def open_db(path: str | Path = ":memory:", *, create: bool = True) -> Database:
    """Open the database at `path` and bring its schema up to date.

    `":memory:"` gives a private in-memory database, as the tests use. With
    `create=False` a missing file raises `NoDatabase`, and a file this process may not
    write is opened read-only (`open_read_only`).
    """
    if str(path) == ":memory:":
        db = Database(memory=True)
    else:
        file = Path(path)
        if not create:
            if not file.exists():
                raise NoDatabase(file)
            if file.is_file() and not _writable(file):
                return open_read_only(file)
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


def _writable(file: Path) -> bool:
    # A WAL database also needs its folder writable, for the -wal and -shm files.
    return os.access(file, os.W_OK) and os.access(file.parent, os.W_OK)


def _connect(file: Path, *, immutable: bool) -> sqlite3.Connection:
    uri = f"file:{quote(str(file.resolve()))}?mode=ro" + ("&immutable=1" if immutable else "")
    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        connection.execute("select count(*) from sqlite_master").fetchone()  # reads the header
    except sqlite3.Error:
        connection.close()
        raise
    return connection


def open_read_only(path: str | Path) -> Database:
    """Open an existing database for reading only; never writes, never migrates.

    Raises `NoDatabase` if there is no file, and `DatabaseUnreadable` (one line, with
    the fix) if it cannot be read as it is.
    """
    file = Path(path)
    if not file.is_file():
        raise NoDatabase(file)
    try:
        connection = _connect(file, immutable=False)
    except sqlite3.OperationalError as exc:
        wal = file.with_name(file.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise DatabaseUnreadable(
                f"cannot read {file} read-only: its write-ahead log {wal.name} holds changes "
                "and the folder is not writable; open it once with write access"
            ) from exc
        log.debug("read-only open of %s failed (%s); opening it as immutable", file, exc)
        connection = _connect(file, immutable=True)
    db = Database(connection)
    pending = [m.name for m in migrations.pending(db)]
    if pending:
        raise DatabaseUnreadable(
            f"{file} is read-only and needs an upgrade ({', '.join(pending)}); "
            "run any paperboy command on it once with write access"
        )
    return db
