"""The `/papers` command group for Discord, built from the core grammar's declaration
(`digests.commands.grammar.VERBS`): the callbacks only turn options back into command
text for the core's `handle`."""

from __future__ import annotations

import asyncio
import io
import logging
from functools import cache
from typing import Any

import discord
from discord import app_commands

from bot.services import Services
from db.channels import active_subscriptions, custom_texts
from digests.actions import user_key
from digests.channels import personal_channel
from digests.commands import handle
from digests.commands.grammar import (
    ME_FLAG,
    VERBS_BY_NAME,
    ParseError,
    Verb,
    field_text,
    parse,
)
from digests.failures import FAILURE, failure_text, log_failure
from digests.render import discord as discord_render
from digests.replies import Reply, error
from digests.safe_text import has_unsafe
from digests.schedule import timezone_names

log = logging.getLogger(__name__)

ACK_BUDGET_SECONDS = 2.0
MAX_CHOICES = 25  # n.b. Discord caps autocomplete at 25 choices
NEEDS_MANAGE_CHANNELS = (
    "Sorry, you need the Manage Channels permission to change this channel's topics, "
    "schedule or delivery. You can still use `/papers find`, `show`, `topics` and `list`."
)
WEEKDAY_CHOICES = [
    app_commands.Choice(name=name, value=name.lower())
    for name in (
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
        "Daily", "Weekdays",
    )
]  # fmt: skip
ON_OFF_CHOICES = [app_commands.Choice(name=name, value=name) for name in ("on", "off")]


FEEDBACK_TOPIC_ALONE = (
    "`/papers feedback` shows all of {whose} feedback (leave topic empty); to clear "
    "{topic}'s, choose action reset as well{who}."
)
RESET_CHOICES = [app_commands.Choice(name="reset", value="reset")]
EXPORT_CHOICES = [app_commands.Choice(name="export (BibTeX file)", value="export")]


def _manages_channels_for_reset(interaction: discord.Interaction[Any]) -> bool:
    """`feedback` reads, anyone may; `feedback reset` clears the channel's feedback: Manage
    Channels, as `has_permissions` checks it; with `me` only the user's own, which anyone
    may clear (`_manages_channels_or_me`)."""
    action = getattr(interaction.namespace, "action", None)
    # As the grammar reads it (`RESET`, ` reset`): discord.py does not hold an option to
    # its choices, so the check must not rely on the exact spelling.
    if not isinstance(action, str) or action.strip().lower() != "reset":
        return True
    return _manages_channels_or_me(interaction)


def _changes(text: str) -> bool:
    """Whether the command text changes the channel (its answer is public), as `handle`
    reads it; `--me` changes only the user's own digest, and a change with invisible
    characters is refused (`handle`), to the asker only."""
    if has_unsafe(text):
        return False
    try:
        return parse(text).needs_manager
    except ParseError:
        return False


def _verb(name: str) -> Verb:
    return VERBS_BY_NAME[name]


def _describe(name: str) -> dict[str, str]:
    return {param.name: param.help[:100] for param in _verb(name).params}


def _quoted(text: str) -> str:
    """An option's value as the grammar expects it (`field_text`): quoted when it has
    spaces or quotes, or is a word the grammar reads as `--me` (a value typed as `--me`
    or `—me` into an option is that option's value, never the flag: the `me` option is
    the flag); quotes the user put around it, plain or smart, are not doubled."""
    return field_text(text)


def _words(value: str, *before: str) -> str:
    """A topic option's value as the last, rest argument after `before` (the verb and
    any words before the topic). An option is one value, so its spaces need no quotes:
    the words go to the core unquoted, as typed after `/papers subscribe` on Slack (a
    catalog topic they name loosely is followed); quotes the user typed around them keep
    them free text. Words the grammar would not read back as they are without quotes (a
    `--me` in them, a `"` left open) are quoted instead (`_quoted`)."""
    words = " ".join(value.split())
    try:
        loose = parse(" ".join([*before, words]))
        whole = parse(" ".join([*before, _quoted(value)]))
    except ParseError:
        return _quoted(value)
    if loose.me or loose.quoted or loose.args != whole.args:
        return _quoted(value)
    return words


