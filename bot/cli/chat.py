"""`paperboy chat`: a /papers command as if typed in a channel, and its reply."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import click

from bot.cli.options import (
    channel_option,
    cli_user,
    command_context,
    database_path,
    db_option,
    local_key,
    open_database,
)
from bot.cli.output import UserError, echo
from config.settings import load_settings
from db.connection import Target, open_db
from digests.safe_text import is_text, strip_unsafe

if TYPE_CHECKING:
    from db.store import Store

log = logging.getLogger(__name__)


@click.command()
@channel_option
@click.option("--user", default=None, help="Who is acting [default: cli:$USER].")
@click.argument("text", nargs=-1, required=True)
@db_option
def chat(channel: str, user: str | None, text: tuple[str, ...], db_path: Target | None) -> None:
    """Run a /papers command as if typed in CHANNEL, and print the reply.

    Example: paperboy chat --channel local:lab "subscribe offline-rl"
    """
    from digests.commands import handle
    from digests.render.text import reply_text

    settings = load_settings()
    command = " ".join(text)
    if user is not None and not is_text(user):
        raise UserError("--user has bytes that are not valid text (UTF-8); type the name again")
    if user and local_key(user) is None and verb_of(command) == "saved":
        # The reply would say "I can't tell who you are here ... use Slack or Discord":
        # on the command line the cause is the name, which cannot be a key.
        raise UserError(
            f"--user {user[:40]!r} cannot name a saved list (local:NAME): use letters, "
            "digits, '.', '_' or '-'"
        )
    db = chat_database(command, db_path)
    reply = handle(command, command_context(db, channel, user or cli_user(), settings))
    echo(reply_text(reply))
    if reply.attachment is not None:  # e.g. `saved export`: the file's text follows
        echo()
        echo(reply.attachment.content.rstrip("\n"))
    if reply.error:
        sys.exit(2)


def verb_of(command: str) -> str | None:
    """The name of the command's verb (`saved`), or None if it does not parse."""
    from digests.commands import ParseError, parse

    try:
        return parse(strip_unsafe(command)).verb.name
    except ParseError:
        return None


def chat_database(command: str, db_path: Target | None) -> Store:
    """A change (`subscribe` …) may create the database, as a new user's first step may be
    to subscribe a channel; `help` (and a command that does not parse) needs none; any
    other command needs an existing one, which it only reads (so a read-only one will
    do). Whether the command changes anything is the parsed command's `changes`, not its
    verb's: `feedback` reads, only `feedback reset` changes."""
    from digests.commands import ParseError, parse

    try:
        parsed = parse(strip_unsafe(command))
    except ParseError:
        parsed = None
    target = database_path(db_path)
    stored = isinstance(target, str) or target.is_file()  # a URL: the server's database
    if (parsed is None or parsed.verb.name == "help") and not stored:
        return open_db(":memory:")
    return open_database(db_path, create=parsed is not None and parsed.changes)
