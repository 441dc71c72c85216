"""One connection type for db/ functions over SQLite or PostgreSQL: SQL written once with
`?` or `:name` placeholders, rows as dicts, write transactions, and the drivers' errors
raised as db.errors."""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from db.errors import Busy, Conflict, StorageError, Unavailable

if TYPE_CHECKING:
    import psycopg

    from db.lite import Database

log = logging.getLogger(__name__)

# How long a statement waits for another writer's lock before it is Busy, on both backends.
BUSY_TIMEOUT_MS = 10_000
Dialect = Literal["sqlite", "postgresql"]
Params = Sequence[Any] | Mapping[str, Any]
Row = dict[str, Any]

# What the translation must step over whole (quoted text, comments, casts) or rewrite.
_TOKEN = re.compile(
    r"""'(?:[^']|'')*'"""  # a string
    r'|"(?:[^"]|"")*"'  # a quoted name
    r"|--[^\n]*"  # a line comment
    r"|/\*.*?\*/"  # a block comment
    r"|\$\$.*?\$\$"  # a dollar-quoted body
    r"|\$(?P<tag>[A-Za-z_]\w*)\$.*?\$(?P=tag)\$"  # one with a tag: only its own tag closes it
    r"|::"  # a cast, not a parameter
    r"|\?"
    r"|:(?P<name>[A-Za-z_]\w*)"
    r"|(?P<user>(?<!\.)\b(?i:user)\b)",  # `x.user` is a column, even on PostgreSQL
    re.S,
)

# SQLite's primary result codes (sqlite3.h) for "another connection holds the lock".
_SQLITE_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
# PostgreSQL SQLSTATEs: try again later (lock timeout, deadlock, serialization failure).
_PG_BUSY = {"55P03", "40P01", "40001"}
# The server is shutting down, starting or cannot take connections now.
_PG_UNAVAILABLE = {"57P01", "57P02", "57P03"}
# What the server says when it refuses a connection for its settings, not for now: libpq
# gives no SQLSTATE before a connection is made (3D000, 28P01, 28000), only the message.
_PG_MISCONFIGURED = re.compile(
    r'FATAL:\s+(database ".*" does not exist|role ".*" does not exist'
    r'|password authentication failed.*|no pg_hba\.conf entry for .*|role ".*" is not permitted.*)'
)


class ReservedName(ValueError):
    """A statement names a column `user` without double quotes or a table before it:
    PostgreSQL reads a bare `user` as `current_user`, so `where user = ?` compares with the
    login name and finds nothing, without an error. Write `"user"` (or `t.user`)."""


def to_psycopg(sql: str) -> str:
    """`sql` with `?` as `%s` and `:name` as `%(name)s` outside strings, quoted names,
    comments and dollar-quoted bodies, and every other `%` doubled (psycopg reads `%`
    everywhere once a statement has parameters, and the Store always passes them).
    `::type` casts stay as they are. Write names with double quotes, never `[name]`.
    Every `?` outside those is a parameter, so jsonb's `?` operators cannot be written
    (use `jsonb_exists`), nor numbered `?1` (use `:name`). Raises `ReservedName` for a bare
    `user` (a qualified `t.user` is a column on both backends)."""
    return _scan(sql, True)


def check_sqlite(sql: str) -> str:
    """`sql` unchanged, once it is known to name no bare `user` (`ReservedName`): SQL is
    written once for both backends, so SQLite refuses what PostgreSQL would misread."""
    return _scan(sql, False)


@functools.lru_cache(maxsize=4096)
def _scan(sql: str, psycopg: bool) -> str:
    out: list[str] = []
    last = 0
    for match in _TOKEN.finditer(sql):
        text = match.group(0)
        if match.group("user"):
            raise ReservedName(f'write "user" in double quotes: {sql}')
        out.append(sql[last : match.start()].replace("%", "%%"))
        if text == "?":
            out.append("%s")
        elif match.group("name"):
            out.append(f"%({match.group('name')})s")
        else:
            out.append(text.replace("%", "%%"))
        last = match.end()
    if not psycopg:
        return sql
    out.append(sql[last:].replace("%", "%%"))
    return "".join(out)