def channel_of(interaction: discord.Interaction[Any]) -> str:
    return f"discord:{interaction.guild_id}/{interaction.channel_id}"


def user_id_of(interaction: discord.Interaction[Any]) -> int | None:
    """The id of the user behind the interaction, or None: Discord sends `member` in a
    server and `user` in a DM; without it discord.py leaves `interaction.user` MISSING
    (no `id`), so nobody may be taken to have asked or clicked."""
    user_id = getattr(interaction.user, "id", None)
    return user_id if isinstance(user_id, int) else None


def key_of(interaction: discord.Interaction[Any]) -> str | None:
    """The asking user's key (`discord:USER`; Discord users are the same in every guild),
    or None when the interaction names no user (`user_id_of`) or no valid one."""
    user_id = user_id_of(interaction)
    try:
        return None if user_id is None else user_key("discord", None, str(user_id))
    except ValueError:
        return None


NO_USER = "Paperboy could not tell who sent that command. Nothing was changed."
ME_HELP = "Your own digest, sent to you as a direct message, instead of this channel's"


def _manages_channels_or_me(interaction: discord.Interaction[Any]) -> bool:
    """Manage Channels, as `has_permissions` checks it; not needed with `me`, which
    changes only the user's own digest (a personal subscription is not a channel change)."""
    if getattr(interaction.namespace, "me", False) is True:
        return True
    if interaction.permissions.manage_channels:
        return True
    raise app_commands.MissingPermissions(["manage_channels"])


UPLOAD_LIMIT = 10 * 1024 * 1024  # Discord's attachment limit without boosts ("10 MB")
TOO_BIG = (
    "Sorry: {name} would be {size}, more than the {limit} Discord lets Paperboy attach "
    "here, so nothing is attached. Whoever runs Paperboy can write it out on the server "
    "(`paperboy saved --user {key} --format bibtex` for your saved papers)."
)


