"""What the commands share: the `--db` and `--channel` options, the database they open,
the acting user, the clock, and the command Context of a channel."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bot.cli.output import READ_ONLY, UserError
from config.settings import Settings, load_settings
from db.connection import (
    DatabaseUnreadable,
    NoDatabase,
    Target,
    hide_password,
    is_postgresql,
    open_db,
)
from db.errors import StorageError, Unavailable

if TYPE_CHECKING:
    from db.store import Store
    from digests.commands import Context

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
DB_HELP = (
    "SQLite database file, or a postgresql:// URL "
    "[default: $PAPERBOY_DATABASE_URL, else $PAPERBOY_DB, else db/paperboy.db]."
)


class DatabaseParam(click.ParamType):  # type: ignore[type-arg]
    """`--db`: a SQLite file's path (a Path), or a PostgreSQL URL kept as it is (a str)."""

    name = "FILE|URL"
    _file = click.Path(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and is_postgresql(value):
            return value
        return self._file.convert(value, param, ctx)


DATABASE = DatabaseParam()


def db_option(func: F) -> F:
    """`--db` after the command; `main` takes it before the command too (`database_path`)."""
    return click.option(
        "--db",
        "db_path",
        type=DATABASE,
        default=None,
        help=DB_HELP,
    )(func)


def channel_option(func: F) -> F:
    return click.option(
        "--channel",
        required=True,
        help="local:NAME, slack:TEAM/CHANNEL or discord:GUILD/CHANNEL.",
    )(func)


def database_path(db_path: Target | None) -> Target:
    """The database to use: `--db` after the command, else before it, else the settings
    (`Settings.database`): a file's Path or a PostgreSQL URL."""
    current = click.get_current_context(silent=True)
    before = current.find_root().params.get("db_path") if current is not None else None
    if db_path and before and str(db_path) != str(before):
        shown = [hide_password(str(given)) for given in (before, db_path)]
        raise UserError(f"--db is given twice, as {shown[0]} and as {shown[1]}: give it once")
    given = db_path or before
    if given is None:
        return load_settings().database
    return given if is_postgresql(given) else Path(given)


def open_database(db_path: Target | None, *, create: bool = False) -> Store:
    """The database for a command. Only commands that store things (`ingest`, `demo`,
    `run`, changes through `chat`) pass `create=True`; the others say there is no
    database at PATH rather than create an empty one, and read a read-only one."""
    path = database_path(db_path)
    try:
        return open_db(path, create=create)
    except NoDatabase:
        demo = load_settings().demo_db
        hint = (
            f"; the demo's papers are in {demo} (--db {quote(str(demo))})" if demo.exists() else ""
        )
        raise UserError(
            f"no database at {path}; create one with `paperboy ingest FILE` "
            f"(or check --db and $PAPERBOY_DB){hint}"
        ) from None
    except DatabaseUnreadable as exc:
        raise UserError(str(exc)) from None
    except Unavailable as exc:
        raise UserError(f"database unavailable, try again ({exc})") from None
    except (sqlite3.Error, StorageError) as exc:
        if "readonly" in str(exc):
            raise UserError(READ_ONLY.format(path=path)) from None
        raise UserError(f"cannot open database {hide_password(str(path))}: {exc}") from None


def now() -> datetime:
    return datetime.now(UTC)


def cli_user() -> str:
    """Who acts on the command line: `cli:LOGIN`."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no login name (containers): still say who acted
        return "cli:operator"


def local_key(user: str) -> str | None:
    """The user key of a command-line user (`local:NAME`, NAME without `cli:`), for the
    commands about a person (`saved`); None when the name cannot be a key."""
    from digests.actions import user_key

    try:
        return user_key("local", None, user.removeprefix("cli:"))
    except ValueError:
        return None


def command_context(db: Store, channel: str, user: str, settings: Settings) -> Context:
    """The Context of a /papers command typed by `user` in `channel`, now."""
    from digests.channels import parse_channel
    from digests.commands import Context
    from digests.topics import load_catalog

    return Context(
        db, str(parse_channel(channel)), user, now(), settings, load_catalog(), local_key(user)
    )
