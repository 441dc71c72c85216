"""Opening the database: WAL, a busy timeout, and migrations applied on open; or
read-only, never writing nor creating a file (docs/explanation/guarantees.md)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from db import migrations_pg, store
from db.lite import PLUGINS, Database
from db.migrations import migrations
from db.store import Store

log = logging.getLogger(__name__)

POSTGRESQL_SCHEMES = ("postgresql://", "postgres://")
# Where a store is: a SQLite file's path, or a PostgreSQL URL.
Target = str | Path


class NoDatabase(FileNotFoundError):
    """There is no database file at `path` (and the command must not create one)."""

    def __init__(self, path: Path):
        super().__init__(f"no database at {path}")
        self.path = path


class DatabaseUnreadable(sqlite3.OperationalError):
    """The database cannot be opened as it is (read-only, or not a file); the message says
    why and what to do."""


def is_postgresql(target: Target) -> bool:
    """Whether `target` names a PostgreSQL server (a `postgresql://` URL), not a file."""
    return isinstance(target, str) and target.startswith(POSTGRESQL_SCHEMES)


def hide_password(target: str) -> str:
    """`target` to show in a message: a URL's password replaced by `***`."""
    return re.sub(r"(?<=://)([^/@:\s]*):[^/\s]*@", r"\1:***@", target)


def open_db(path: Target = ":memory:", *, create: bool = True) -> Store:
    """Open the database at `path` (creating the file and its folder if needed) and bring
    its schema up to date.

    `":memory:"` gives a private in-memory database, as the tests use; a
    `postgresql://` URL the PostgreSQL database there (`create` does not apply: the
    server's database must exist). With `create=False` a missing file raises
    `NoDatabase`, and a file this process may not write is opened read-only
    (`open_read_only`).
    """
    if is_postgresql(path):
        server = Store.connect(str(path))
        try:
            if migrations_pg.pending(server):
                migrations_pg.apply(server)
        except BaseException:
            server.close()
            raise
        return server
    if str(path) == ":memory:":
        db = Database(memory=True, execute_plugins=PLUGINS)
    else:
        file = Path(path)
        _refuse_folder(file)
        if not create:
            if not file.exists():
                raise NoDatabase(file)
            if file.is_file() and not _writable(file):
                return open_read_only(file)
        file.parent.mkdir(parents=True, exist_ok=True)
        db = Database(file, execute_plugins=PLUGINS)
        db.enable_wal()
    db.execute(f"PRAGMA busy_timeout = {store.BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA foreign_keys = ON")
    pending = [m.name for m in migrations.pending(db)]
    if pending:
        log.info("applying migrations: %s", ", ".join(pending))
        migrations.apply(db)
    return Store(db)


def _refuse_folder(file: Path) -> None:
    # SQLite would only say "unable to open database file" or "disk I/O error".
    if file.is_dir():
        what = "a folder"
    elif file.exists() and not file.is_file():
        what = "a device, pipe or socket"
    else:
        return
    raise DatabaseUnreadable(
        f"{file} is {what}, not a database file; give the database file's path "
        "(--db or $PAPERBOY_DB), e.g. db/paperboy.db"
    )


def _writable(file: Path) -> bool:
    # A WAL database also needs its folder writable, for the -wal and -shm files.
    return os.access(file, os.W_OK) and os.access(file.parent, os.W_OK)


def _connect(file: Path, *, immutable: bool) -> sqlite3.Connection:
    uri = f"file:{quote(str(file.resolve()))}?mode=ro" + ("&immutable=1" if immutable else "")
    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        connection.execute(f"PRAGMA busy_timeout = {store.BUSY_TIMEOUT_MS}")
        connection.execute("select count(*) from sqlite_master").fetchone()  # reads the header
    except sqlite3.Error:
        connection.close()
        raise
    return connection


def open_read_only(path: str | Path) -> Store:
    """Open an existing database for reading only; never writes, never migrates, never
    creates a file. With no `-wal`, `-shm` or `-journal` beside it the file is read as
    immutable (a plain open would leave a `-wal` and `-shm` the owner cannot write);
    else through them (`mode=ro`), or as immutable if that fails and its `-wal` holds no
    changes. Immutable reads assume nobody writes meanwhile: a writer that starts during
    a lookup can fail that lookup, never the database.

    Raises `NoDatabase` if there is no file, and `DatabaseUnreadable` (one line, with
    the fix) if it cannot be read as it is.
    """
    file = Path(path)
    _refuse_folder(file)
    if not file.is_file():
        raise NoDatabase(file)
    sidecars = (file.with_name(file.name + suffix) for suffix in ("-wal", "-shm", "-journal"))
    if not any(sidecar.exists() for sidecar in sidecars):
        # Nothing pending, nobody connected: read it as it is, and create no -wal/-shm.
        return _checked(file, _connect(file, immutable=True))
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
    return _checked(file, connection)


def open_reader(path: str) -> Store:
    """A plain read-only connection to the database file at `path` (SQLite's `mode=ro`,
    with the busy timeout), for a process that reads while another writes: no
    migration, no check of the schema."""
    connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
    connection.execute(f"PRAGMA busy_timeout = {store.BUSY_TIMEOUT_MS}")
    return Store(Database(connection, execute_plugins=PLUGINS))


def database_file(db: Store) -> str | None:
    """The main database's file, or None for an in-memory database or PostgreSQL."""
    if db.dialect != "sqlite":
        return None
    for row in db.execute("PRAGMA database_list").fetchall():
        if row[1] == "main" and row[2]:
            return str(row[2])
    return None


@contextlib.contextmanager
def page_cache(db: Store, kib: int) -> Iterator[None]:
    """At least `kib` KiB of SQLite page cache for this connection while the block runs,
    then the connection's own setting again. It caches only: no data, durability or
    locking changes. PostgreSQL's cache is the server's: nothing to do."""
    if db.dialect != "sqlite":
        yield
        return
    before = int(db.execute("PRAGMA cache_size").fetchone()[0])  # < 0: KiB; > 0: pages
    page_kib = int(db.execute("PRAGMA page_size").fetchone()[0]) // 1024 or 1
    if (-before if before < 0 else before * page_kib) >= kib:
        yield
        return
    db.execute(f"PRAGMA cache_size = {-int(kib)}")
    try:
        yield
    finally:
        db.execute(f"PRAGMA cache_size = {before}")


def _checked(file: Path, connection: sqlite3.Connection) -> Store:
    """The database on `connection`, if its schema is current (it cannot be migrated)."""
    db = Database(connection, execute_plugins=PLUGINS)
    pending = [m.name for m in migrations.pending(db)]
    if pending:
        raise DatabaseUnreadable(
            f"{file} is read-only and needs an upgrade ({', '.join(pending)}); "
            "run any paperboy command on it once with write access"
        )
    return Store(db)
