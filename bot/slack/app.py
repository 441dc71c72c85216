"""The `/papers` slash command in Slack (`answer_payloads`, which HTTP mode serves from
`bot.slack.endpoint` too) and bolt's AsyncApp for Socket Mode (`create_app`)."""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.slack.actions import ClickHandlers, handle_block_actions
from bot.slack.client import error_code
from bot.slack.home import (
    HOME_PREFIX,
    handle_home_action,
    home_opened,
    home_tab_opened,
    refresh_home,
)
from bot.slack.lanes import run_in
from db import transactions
from db.errors import StorageError
from db.home import record_manager
from digests.actions import user_key
from digests.channels import ChannelError, parse_channel, personal_channel
from digests.commands import handle
from digests.commands.grammar import ParseError, as_personal, parse
from digests.failures import failure_text, log_failure
from digests.render import slack as slack_render
from digests.replies import Reply, error
from digests.safe_text import strip_unsafe
from digests.timestamps import stamp

log = logging.getLogger(__name__)

COMMAND = "/papers"
ACK_BUDGET_SECONDS = 2.0
WORKING = "Working on it…"
REFUSAL = (
    "Sorry, only {who} can change this channel's topics, schedule or delivery. "
    "You can still use `/papers find`, `show`, `topics` and `list`."
)

SENT_FILE = "I sent `{name}` to your direct messages with Paperboy."
FILE_FAILED = "Sorry, I could not send you `{name}` ({why}). Please try again later."
MAX_MESSAGES = 5  # a response_url takes at most 5 replies (within 30 minutes)
MORE_PAPERS = "… and {count} more papers, left out here: the full digest has them when it posts."
CUT = "… (cut here: too long for Slack replies)"


def payloads(reply: Reply) -> list[dict[str, Any]]:
    """`ack`/`respond` arguments for a reply: ephemeral for lookups, in_channel for changes.
    At most `MAX_MESSAGES`, so even a large digest preview fits one response_url."""
    response_type = "ephemeral" if reply.ephemeral else "in_channel"
    return [
        {"response_type": response_type, "text": message.text, "blocks": message.blocks}
        for message in fit(slack_render.reply_messages(reply))
    ]


def fit(
    messages: list[slack_render.SlackMessage], limit: int = MAX_MESSAGES
) -> list[slack_render.SlackMessage]:
    """The first `limit` messages. When there are more, the last block of the last one
    kept becomes a note saying how many papers were left out."""
    if len(messages) <= limit:
        return messages
    kept = messages[:limit]
    last = kept[-1]
    ids = list(last.paper_ids)
    blocks = list(last.blocks)
    if ids and len(blocks) > 1 and blocks[-1].get("type") == "actions":
        # A recorded digest's item ends with its buttons: drop them with the item, so
        # no button is left for a paper the message no longer shows.
        blocks.pop()
    if ids and blocks and blocks[-1].get("type") == "section":
        ids.pop()  # digest messages end with their papers' sections, in order
    left_out = (
        sum(len(message.paper_ids) for message in messages)
        - sum(len(message.paper_ids) for message in kept[:-1])
        - len(ids)
    )
    text = MORE_PAPERS.format(count=left_out) if left_out else CUT
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}
    kept[-1] = slack_render.SlackMessage(last.text, [*blocks[:-1], note], tuple(ids))
    return kept


async def may_change(client: AsyncWebClient, managers: str, user_id: str) -> bool:
    """Whether this user may subscribe, unsubscribe or reschedule (PAPERBOY_SLACK_MANAGERS)."""
    if managers == "anyone":
        return True
    if managers != "admins":
        return user_id in managers.split(",")
    try:
        user = (await client.users_info(user=user_id))["user"]
    except SlackApiError as exc:
        log.warning("users.info for a permission check failed: %s", error_code(exc))
        return False
    return bool(user.get("is_admin") or user.get("is_owner") or user.get("is_primary_owner"))


def _refusal(managers: str) -> Reply:
    who = "workspace admins" if managers == "admins" else "the people this app's operator listed"
    return error(REFUSAL.format(who=who))