def shown_size(size: int) -> str:
    """A file size as Discord shows it: "10 MB", "12.3 MB", "2 KB" (units of 1,024)."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f}".removesuffix(".0") + " MB"
    return f"{-(-size // 1024)} KB"


async def send_reply(interaction: discord.Interaction[Any], reply: Reply) -> None:
    """The reply as Discord messages: the first answers the interaction, the rest follow.
    A reply's attachment goes with the first, as a file (ephemeral when the reply is); a
    file over the upload limit Discord gives the interaction (`filesize_limit`; Discord
    refuses the whole answer, 413) is not sent: the first message says so instead."""
    for number, message in enumerate(discord_render.reply_messages(reply)):
        kwargs: dict[str, Any] = {
            "content": message.content or None,
            "embeds": [discord.Embed.from_dict(embed) for embed in message.embeds],
            "ephemeral": reply.ephemeral,
            "allowed_mentions": discord.AllowedMentions.none(),
        }
        if number == 0 and reply.attachment is not None:  # e.g. `saved export`'s BibTeX
            data = reply.attachment.content.encode()
            limit = getattr(interaction, "filesize_limit", None) or UPLOAD_LIMIT
            if len(data) <= limit:
                kwargs["file"] = discord.File(io.BytesIO(data), filename=reply.attachment.filename)
            else:
                log.info(
                    "discord: %s (%d bytes) is over the upload limit (%d): not attached",
                    reply.attachment.filename, len(data), limit,
                )  # fmt: skip
                kwargs["content"] = TOO_BIG.format(
                    name=reply.attachment.filename,
                    size=shown_size(len(data)),
                    limit=shown_size(limit),
                    key=key_of(interaction),
                )
        if number == 0 and not interaction.response.is_done():
            await interaction.response.send_message(**kwargs)
        else:
            await interaction.followup.send(**kwargs)


class PapersGroup(app_commands.Group):
    """`/papers <verb>`: one subcommand per verb of the grammar."""

    def __init__(self, services: Services, ack_budget: float = ACK_BUDGET_SECONDS) -> None:
        super().__init__(
            name="papers",
            description="Research papers: find them, follow topics, get a weekly or daily digest.",
            guild_only=True,
        )
        self.services = services
        self.ack_budget = ack_budget

    async def run(
        self, interaction: discord.Interaction[Any], verb: str, *parts: str, me: bool = False
    ) -> None:
        """Answer within Discord's 3 seconds: directly if quick, else defer, then follow up.
        `me`: the user's own digest (`--me`), answered only to them."""
        key = key_of(interaction)
        if key is None:  # nobody to act for (`user_id_of`): nothing is read or changed
            log.info("discord: /papers %s without a user refused", verb)
            await send_reply(interaction, error(NO_USER))
            return
        text = " ".join([verb, *([ME_FLAG] if me else []), *(part for part in parts if part)])
        channel = channel_of(interaction)
        user = f"@{interaction.user.name}"

        def work() -> Reply:
            return handle(text, self.services.context(channel, user, key))

        task = asyncio.ensure_future(self.services.in_thread(work))
        done, _ = await asyncio.wait({task}, timeout=self.ack_budget)
        if not done:
            # The defer decides who sees the answer: the channel only for a change
            # (`feedback` reads, `feedback reset` changes: `Command.changes`).
            public = _changes(text)
            await interaction.response.defer(ephemeral=not public, thinking=True)
        try:
            reply = await task
        except Exception as exc:
            log_failure(log, exc, "/papers %s failed", verb)
            reply = error(failure_text(exc))
        if reply.changed:
            # e.g. the scheduler picks up a new schedule at once. With `me` the change was
            # to the user's own digest (`handle` reads `--me` so), not the channel's.
            own = personal_channel(key) if me else None
            self.services.changed(own or channel)
        try:
            await send_reply(interaction, reply)
        except (ValueError, TypeError):  # a reply that would not render: say so, politely
            log.exception("/papers %s: the reply could not be rendered", verb)
            await send_reply(interaction, error(FAILURE))

    async def on_error(
        self, interaction: discord.Interaction[Any], err: app_commands.AppCommandError
    ) -> None:
        if isinstance(err, app_commands.MissingPermissions):
            reply = error(NEEDS_MANAGE_CHANNELS)
        elif isinstance(err, app_commands.NoPrivateMessage):
            reply = error("Paperboy works in server channels, not in direct messages.")
        else:
            log.error("/papers failed: %s: %s", type(err).__name__, err)
            reply = error(FAILURE)
        try:
            await send_reply(interaction, reply)
        except discord.HTTPException as exc:
            log.warning("could not tell the user about an error: %s", exc)

    # --- lookups -----------------------------------------------------------------

    @app_commands.command(name="help", description=_verb("help").help)
    @app_commands.describe(**_describe("help"))
    async def help_(
        self, interaction: discord.Interaction[Any], command: str | None = None
    ) -> None:
        await self.run(interaction, "help", command or "")

    @app_commands.command(name="find", description=_verb("find").help)
    @app_commands.describe(**_describe("find"))
    async def find(
        self, interaction: discord.Interaction[Any], query: app_commands.Range[str, 1, 300]
    ) -> None:
        await self.run(interaction, "find", query)

    @app_commands.command(name="show", description=_verb("show").help)
    @app_commands.describe(**_describe("show"))
    async def show(
        self, interaction: discord.Interaction[Any], id: app_commands.Range[str, 1, 64]
    ) -> None:
        await self.run(interaction, "show", _quoted(id))

    @app_commands.command(name="similar", description=_verb("similar").help)
    @app_commands.describe(**_describe("similar"))
    async def similar(
        self, interaction: discord.Interaction[Any], id: app_commands.Range[str, 1, 64]
    ) -> None:
        await self.run(interaction, "similar", _quoted(id))

    @app_commands.command(name="topics", description=_verb("topics").help)
    async def topics(self, interaction: discord.Interaction[Any]) -> None:
        await self.run(interaction, "topics")

    @app_commands.command(name="list", description=_verb("list").help)
    @app_commands.describe(me=ME_HELP)
    async def list_(self, interaction: discord.Interaction[Any], me: bool = False) -> None:
        await self.run(interaction, "list", me=me)

    @app_commands.command(name="digest", description=_verb("digest").help)
    @app_commands.describe(me=ME_HELP)
    async def digest(self, interaction: discord.Interaction[Any], me: bool = False) -> None:
        await self.run(interaction, "digest", "preview", me=me)

    @app_commands.command(name="status", description=_verb("status").help)
    @app_commands.describe(me=ME_HELP)
    async def status(self, interaction: discord.Interaction[Any], me: bool = False) -> None:
        await self.run(interaction, "status", me=me)

    @app_commands.command(name="sources", description=_verb("sources").help)
    async def sources(self, interaction: discord.Interaction[Any]) -> None:
        await self.run(interaction, "sources")

    # --- changes: Manage Channels, checked at run time -------------------------------
    # Discord honours default_member_permissions only on top-level commands, never on a
    # group's subcommands, so the check below is what enforces it.

    # `me` (the user's own digest) needs no permission: `_manages_channels_or_me`.

    @app_commands.command(name="subscribe", description=_verb("subscribe").help)
    @app_commands.describe(**_describe("subscribe"), me=ME_HELP)
    @app_commands.check(_manages_channels_or_me)
    async def subscribe(
        self,
        interaction: discord.Interaction[Any],
        topic: app_commands.Range[str, 1, 100],
        me: bool = False,
    ) -> None:
        await self.run(interaction, "subscribe", _words(topic, "subscribe"), me=me)

    @app_commands.command(name="unsubscribe", description=_verb("unsubscribe").help)
    @app_commands.describe(**_describe("unsubscribe"), me=ME_HELP)
    @app_commands.check(_manages_channels_or_me)
    async def unsubscribe(
        self,
        interaction: discord.Interaction[Any],
        topic: app_commands.Range[str, 1, 100],
        me: bool = False,
    ) -> None:
        await self.run(interaction, "unsubscribe", _words(topic, "unsubscribe"), me=me)

    @app_commands.command(name="schedule", description=_verb("schedule").help)
    @app_commands.describe(**_describe("schedule"), me=ME_HELP)
    @app_commands.choices(weekday=WEEKDAY_CHOICES)
    @app_commands.check(_manages_channels_or_me)
    async def schedule(
        self,
        interaction: discord.Interaction[Any],
        weekday: str,
        time: app_commands.Range[str, 1, 10],
        timezone: str | None = None,
        me: bool = False,
    ) -> None:
        await self.run(
            interaction, "schedule", _quoted(weekday), _quoted(time), _quoted(timezone or ""), me=me
        )

    @app_commands.command(name="backlog", description=_verb("backlog").help)
    @app_commands.describe(**_describe("backlog"), me=ME_HELP)
    @app_commands.choices(state=ON_OFF_CHOICES)
    @app_commands.check(_manages_channels_or_me)
    async def backlog(
        self, interaction: discord.Interaction[Any], state: str, me: bool = False
    ) -> None:
        await self.run(interaction, "backlog", _quoted(state), me=me)

    @app_commands.command(name="resume", description=_verb("resume").help)
    @app_commands.describe(me=ME_HELP)
    @app_commands.check(_manages_channels_or_me)
    async def resume(self, interaction: discord.Interaction[Any], me: bool = False) -> None:
        await self.run(interaction, "resume", me=me)

    # --- why, feedback, saved, bibtex (answers only the asker sees; a reset of feedback
    # is a change: Manage Channels, `_manages_channels_for_reset`) --------------------

    @app_commands.command(name="why", description=_verb("why").help)
    @app_commands.describe(**_describe("why"), me=ME_HELP)
    async def why(
        self,
        interaction: discord.Interaction[Any],
        id: app_commands.Range[str, 1, 64],
        me: bool = False,
    ) -> None:
        await self.run(interaction, "why", _quoted(id), me=me)

    @app_commands.command(name="feedback", description=_verb("feedback").help)
    @app_commands.describe(**_describe("feedback"), me=ME_HELP)
    @app_commands.choices(action=RESET_CHOICES)
    @app_commands.check(_manages_channels_for_reset)
    async def feedback(
        self,
        interaction: discord.Interaction[Any],
        action: str | None = None,
        topic: app_commands.Range[str, 1, 100] | None = None,
        me: bool = False,
    ) -> None:
        if topic and not action:
            # The grammar would read a lone topic as the action, and refuse it as one.
            alone = FEEDBACK_TOPIC_ALONE.format(
                topic=topic[:60],
                whose="your own digest's" if me else "this channel's",
                who="" if me else " (Manage Channels)",
            )
            await send_reply(interaction, error(alone))
            return
        chosen = _quoted(action or "")
        words = _words(topic, "feedback", chosen) if topic else ""
        await self.run(interaction, "feedback", chosen, words, me=me)

    @app_commands.command(name="saved", description=_verb("saved").help)
    @app_commands.describe(**_describe("saved"))
    @app_commands.choices(action=EXPORT_CHOICES)
    async def saved(self, interaction: discord.Interaction[Any], action: str | None = None) -> None:
        await self.run(interaction, "saved", action or "")

    @app_commands.command(name="bibtex", description=_verb("bibtex").help)
    @app_commands.describe(**_describe("bibtex"))
    async def bibtex(
        self, interaction: discord.Interaction[Any], id: app_commands.Range[str, 1, 64]
    ) -> None:
        await self.run(interaction, "bibtex", _quoted(id))

    # --- autocomplete --------------------------------------------------------------

    @subscribe.autocomplete("topic")
    async def subscribe_topics(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        """Catalog topics, then the free-text topics this channel has used before."""
        typed = current.lower().strip()
        channel = channel_of(interaction)
        own = await self.services.in_thread(lambda: custom_texts(self.services.db(), channel))
        choices = [
            app_commands.Choice(name=f"{topic.label} ({topic.id})"[:100], value=topic.id)
            for topic in self.services.catalog.topics
            if typed in topic.id or typed in topic.label.lower()
        ]
        choices += [
            app_commands.Choice(name=f'"{text}"'[:100], value=text[:100])
            for text in own
            if typed in text.lower()
        ]
        return choices[:MAX_CHOICES]

    @unsubscribe.autocomplete("topic")
    async def unsubscribe_topics(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        return await self.followed_topics(interaction, current)

    @feedback.autocomplete("topic")
    async def feedback_topics(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        """The channel's topics, as for unsubscribe: feedback is kept per topic."""
        return await self.followed_topics(interaction, current)

    async def followed_topics(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        """The channel's topics matching `current` (with `me`, the user's own digest's)."""
        typed = current.lower().strip()
        channel = channel_of(interaction)
        key = key_of(interaction)
        if key and getattr(interaction.namespace, "me", False) is True:  # the user's own topics
            channel = personal_channel(key) or channel
        rows = await self.services.in_thread(
            lambda: active_subscriptions(self.services.db(), channel)  # the thread's connection
        )
        choices = []
        for row in rows:
            if row["custom_text"]:
                # The text itself: `#N` means the N-th line of `list`, which can shift.
                name, value = f'"{row["custom_text"]}"', row["custom_text"]
            else:
                topic = self.services.catalog.get(row["topic_id"])
                name = f"{topic.label} ({topic.id})" if topic else row["topic_id"]
                value = row["topic_id"]
            if typed in name.lower():
                choices.append(app_commands.Choice(name=name[:100], value=value))
        return choices[:MAX_CHOICES]

    @schedule.autocomplete("timezone")
    async def timezones(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=zone, value=zone) for zone in matching_zones(current)]


@cache
def _all_zones() -> tuple[str, ...]:
    return tuple(timezone_names())  # the zones `schedule` accepts, no more


def matching_zones(typed: str) -> list[str]:
    """Up to 25 IANA zones for what the user typed: prefix matches first."""
    needle = typed.strip().lower().replace(" ", "_")
    zones = _all_zones()
    starts = [zone for zone in zones if zone.lower().startswith(needle)]
    contains = [zone for zone in zones if needle in zone.lower() and zone not in starts]
    return (starts + contains)[:MAX_CHOICES]


__all__ = ["PapersGroup", "matching_zones", "send_reply"]
