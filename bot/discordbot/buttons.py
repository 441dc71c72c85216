"""The buttons of Discord digest messages: 👍, 👎 and 🔖 Save, working after restarts too,
and a polite answer to a click on any component that is not Paperboy's."""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from typing import Any, cast

import aiohttp
import discord

from bot.discordbot.commands import ACK_BUDGET_SECONDS, channel_of, key_of, user_id_of
from digests.actions import (
    CUSTOM_ID_TEMPLATE,
    ActionResult,
    apply_action,
    digest_counts,
    parse_custom_id,
    parse_item_ref,
)
from digests.channels import personal_channel
from digests.failures import failure_text, log_failure
from digests.render.discord import LINK, with_counts

log = logging.getLogger(__name__)

STRAY = "That button is not one of Paperboy's, or it no longer works. Nothing was changed."
NO_USER = "Paperboy could not tell who clicked that button. Nothing was changed."
_TEMPLATE = re.compile(CUSTOM_ID_TEMPLATE, re.ASCII)
BUTTON = 2  # Discord's component type of a button
# What answering a click can raise: Discord's refusal, or the connection failing (discord.py
# retries neither a lost connection nor a timeout of an interaction's answer).
_ANSWER_FAILED = (discord.HTTPException, aiohttp.ClientError, OSError)


class DigestButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=_TEMPLATE):
    """👍, 👎 or 🔖 on a digest item: any custom_id `digests.actions.custom_id` writes
    ("pb:up:123:p380c62ca5bf30379"). Registered on the client (`add_dynamic_items`), it
    handles a click on any digest message, however old, with no view kept per message."""

    def __init__(self, button: discord.ui.Button[Any]) -> None:
        super().__init__(button)

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> DigestButton:
        """The clicked button as it is on the message (label, style): nothing is read here,
        the click is checked by `apply_action`. Never raises (discord.py would log it)."""
        if isinstance(item, discord.ui.Button):
            return cls(item)
        return cls(discord.ui.Button(custom_id=match.group(0)))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await handle_click(interaction, self.custom_id)


def view_of(rows: list[dict[str, Any]]) -> discord.ui.View:
    """A view of action rows given as JSON (the renderer's, or a message's own): Paperboy's
    buttons as `DigestButton`s (a view of those and links only is not kept per message by
    discord.py: `DigestButton`'s template serves them all), link buttons as links."""
    view = discord.ui.View(timeout=None)
    for number, row in enumerate(rows):
        for spec in row.get("components", []):
            style = discord.ButtonStyle(int(spec.get("style", 2)))
            label = spec.get("label")
            if style.value == LINK:
                view.add_item(
                    discord.ui.Button(style=style, label=label, url=spec["url"], row=number)
                )
                continue
            button: discord.ui.Button[Any] = discord.ui.Button(
                style=style,
                label=label,
                custom_id=spec["custom_id"],
                disabled=bool(spec.get("disabled", False)),
                row=number,
            )
            if _TEMPLATE.fullmatch(spec["custom_id"]):
                view.add_item(DigestButton(button))
            else:  # not ours (nothing renders such a button): shown as it was
                view.add_item(button)
    return view


def _message_rows(message: discord.Message | None) -> list[dict[str, Any]]:
    if message is None:
        return []
    # discord.py types a row's JSON as a TypedDict; it is a plain dict.
    return [
        cast(dict[str, Any], row.to_dict())
        for row in message.components
        if isinstance(row, discord.ActionRow)
    ]


def takes(interaction: discord.Interaction[Any]) -> bool:
    """Whether discord.py hands this component interaction to a `DigestButton`: its
    custom_id has the template's shape and is a button on the message clicked (as
    `discord.ui.view.ViewStore.schedule_dynamic_item_call` requires)."""
    data: Any = interaction.data or {}
    custom = data.get("custom_id")
    if data.get("component_type") != BUTTON or not isinstance(custom, str):
        return False
    if not _TEMPLATE.fullmatch(custom):
        return False
    return any(
        button.get("custom_id") == custom and button.get("type") == BUTTON
        for row in _message_rows(interaction.message)
        for button in row.get("components", [])
    )


def click_channel(interaction: discord.Interaction[Any]) -> str:
    """The channel reference a click belongs to: the server channel it happened in, or,
    in a direct message with the bot (no server), the clicker's own personal digest
    (`discord:@USER`): nobody else can click in that DM. A click from within a
    thread on the message the thread was started from belongs to the thread's parent
    (`_starter_parent`)."""
    key = key_of(interaction) if interaction.guild_id is None else None
    return (
        (key and personal_channel(key)) or _starter_parent(interaction) or channel_of(interaction)
    )


def _starter_parent(interaction: discord.Interaction[Any]) -> str | None:
    """The parent channel of the thread a click came from, when the message clicked is
    that thread's starter (it has the thread's id, and stays in the parent channel); else
    None. Discord's docs do not say which channel such a click carries, so only the
    starter counts: any other message clicked in a thread keeps the thread's id, and
    `apply_action` refuses it as another channel's digest."""
    channel = interaction.channel
    message = interaction.message
    if not isinstance(channel, discord.Thread) or message is None or interaction.guild_id is None:
        return None
    if message.id != channel.id or not channel.parent_id:
        return None
    return f"discord:{interaction.guild_id}/{channel.parent_id}"


