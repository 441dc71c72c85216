"""`help`: the commands, or one in full; worded for the channel, or for the user's own
digest where commands act on it (`help --me`, or a personal reference)."""

from __future__ import annotations

import dataclasses
import logging

from digests.channels import parse_channel
from digests.commands.context import Context
from digests.commands.grammar import (
    COMMAND,
    ME_FLAG,
    VERBS,
    VERBS_BY_NAME,
    Command,
    Verb,
    help_lines,
    verb_meant,
)
from digests.commands.registry import handler_for
from digests.replies import Reply, error, info

log = logging.getLogger(__name__)

# `help` where every command acts on the user's own digest (the Slack DM with the app, or
# any DM: bot.slack.app reads those as the user's personal reference).
PERSONAL_INTRO = (
    "Paperboy finds papers and sends you a personal digest of new ones (weekly, daily or on "
    "weekdays) as a direct message, for the topics you follow. Here every command is about "
    "your own digest, and only you see the answers. Commands:"
)
PERSONAL_HERE = "Here it acts on your personal digest; only you see the answer."
ME_INTRO = (
    "Your personal digest comes to you as a direct message, for the topics you follow. In "
    f"a channel, add `{ME_FLAG}` to act on it (anyone may; only you see the answers):"
)


@handler_for("help")
def _help(command: Command, ctx: Context) -> Reply:
    """The commands, or one command in full; worded for the user's own digest where the
    commands act on it (`ctx.channel` a personal reference) or when asked so (`help
    --me`), for the channel elsewhere."""
    name = command.args.get("command", "").lower().removeprefix(COMMAND).strip()
    personal = parse_channel(ctx.channel).personal
    if command.me and not personal:
        # In a channel the commands act on the channel: `help --me` lists the ones that
        # take `--me`, with it, as they act on one's own digest.
        return _help_me(name, command, ctx)
    if not name:
        return info(
            PERSONAL_INTRO
            if personal
            else "Paperboy finds papers and posts a digest of new ones (weekly, daily or on "
            "weekdays) for this channel's topics. Commands:",
            *help_lines(personal),
            f"Start with `{COMMAND} topics`, then `{COMMAND} subscribe offline-rl`.",
        )
    verb = VERBS_BY_NAME.get(name)
    if verb is None:
        if meant := verb_meant(name):
            return error(
                f"There is no command {name[:40]!r}. Did you mean `{COMMAND} help {meant}`?"
            )
        return error(f"There is no command {name[:40]!r}.", *help_lines(personal))
    lines = [f"`{verb.usage_for(personal)}`", verb.help_for(personal)]
    lines += [f"  {param.name}: {param.help_for(personal)}" for param in verb.params]
    if personal:
        if verb.example:
            lines.append(f"Example: `{COMMAND} {verb.example}`")
        if verb.changes:
            lines.append(PERSONAL_HERE)
        return info(f"How to use `{verb.name}`:", *lines)
    if verb.personal:
        lines.append(
            f"  {ME_FLAG}: your own digest (it comes as a direct message) instead of the "
            "channel's; anyone may, and only you see the answer."
        )
    if verb.example:
        lines.append(f"Example: `{COMMAND} {verb.example}`")
    marked = [choice for param in verb.params if param.changes for choice in param.choices]
    # A personal verb's --me line says that one is only yours.
    without = f"Without `{ME_FLAG}`, " if verb.personal else ""
    if marked:  # only a sub-word changes the channel (`feedback reset`)
        words = " or ".join(f"`{verb.name} {choice}`" for choice in marked)
        lines.append(f"{without}{words} changes the channel's settings, so the channel sees it.")
    elif verb.changes:
        this = "this" if verb.personal else "This"
        lines.append(f"{without}{this} changes the channel's settings, so the channel sees it.")
    return info(f"How to use `{verb.name}`:", *lines)


def _me_usage(verb: Verb) -> str:
    """The verb's usage with `--me` given, as typed in a channel for one's own digest."""
    return " ".join([COMMAND, verb.name, ME_FLAG, *(param.usage for param in verb.params)])


def _help_me(name: str, command: Command, ctx: Context) -> Reply:
    """`help --me` typed in a channel: the commands that take `--me` (or one of them), with
    it and worded for one's own digest (`Verb.mine`). Another command is the same for
    everyone: its usual help."""
    if not name:
        return info(
            ME_INTRO,
            *(f"`{_me_usage(verb)}`  {verb.help_for(True)}" for verb in VERBS if verb.personal),
            f"Start with `{COMMAND} topics`, then `{COMMAND} subscribe {ME_FLAG} offline-rl`.",
        )
    verb = VERBS_BY_NAME.get(name)
    if verb is None or not verb.personal:
        return _help(dataclasses.replace(command, me=False), ctx)
    lines = [f"`{_me_usage(verb)}`", verb.help_for(True)]
    lines += [f"  {param.name}: {param.help_for(True)}" for param in verb.params]
    if verb.example:
        verb_name, _, rest = verb.example.partition(" ")
        lines.append(f"Example: `{' '.join([COMMAND, verb_name, ME_FLAG, rest]).strip()}`")
    lines.append(
        f"Only you see the answer; without `{ME_FLAG}` it is about the channel "
        f"(`{COMMAND} help {verb.name}`)."
    )
    return info(f"How to use `{verb.name} {ME_FLAG}`:", *lines)