def _run_command(
    services: Services, text: str, channel: str, user: str, key: str | None = None
) -> Reply:
    reply = handle(text, services.context(channel, user, key))
    if reply.changed and key is not None and _manages(text) and not _personal(channel):
        # In the command's thread (and, over HTTP, the writer's batch): its Home then
        # knows this user manages the channel by id, not by a name that can change.
        _record_manager(services, channel, key)
    return reply


def _record_manager(services: Services, channel: str, key: str) -> None:
    """Record the manager; a failure is one log line, never the command's: its change is
    made (and, in Socket Mode, committed) and the channel is told so. Only an error that
    ended the writer's whole transaction, the change with it, is raised."""
    db = services.db()
    batched = transactions.in_transaction(db)
    try:
        record_manager(db, channel, key, stamp(services.clock()))
    except StorageError as exc:
        if batched and not transactions.in_transaction(db):
            raise
        log.warning("could not record %s as a manager of %s: %s", key, channel, exc)


def _personal(channel: str) -> bool:
    """Whether the reference is a user's own digest (nobody manages it but them)."""
    try:
        return parse_channel(channel).personal
    except ChannelError:
        return False


def _manages(text: str) -> bool:
    """Whether the command changed the channel itself (not `--me`: the user's own digest)."""
    try:
        return parse(text).needs_manager
    except ParseError:
        return False


def _direct_message(command: dict[str, Any]) -> bool:
    """Whether a slash command was typed in a direct message: one-to-one, with the app or
    between two people (ids start with D), or a group DM (`channel_name` `mpdm-…`; its id
    may start with G or C, as channels' do)."""
    name = str(command.get("channel_name") or "")
    return str(command["channel_id"]).startswith("D") or name.startswith("mpdm-")


def _user_key(command: dict[str, Any]) -> str | None:
    """The asking user's key (`slack:TEAM/USER`), or None if the payload's ids are not Slack's."""
    try:
        return user_key("slack", str(command.get("team_id")), str(command.get("user_id")))
    except ValueError:
        return None


async def answer(
    services: Services,
    client: AsyncWebClient,
    command: dict[str, Any],
    executor: Executor | None = None,
) -> Reply:
    """Run one `/papers` command from a slash-command payload (its form fields), in a
    thread of `executor` (by default the services' threads). Typed in a direct message,
    it is about the user's own digest. A change needs `may_change` (unless to their own
    digest); a change made tells `services.changed` and re-publishes the asker's Home in
    the background (`refresh_home`); a reply's file goes to the asker's DM with the bot
    (`send_attachment`)."""
    text = str(command.get("text") or "")
    key = _user_key(command)
    channel = f"slack:{command['team_id']}/{command['channel_id']}"
    own = personal_channel(key or "") if _direct_message(command) else None
    if own is not None:
        # In a DM only the user's own digest makes sense: as a channel, the DM with the app
        # would get a second digest, and a DM between people one nobody can receive.
        channel, text = own, as_personal(text)
    try:
        # `--me`, or a DM: the command changes only the user's own digest
        needs_manager = own is None and parse(text).needs_manager
    except ParseError:
        needs_manager = False
    managers = services.settings.slack_managers
    if needs_manager and not await may_change(client, managers, str(command["user_id"])):
        return _refusal(managers)
    user = f"@{command['user_name']}" if command.get("user_name") else str(command["user_id"])
    reply = await run_in(services, executor, _run_command, services, text, channel, user, key)
    if reply.changed:
        # e.g. the scheduler picks up a new schedule at once; the digest changed, which
        # for `--me` typed in a channel is the user's own, not the channel's
        services.changed(changed_reference(text, channel, key))
        # The asker's Home shows their own digest and the channels they manage: re-published
        # in the background, paced, only if they opened it before; the answer never waits.
        _refresh_home(services, client, command)
    if reply.attachment is not None:
        reply = await send_attachment(client, reply, str(command["user_id"]))
    return reply


def changed_reference(text: str, channel: str, key: str | None) -> str:
    """The digest a command that changed something changed, as `handle` reads the text:
    with `--me`, the user's own (`personal_channel` of their `key`), else `channel`.
    `services.changed` listeners are told this one (the scheduler re-syncs every job
    whatever it is told, but a listener that acts on the reference must get the right one)."""
    try:
        me = parse(strip_unsafe(text)).me
    except ParseError:
        return channel
    return (personal_channel(key) if me and key else None) or channel