class Result:
    """What `Store.execute` ran: its rows as tuples, in order, and the number of rows it
    changed (-1 when that means nothing)."""

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:  # like sqlite3, so that `.fetchone()[0]` reads as it did
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)


class Store:
    """A connection that db/ functions take: `execute` and `query` run one statement,
    `write()` groups statements in one transaction, `dialect` says which SQL a statement
    that differs must use. Outside `write()` each statement is its own transaction on
    both backends. Every driver error comes out as a `db.errors.StorageError`."""

    dialect: Dialect

    def __init__(self, conn: sqlite3.Connection | psycopg.Connection[Any] | Database) -> None:
        from db.lite import PLUGINS, Database

        self._sqlite: Database | None = None
        if isinstance(conn, Database):
            self._sqlite, conn = conn, conn.conn
        elif isinstance(conn, sqlite3.Connection):
            self._sqlite = Database(conn, execute_plugins=PLUGINS)
        self.conn = conn
        self.dialect = "sqlite" if isinstance(conn, sqlite3.Connection) else "postgresql"
        self._depth = 0
        # One flag per open write(): whether a statement failed in it (and was caught).
        self._failed: list[bool] = []

    @classmethod
    def connect(cls, url: str) -> Store:
        """A Store on the PostgreSQL server at `url` (a `postgresql://` URL), in autocommit
        mode: `write()` opens the transactions, and a statement waits for a lock as long as
        SQLite's busy timeout before it is `Busy`. Needs the `postgresql` extra. A server that
        cannot be reached is `Unavailable` (try again); an unknown database, role or a
        wrong password is a plain `StorageError` whose message says what to fix."""
        try:
            import psycopg
        except ImportError:
            raise StorageError(
                "PostgreSQL needs the postgresql extra: pip install '.[postgresql]'"
            ) from None
        try:
            conn = psycopg.connect(url, autocommit=True)
            try:
                # A writer waits for a row lock as long as SQLite's for its lock, then Busy.
                conn.execute(f"set lock_timeout = {int(BUSY_TIMEOUT_MS)}")
            except BaseException:
                conn.close()
                raise
            return cls(conn)
        except psycopg.Error as exc:
            refused = _PG_MISCONFIGURED.search(str(exc))
            if refused:
                raise StorageError(
                    f"PostgreSQL refused the connection: {refused.group(1).strip()}; fix the "
                    "database URL (its database, user or password): trying again will not help"
                ) from exc
            _raise_postgresql(exc)

    @property
    def sqlite(self) -> Database:
        """sqlite-utils' Database on this connection: SQLite's migrations and tools use it.
        A Store on PostgreSQL has none (TypeError)."""
        if self._sqlite is None:
            raise TypeError("a Store on PostgreSQL has no sqlite-utils Database")
        return self._sqlite

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (SQLite may end one by itself: a full disk or an
        I/O error rolls it back; on PostgreSQL a failed statement leaves it open, spoilt)."""
        if isinstance(self.conn, sqlite3.Connection):
            return self.conn.in_transaction
        from psycopg import pq

        return bool(self.conn.info.transaction_status != pq.TransactionStatus.IDLE)

    def close(self) -> None:
        self.conn.close()

    # The steps of write(), one at a time, for a batch of changes in one transaction, each
    # in its own savepoint (bot/services.py). Names are our code's, never input.
    def begin(self) -> None:
        """Open a write transaction (SQLite: BEGIN IMMEDIATE, waiting for the write lock)."""
        with self._mapped():
            self.conn.execute("BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN")

    def savepoint(self, name: str) -> None:
        with self._mapped():
            self.conn.execute(f"SAVEPOINT {name}")

    def release(self, name: str) -> None:
        """Keep what was done since the savepoint `name`, and end it."""
        with self._mapped():
            self.conn.execute(f"RELEASE SAVEPOINT {name}")

    def undo(self, name: str) -> None:
        """Undo what was done since the savepoint `name`, and end it."""
        with self._mapped():
            self.conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self.conn.execute(f"RELEASE SAVEPOINT {name}")

    def commit(self) -> None:
        with self._mapped():
            self.conn.commit()

    def rollback(self) -> None:
        """Undo the open transaction, if any."""
        with self._mapped():
            self.conn.rollback()

    def execute(self, sql: str, params: Params = ()) -> Result:
        """Run one statement; its rows as tuples and its row count."""
        with self._statement():
            _, rows, count = self._run(sql, params)
        return Result(rows, count)

    # Table and column names below are our code's, never input; values are parameters.
    def insert(
        self, table: str, row: Mapping[str, Any], *, ignore: bool = False, returning: str = ""
    ) -> Any:
        """Insert `row`; with `ignore`, a row whose unique key is stored already is left
        out. With `returning`, the value of that column in the new row (None if left out)."""
        names = ", ".join(_quoted(name) for name in row)
        marks = ", ".join("?" for _ in row)
        sql = f"insert into {table} ({names}) values ({marks})"
        if ignore:
            sql += " on conflict do nothing"
        if returning:
            found = self.execute(f"{sql} returning {_quoted(returning)}", list(row.values()))
            first = found.fetchone()
            return None if first is None else first[0]
        self.execute(sql, list(row.values()))
        return None

    def update(self, table: str, key: Mapping[str, Any], values: Mapping[str, Any]) -> int:
        """Set `values` in the rows whose columns equal `key`; how many rows that was."""
        if not values:
            return 0
        sets = ", ".join(f"{_quoted(name)} = ?" for name in values)
        where = " and ".join(f"{_quoted(name)} = ?" for name in key)
        params = [*values.values(), *key.values()]
        return self.execute(f"update {table} set {sets} where {where}", params).rowcount

    def upsert(self, table: str, row: Mapping[str, Any], key: Sequence[str]) -> None:
        """Insert `row`, or update the stored row with the same `key` columns to it."""
        names = ", ".join(_quoted(name) for name in row)
        marks = ", ".join("?" for _ in row)
        conflict = ", ".join(_quoted(name) for name in key)
        sets = ", ".join(
            f"{_quoted(name)} = excluded.{_quoted(name)}" for name in row if name not in key
        )
        action = f"do update set {sets}" if sets else "do nothing"
        self.execute(
            f"insert into {table} ({names}) values ({marks}) on conflict ({conflict}) {action}",
            list(row.values()),
        )

    def one(self, sql: str, params: Params = ()) -> Row | None:
        """Run one statement; its first row as a dict, or None if it has none."""
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def iterate(self, sql: str, params: Params = ()) -> Iterator[Row]:
        """Run one statement and yield its rows as dicts as they come, without holding them
        all (a scan of every paper). Read the rows before the next statement on this Store."""
        with self._statement():
            if isinstance(self.conn, sqlite3.Connection):
                found = self.conn.execute(check_sqlite(sql), params)
                columns = [column[0] for column in found.description or ()]
                for values in found:
                    yield dict(zip(columns, values, strict=True))
                return
            with self.conn.cursor() as cursor:
                names: list[str] | None = None
                for row in cursor.stream(to_psycopg(sql), params, size=1000):
                    if names is None:
                        names = [column.name for column in cursor.description or ()]
                    yield dict(zip(names, row, strict=True))

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement once per parameter set in `rows`, in one transaction (the open
        one, if any)."""
        if not self.in_transaction:
            with self.write():
                self.executemany(sql, rows)
            return
        with self._statement():
            if isinstance(self.conn, sqlite3.Connection):
                self.conn.executemany(check_sqlite(sql), rows)
            else:
                with self.conn.cursor() as cursor:
                    cursor.executemany(to_psycopg(sql), rows)

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement; its rows as dicts of column name to value, in order."""
        with self._statement():
            names, rows, _ = self._run(sql, params)
        return [dict(zip(names, row, strict=True)) for row in rows]

    @contextlib.contextmanager
    def write(self) -> Iterator[Store]:
        """One write transaction: committed when the block ends, rolled back if it raises.
        SQLite begins it with BEGIN IMMEDIATE, so it waits for the write lock up front;
        PostgreSQL with BEGIN, and writers meet at row locks. Inside another transaction
        it is a savepoint: an error undoes only the block's own writes.

        A statement that fails spoils its whole transaction on PostgreSQL (its COMMIT
        becomes a ROLLBACK), so an error may be caught only around a nested `write()`:
        a block that caught a failed statement of its own and ended normally raises
        `StorageError` and stores nothing, on both backends."""
        with self._mapped():
            if isinstance(self.conn, sqlite3.Connection):
                with self._sqlite_transaction(self.conn):
                    yield from self._checked_block()
            else:
                with self.conn.transaction():
                    yield from self._checked_block()

    def _checked_block(self) -> Iterator[Store]:
        self._failed.append(False)
        try:
            yield self
        finally:
            failed = self._failed.pop()
        if failed or self._postgresql_in_error():
            raise StorageError(
                "a statement failed inside write() and its error was caught: nothing of the "
                "block was stored (catch an error only around a nested write())"
            )

    def _postgresql_in_error(self) -> bool:
        if isinstance(self.conn, sqlite3.Connection):
            return False
        from psycopg import pq

        return bool(self.conn.info.transaction_status == pq.TransactionStatus.INERROR)

    @contextlib.contextmanager
    def _sqlite_transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        nested = conn.in_transaction
        name = f"store_{self._depth}"
        conn.execute(f"SAVEPOINT {name}" if nested else "BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
        except BaseException:
            if nested:
                conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                conn.execute(f"RELEASE SAVEPOINT {name}")
            elif conn.in_transaction:  # SQLite may have rolled back by itself (disk full)
                conn.rollback()
            raise
        else:
            if nested:
                conn.execute(f"RELEASE SAVEPOINT {name}")
            else:
                conn.commit()
        finally:
            self._depth -= 1

    def _run(self, sql: str, params: Params) -> tuple[list[str], list[Any], int]:
        """The statement's column names, all its rows, and its row count."""
        if not isinstance(self.conn, sqlite3.Connection):
            cursor = self.conn.execute(to_psycopg(sql), params)
            names = [column.name for column in cursor.description or ()]
            return names, cursor.fetchall() if names else [], cursor.rowcount
        conn = self.conn
        opened = not conn.in_transaction
        try:
            found = conn.execute(check_sqlite(sql), params)
            names = [column[0] for column in found.description or ()]
            result = names, found.fetchall(), found.rowcount
        except BaseException:
            if opened and conn.in_transaction:
                conn.rollback()
            raise
        # Python's sqlite3 opens a transaction before a change and leaves it open: outside
        # write() a statement commits at once, as on PostgreSQL.
        if opened and conn.in_transaction and not self._depth:
            conn.commit()
        return result

    @contextlib.contextmanager
    def _statement(self) -> Iterator[None]:
        """`_mapped`, and a failure marks the innermost open write() as failed."""
        try:
            with self._mapped():
                yield
        except StorageError:
            if self._failed:
                self._failed[-1] = True
            raise

    @contextlib.contextmanager
    def _mapped(self) -> Iterator[None]:
        try:
            yield
        except StorageError:
            raise
        except sqlite3.Error as exc:
            _raise_sqlite(exc)
        except Exception as exc:
            if self.dialect == "postgresql":
                import psycopg

                if isinstance(exc, psycopg.Error):
                    _raise_postgresql(exc)
            raise


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _raise_sqlite(exc: sqlite3.Error) -> NoReturn:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in _SQLITE_BUSY:
        raise Busy(str(exc)) from exc
    if isinstance(exc, sqlite3.IntegrityError):
        raise Conflict(str(exc)) from exc
    raise StorageError(str(exc)) from exc


def _raise_postgresql(exc: psycopg.Error) -> NoReturn:
    import psycopg

    state = exc.sqlstate or ""
    message = " ".join(str(exc).split())  # libpq's hints come on lines of their own
    if state in _PG_BUSY:
        raise Busy(message) from exc
    if state in _PG_UNAVAILABLE or state.startswith("08"):
        raise Unavailable(message) from exc
    # No SQLSTATE: the client's own failure (no connection made, or it was lost).
    if not state and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        raise Unavailable(message) from exc
    if state.startswith("23"):
        raise Conflict(message) from exc
    raise StorageError(message) from exc
