"""`handle(text, ctx)`: parse one command and run its handler; all a front end calls."""

from __future__ import annotations

import dataclasses
import logging

# Imported for the handlers they register (`digests.commands.registry`).
import digests.commands.channel
import digests.commands.feedback
import digests.commands.help
import digests.commands.papers
import digests.commands.personal
import digests.commands.saved  # noqa: F401 (all six: used for what importing them does)
from digests.channels import ChannelError, parse_channel
from digests.commands.context import Context, schedule_suggestion
from digests.commands.grammar import COMMAND, ME_FLAG, ParseError, parse
from digests.commands.registry import HANDLERS, PERSONAL_HANDLERS, check
from digests.replies import Reply, error
from digests.safe_text import has_unsafe, is_text, strip_unsafe

log = logging.getLogger(__name__)

UNSAFE_CHANGE = (
    "Topic names and schedules can't contain invisible or control characters "
    "(bidi overrides, zero-width spaces, terminal escapes)."
)
check()


def handle(text: str, ctx: Context) -> Reply:
    """Parse and run one command. Bad input of any kind becomes a helpful Reply.

    Invisible and control characters (`digests.safe_text`) are dropped from lookups
    (pasted text often carries zero-width spaces), and refused, with one message, in
    commands that change the channel: those are stored and told to everyone. Every
    answer about a user's own digest (`--me`, or `ctx.channel` a personal reference) is
    `ephemeral`, whatever the handler said: adapters show it to the asker only.
    """
    try:
        parse_channel(ctx.channel)
    except ChannelError as exc:
        return error(str(exc))
    if not is_text(text):
        return error("That command has a character I cannot read; please type it again.")
    personal = parse_channel(ctx.channel).personal
    try:
        command = parse(strip_unsafe(text), personal)
    except ParseError as exc:
        return _parse_error(exc, ctx, personal)
    if has_unsafe(text) and command.changes:
        # Told to the whole channel and stored: refuse rather than guess what was meant.
        return error(UNSAFE_CHANGE, "Please type it again without them.")
    log.info("command %s in %s by %s", command.verb.name, ctx.channel, ctx.user)
    handler = HANDLERS[command.verb.name]
    if command.me:  # `help --me` has none: `help` words itself for one's own digest
        handler = PERSONAL_HANDLERS.get(command.verb.name, handler)
    if command.changes:
        # Check-then-write (already subscribed? too many topics?) as one transaction, so two
        # people typing at once cannot both pass the check.
        with ctx.db.write():
            reply = handler(command, ctx)
    else:
        reply = handler(command, ctx)
    if not reply.ephemeral and (command.me or personal):
        # A user's own digest is theirs alone, and so is every answer about it (a backlog
        # turned on, feedback reset): typed in a Slack DM with someone else, which acts on
        # the user's own digest, a public answer would be posted for the other person too.
        reply = dataclasses.replace(reply, ephemeral=True)
    return reply


def _parse_error(exc: ParseError, ctx: Context, personal: bool = False) -> Reply:
    """A command that does not parse, in one line: an unknown verb gets the one meant
    and where the list is, not the list; a `schedule` said in plain English, the command
    it means (`schedule_suggestion`). `personal`: typed where commands act on the user's
    own digest."""
    if exc.verb is not None:
        meant = schedule_suggestion(exc.given, exc.me, ctx) if exc.verb.name == "schedule" else None
        return error(meant or exc.message)
    flag = f" {ME_FLAG}" if exc.me and not personal else ""
    helps = f"`{COMMAND} help{flag}` lists all commands"
    if exc.suggestion:
        return error(f"{exc.message} Did you mean `{COMMAND} {exc.suggestion}`? ({helps})")
    return error(f"{exc.message} {helps}.")