def _refresh_home(services: Services, client: AsyncWebClient, command: dict[str, Any]) -> None:
    """Start the re-publishing of the asking user's Home (`bot.slack.home.refresh_home`:
    only if they opened it before, paced with the other refreshes). Never raises: the
    change is made, and its answer must still go."""
    try:
        refresh_home(services, client, str(command["team_id"]), str(command["user_id"]))
    except Exception:
        log.exception("could not start the Home refresh of %s", str(command.get("user_id"))[:40])


async def send_attachment(client: AsyncWebClient, reply: Reply, user_id: str) -> Reply:
    """Upload the reply's file into the user's direct message with the bot; the reply,
    without the file, gains a line saying where it went or that it could not be sent."""
    attachment = reply.attachment
    assert attachment is not None
    name = attachment.filename
    try:
        opened = await client.conversations_open(users=user_id)
        await client.files_upload_v2(
            channel=str(opened["channel"]["id"]),
            filename=name,
            title=name,
            content=attachment.content,
            initial_comment=reply.text,
        )
    except SlackApiError as exc:
        log.warning("could not send %s to a user: %s", name, error_code(exc))
        note = FILE_FAILED.format(name=name, why=f"Slack said {error_code(exc)}")
    except (SlackClientError, aiohttp.ClientError, TimeoutError, KeyError, TypeError) as exc:
        log.warning("could not send %s to a user: %s", name, type(exc).__name__)
        note = FILE_FAILED.format(name=name, why="Slack could not be reached")
    else:
        note = SENT_FILE.format(name=name)
    return replace(reply, lines=(*reply.lines, note), attachment=None)


async def answer_payloads(
    services: Services,
    client: AsyncWebClient,
    command: dict[str, Any],
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """The reply messages for a command; a polite failure instead of any exception."""
    try:
        return payloads(await answer(services, client, command, executor))
    except Exception as exc:  # in the command or in rendering its answer: never a stack trace
        log_failure(log, exc, "/papers %r failed", str(command.get("text"))[:80])
        return payloads(error(failure_text(exc)))


def click_handlers() -> ClickHandlers:
    """The handlers of an app's clicks beyond the digest items': the App Home's buttons."""
    handlers = ClickHandlers()
    handlers.register(HOME_PREFIX, handle_home_action)
    return handlers


def create_app(
    services: Services,
    client: AsyncWebClient,
    *,
    signing_secret: str | None,
    ack_budget: float = ACK_BUDGET_SECONDS,
) -> AsyncApp:
    """The bolt app, for Socket Mode (`signing_secret=None`: requests arrive over the
    app-token websocket; with a secret, bolt over HTTP, the benchmark's reference). A
    command is answered within `ack_budget` as its acknowledgement, else acknowledged with
    "Working on it…" and answered through `respond`; clicks are acknowledged at once, then
    handled (`handle_block_actions`, with `click_handlers`); `app_home_opened` publishes
    the user's Home."""
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=signing_secret is not None,
        process_before_response=False,
        logger=logging.getLogger("bot.slack.bolt"),
    )
    handlers = click_handlers()

    @app.command(COMMAND)
    async def papers(
        ack: Any, command: dict[str, Any], respond: Any, client: AsyncWebClient
    ) -> None:
        task = asyncio.ensure_future(answer_payloads(services, client, command))
        done, _ = await asyncio.wait({task}, timeout=ack_budget)
        if not done:
            await ack(response_type="ephemeral", text=WORKING)
        messages = await task
        if done:
            await ack(**messages[0])
            messages = messages[1:]
        for message in messages:
            await respond(**message)

    @app.block_action(re.compile(".*"))
    async def clicked(ack: Any, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()  # at once: Slack waits 3 s; the click runs after
        await handle_block_actions(services, client, body, handlers)

    @app.event("app_home_opened")
    async def home_tab(body: dict[str, Any], client: AsyncWebClient) -> None:
        # bolt has acknowledged the event already (events need no ack() call).
        who = home_opened(body)
        if who is not None:
            await home_tab_opened(services, client, *who)

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("Slack request failed: %s: %s", type(error).__name__, error)

    return app