async def answer_stray(interaction: discord.Interaction[Any]) -> None:
    """Answer a component interaction no `DigestButton` takes, ephemerally (Discord would
    otherwise show "This interaction failed"). Called for every interaction."""
    if interaction.type is not discord.InteractionType.component or takes(interaction):
        return
    data: Any = interaction.data or {}
    log.info(
        "discord: a click on an unknown component in %s refused (custom_id %.100r)",
        channel_of(interaction),
        data.get("custom_id"),
    )
    await _say(interaction, STRAY)


async def _say(interaction: discord.Interaction[Any], text: str) -> None:
    """An ephemeral line to the clicker: the response if there was none yet, else a
    follow-up. A failure to tell them is logged, not raised."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True)
        else:
            await interaction.response.send_message(text, ephemeral=True)
    except _ANSWER_FAILED as exc:
        log.warning("discord: could not answer a click: %r", exc)


class _Clicks:
    """The clicks on one message under way: applied one at a time (`lock`); `count` of
    them applied or waiting for their turn."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.count = 0


# Per clicked message (by id), while clicks on it are under way; forgotten once unused.
_messages: weakref.WeakValueDictionary[int, _Clicks] = weakref.WeakValueDictionary()


def _clicks_on(message_id: int | None) -> _Clicks:
    if message_id is None:
        return _Clicks()
    clicks = _messages.get(message_id)
    if clicks is None:
        clicks = _messages[message_id] = _Clicks()
    return clicks


async def _defer(interaction: discord.Interaction[Any]) -> None:
    """Acknowledge a click without answering yet (response 6: the message is updated later)."""
    try:
        await interaction.response.defer()
    except _ANSWER_FAILED as exc:
        log.warning("discord: could not acknowledge a click: %r", exc)


async def _show_counts(interaction: discord.Interaction[Any], view: discord.ui.View) -> None:
    """The clicked message with its new counts: as the response (7), or after a deferral
    through the interaction's webhook. A failure is logged: the vote is stored anyway."""
    try:
        if interaction.response.is_done():
            await interaction.edit_original_response(view=view)
        else:
            await interaction.response.edit_message(view=view)
    except _ANSWER_FAILED as exc:
        log.warning(
            "discord: could not show the counts on message %s: %r",
            interaction.message and interaction.message.id,
            exc,
        )


async def handle_click(
    interaction: discord.Interaction[Any], custom: str, ack_budget: float | None = None
) -> None:
    """Apply a click on a digest button (`apply_action`, in a worker thread, for
    `click_channel`) and answer it within Discord's 3 seconds: if the work is done within
    the ack budget, the answer is the message update with the new counts (response 7),
    else the click is deferred (6) and the message edited when done. The clicker then
    gets an ephemeral line; a refused click changes nothing and gets its reason. Clicks
    on one message are applied one at a time."""
    client: Any = interaction.client
    services = client.services
    budget = ack_budget if ack_budget is not None else getattr(client, "ack_budget", None)
    parsed = parse_custom_id(custom)
    if parsed is None:  # the template matched, so this does not happen; be safe anyway
        await _say(interaction, STRAY)
        return
    action, ref = parsed
    clicker = user_id_of(interaction)
    if clicker is None:  # a vote nobody cast is refused
        log.info("discord: a click on %s without a user refused", custom)
        await _say(interaction, NO_USER)
        return
    channel = click_channel(interaction)
    user = str(clicker)
    key = key_of(interaction) or ""  # apply_action refuses a save without a valid key
    rows = _message_rows(interaction.message)

    def work() -> tuple[ActionResult, dict[str, tuple[int, int]] | None]:
        db = services.db()
        result = apply_action(
            db, channel=channel, user=user, user_key=key, action=action, value=ref,
            now=services.clock(),
        )  # fmt: skip
        if result.error:
            return result, None
        return result, digest_counts(db, channel, parse_item_ref(ref)[0])

    # One click at a time per message: each edit then carries counts read after the
    # previous click's, so a slower earlier click cannot put older counts back.
    clicks = _clicks_on(interaction.message.id if interaction.message else None)
    waiting = clicks.count > 0
    clicks.count += 1
    try:
        # Another click on this message is under way (applied, or waiting for its turn:
        # the lock may be free for a moment while the next in line wakes up, and this one
        # would then wait behind it unacknowledged): acknowledge now.
        if waiting:
            await _defer(interaction)
        async with clicks.lock:
            task = asyncio.ensure_future(services.in_thread(work))
            wait = ACK_BUDGET_SECONDS if budget is None else budget
            done, _ = await asyncio.wait({task}, timeout=wait)
            if not done and not interaction.response.is_done():
                await _defer(interaction)  # "working on it": the update comes when done
            try:
                result, counts = await task
            except Exception as exc:
                log_failure(log, exc, "discord: a click on %s in %s failed", custom, channel)
                await _say(interaction, failure_text(exc))
                return
            if counts is not None and rows:
                await _show_counts(interaction, view_of(with_counts(rows, counts)))
    finally:
        clicks.count -= 1
    await _say(interaction, result.text)


__all__ = ["DigestButton", "answer_stray", "handle_click", "takes", "view_of"]
