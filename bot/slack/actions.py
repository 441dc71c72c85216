"""Clicks on Paperboy's buttons in Slack (`block_actions`), for both transports: a digest
item's 👍 👎 🔖 is applied here, any other button goes to the handler its app registered
for the action id's prefix (`ClickHandlers`). `check_payload` is the shape check run first.
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.slack.client import error_code
from bot.slack.home import refresh_home
from bot.slack.lanes import run_in
from bot.slack.verify import slack_url
from db import digests as digest_store
from db.papers import get_paper
from db.store import Store
from digests.actions import (
    ACTIONS,
    SAVE,
    ActionError,
    ActionResult,
    apply_action,
    digest_counts,
    parse_item_ref,
    user_key,
)
from digests.channels import ChannelError, parse_channel, personal_channel
from digests.failures import failure_text, log_failure
from digests.lookup import paper_links
from digests.render.slack import LINK_ACTIONS, item_actions, item_paper

log = logging.getLogger(__name__)

Handler = Callable[
    [Services, AsyncWebClient, dict[str, Any], dict[str, Any], Executor | None], Awaitable[None]
]

NOT_UPDATED = " (The message could not show the new count; your vote counts.)"
RESPONSE_TIMEOUT = 10.0
MAX_ACTIONS = 5  # a click sends one; Slack never sends many
_ID = re.compile(r"[A-Z0-9]{2,32}", re.ASCII)  # team, user and channel ids
_WORKSPACE = re.compile(r"T[A-Z0-9]{2,31}", re.ASCII)  # a workspace's id, not an org's
_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,8}", re.ASCII)
MAX_ACTION_ID = 255


@dataclass(eq=False)
class _Message:
    """A message being updated: its updates run one at a time (`lock`); `stale` while a
    vote on it is counted that no update started since has shown."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    stale: bool = False


# By (channel id, ts); gone when no click holds or waits for it.
_messages: weakref.WeakValueDictionary[tuple[str, str], _Message] = weakref.WeakValueDictionary()


class ClickHandlers:
    """One app's handlers of the clicks that are not on a digest item, by action-id prefix."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def register(self, action_id_prefix: str, handler: Handler) -> None:
        """Send the clicks whose action id starts with `action_id_prefix` to `handler(services,
        client, payload, action, executor)` (after the acknowledgement). `executor` is the
        caller's writer lane (None: a thread of the services); the handler runs its writes
        there (`run_in`). Registering a prefix again replaces its handler; a prefix of
        Paperboy's item actions is refused (ValueError)."""
        if not action_id_prefix or any(a.startswith(action_id_prefix) for a in ACTIONS):
            raise ValueError(f"cannot register the prefix {action_id_prefix!r}")
        self._handlers[action_id_prefix] = handler

    def get(self, action_id: str) -> Handler | None:
        """The handler of the longest registered prefix of `action_id`, if any."""
        found = [prefix for prefix in self._handlers if action_id.startswith(prefix)]
        return self._handlers[max(found, key=len)] if found else None


def _id(value: object) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def team_of(payload: dict[str, Any]) -> str | None:
    """The workspace of a click: `team.id`, else the user's `team_id`."""
    team = payload.get("team")
    if isinstance(team, dict) and _id(team.get("id")):
        return str(team["id"])
    user = payload.get("user")
    if isinstance(user, dict) and _id(user.get("team_id")):
        return str(user["team_id"])
    return None


def own_team(payload: dict[str, Any]) -> str | None:
    """The clicker's own workspace: `user.team_id` when it is a workspace's id (T...) and
    the click comes from no Enterprise org; else None (the click's workspace decides). A
    saved paper goes to this workspace's list of the user: a Slack Connect guest's Home is
    in their own workspace. In an org, `user.team_id` can be the org's id or whichever
    workspace the member clicks in (slackapi/bolt-js#1875), so it decides nothing."""
    enterprise = payload.get("enterprise")
    if payload.get("is_enterprise_install") is True or (
        isinstance(enterprise, dict) and enterprise.get("id")
    ):
        return None
    user = payload.get("user")
    team = user.get("team_id") if isinstance(user, dict) else None
    return team if isinstance(team, str) and _WORKSPACE.fullmatch(team) else None


def ephemeral(payload: dict[str, Any]) -> bool:
    """Whether the click is on an ephemeral message (a command's reply, e.g. `/papers
    digest` once the digest is built, shows it with its buttons): Slack sends no
    `message` for those, and they cannot be updated with `chat.update`."""
    container = payload.get("container")
    return isinstance(container, dict) and container.get("is_ephemeral") is True


def check_payload(payload: object, api_url: str) -> str | None:
    """Why a `block_actions` payload cannot be handled (a short reason), or None.

    Every payload needs a user, a team and 1 to 5 actions with string action ids. A
    click on a digest item's 👍 👎 🔖 also needs the message it sits on (its channel, ts
    and, unless the message is ephemeral, its blocks) and a `response_url` that is
    Slack's (`slack_url`)."""
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return "not a block_actions payload"
    user = payload.get("user")
    if not isinstance(user, dict) or not _id(user.get("id")):
        return "no user"
    if team_of(payload) is None:
        return "no team"
    actions = payload.get("actions")
    if not isinstance(actions, list) or not 1 <= len(actions) <= MAX_ACTIONS:
        return "no actions"
    for action in actions:
        if not isinstance(action, dict):
            return "malformed action"
        action_id = action.get("action_id")
        if not isinstance(action_id, str) or not 0 < len(action_id) <= MAX_ACTION_ID:
            return "malformed action_id"
    if not any(action["action_id"] in ACTIONS for action in actions):
        return None
    channel, container, message = (payload.get(k) for k in ("channel", "container", "message"))
    if not isinstance(channel, dict) or not _id(channel.get("id")):
        return "an item's button without its channel"
    if not isinstance(container, dict) or not isinstance(container.get("message_ts"), str):
        return "an item's button without its message"
    if not _TS.fullmatch(container["message_ts"]):
        return "malformed message_ts"
    if container.get("channel_id", channel["id"]) != channel["id"]:
        return "the message is in another channel"
    if not ephemeral(payload) and (
        not isinstance(message, dict) or not isinstance(message.get("blocks"), list)
    ):
        return "an item's button without its message"
    url = payload.get("response_url")
    if not isinstance(url, str) or not slack_url(url, api_url):
        return "response_url is not Slack's"
    return None


async def handle_block_actions(
    services: Services,
    client: AsyncWebClient,
    payload: dict[str, Any],
    handlers: ClickHandlers,
    executor: Executor | None = None,
) -> None:
    """Handle one acknowledged `block_actions` payload. A digest item's 👍 👎 🔖 is applied
    to the digest of the conversation clicked in (`conversation_digest`); a vote that
    changed something updates the message's counts (`chat.update`, one update at a time
    per message, none for a click an earlier update already showed); a save re-publishes
    the clicker's Home (`refresh_home`). The clicker is answered through `response_url`
    when there is something to say (a save, an error, a repeated vote, a count not
    shown, any click on an ephemeral message). Link buttons are ignored; other action
    ids go to `handlers`. Writes run in `executor` (by default a thread of the
    services). Never raises for bad input or a failure of Slack's; a bug is logged and
    the clicker told something went wrong."""
    problem = check_payload(payload, services.settings.slack_api_url)
    if problem is not None:
        log.warning("ignored a Slack click: %s", problem)
        return
    for action in payload["actions"]:
        action_id = action["action_id"]
        try:
            if action_id in ACTIONS:
                await _item_click(services, client, payload, action, executor)
            elif action_id in LINK_ACTIONS:
                continue  # a link button: Slack opened the link; nothing to do
            elif (handler := handlers.get(action_id)) is not None:
                await handler(services, client, payload, action, executor)
            else:
                log.debug("ignored a Slack click on %r", action_id[:40])
        except Exception as exc:
            log_failure(log, exc, "a Slack click on %r failed", action_id[:40])
            await respond(services, payload, failure_text(exc))


def click_channel(team: str, channel_id: str, user: str) -> str | None:
    """The Paperboy channel of a click: `slack:TEAM/CHANNEL`, or in a direct message with
    the bot (ids starting with D), the clicking user's own digest, `slack:TEAM/@USER`:
    only they see that conversation."""
    if channel_id.startswith("D"):
        return personal_channel(f"slack:{team}/{user}")
    return f"slack:{team}/{channel_id}"


async def _item_click(
    services: Services,
    client: AsyncWebClient,
    payload: dict[str, Any],
    action: dict[str, Any],
    executor: Executor | None,
) -> None:
    team, user = str(team_of(payload)), str(payload["user"]["id"])
    channel_id = str(payload["channel"]["id"])
    message_ts = str(payload["container"]["message_ts"])
    channel = click_channel(team, channel_id, user)
    own = own_team(payload)
    try:
        key = user_key("slack", own or team, user)
    except ValueError:
        key = None
    if channel is None or key is None:
        await respond(services, payload, "Paperboy could not tell who clicked that button.")
        return
    # An ephemeral message is not updated: the clicker is answered instead (below).
    on_message = not ephemeral(payload)
    message = payload.get("message") if on_message else None
    found = message.get("blocks") if isinstance(message, dict) else None
    blocks = [block for block in found or () if isinstance(block, dict)]
    action_id, value = action["action_id"], action.get("value")
    work = (services, channel, channel_id, user, own, key, action_id, value, not on_message)
    result, applied, owner = await run_in(services, executor, _apply, *work)
    updated = True
    if on_message and blocks and result.changed and not result.error and action_id != SAVE:
        # The vote is committed. Clicks on one message update it one at a time, each
        # with the counts read when its update starts; an update that starts after this
        # vote shows it, so a click whose vote another update already showed sends none
        # (a burst of clicks costs Slack a few chat.update calls, not one per click).
        message_state = _messages.setdefault((channel_id, message_ts), _Message())
        message_state.stale = True
        async with message_state.lock:
            if message_state.stale:
                message_state.stale = False
                updated = await _show_counts(services, client, payload, applied, value, blocks)
                message_state.stale = message_state.stale or not updated  # the next tries
    if action_id == SAVE and result.changed and not result.error:
        _refresh_home(services, client, owner, user)
    if result.error or action_id == SAVE or not result.changed or not on_message:
        await respond(services, payload, result.text)
    elif not updated:
        await respond(services, payload, result.text + NOT_UPDATED)


def _refresh_home(services: Services, client: AsyncWebClient, key: str, user: str) -> None:
    """A save shows in the Home of the list's owner (`key`: `slack:TEAM/USER`)."""
    team = key.removeprefix("slack:").split("/", 1)[0]
    refresh_home(services, client, team, user)


async def _show_counts(
    services: Services,
    client: AsyncWebClient,
    payload: dict[str, Any],
    channel: str,
    value: object,
    blocks: list[dict[str, Any]],
) -> bool:
    """Update the message with its items' buttons rebuilt from the database now (a read:
    in a thread of the services, not the writer's lane, which a stop closes); False when
    Slack refused the update or could not be reached."""
    digest_id, _ = parse_item_ref(value)  # apply_action accepted it
    papers = [paper for paper in map(_item_of, blocks) if paper]
    fresh = await services.in_thread(_fresh, services, channel, digest_id, papers)
    if not fresh:
        return True
    channel_id = str(payload["channel"]["id"])
    ts = str(payload["container"]["message_ts"])
    return await _update(client, payload, channel_id, ts, blocks, fresh)


def _item_of(block: dict[str, Any]) -> str | None:
    """The paper of one of Paperboy's item button blocks, else None."""
    return item_paper(block.get("block_id")) if block.get("type") == "actions" else None


def conversation_digest(
    db: Store, value: object, channel_id: str, user: str, ephemeral: bool = False
) -> str | None:
    """The reference of the digest a button's `value` names, when that digest is this
    conversation's: a channel digest whose Slack channel id is `channel_id` (which Slack
    signs), or, in a direct message (ids starting with D) or on an `ephemeral` message,
    the clicking user's own personal digest. None otherwise (the click keeps the
    reference made from the payload, which `apply_action` refuses). The conversation
    decides, not the payload's team: in a Slack Connect channel or an org-wide install
    the team can be another workspace's, or null, while the channel keeps its id."""
    try:
        digest_id, _ = parse_item_ref(value)
    except ActionError:
        return None
    found = digest_store.digest_channel(db, digest_id)
    if found is None:
        return None
    try:
        ref = parse_channel(found)
    except ChannelError:
        return None
    if ref.platform != "slack":
        return None
    if channel_id.startswith("D") or (ephemeral and ref.personal):
        # Only the clicker sees it: their own digest's buttons, never another user's.
        return str(ref) if ref.personal and ref.user == user else None
    return str(ref) if not ref.personal and ref.name == channel_id else None


def _apply(
    services: Services,
    channel: str,
    channel_id: str,
    user: str,
    own: str | None,
    key: str,
    action_id: str,
    value: object,
    ephemeral: bool = False,
) -> tuple[ActionResult, str, str]:
    """The click (committed when this returns: the change lane settles after COMMIT), the
    channel it was applied to: the digest's, when it is this conversation's
    (`conversation_digest`), else `channel`, which `apply_action` refuses; and the saved
    list's key: the clicker's own workspace's (`own`, see `own_team`), else, when the
    payload names none, the digest's."""
    db = services.db()
    found = conversation_digest(db, value, channel_id, user, ephemeral)
    if found is not None and found != channel:
        log.info("a click in %s counts for %s, the digest shown there", channel_id, found)
        channel = found
        key = user_key("slack", own or parse_channel(found).team, user)
    result = apply_action(
        db,
        channel=channel,
        user=user,
        user_key=key,
        action=action_id,
        value=value,
        now=services.clock(),
    )
    return result, channel, key


def _fresh(
    services: Services, channel: str, digest_id: int, papers: list[str]
) -> dict[str, dict[str, Any]]:
    return _fresh_buttons(services.db(), channel, digest_id, papers)


def _fresh_buttons(
    db: Store, channel: str, digest_id: int, papers: list[str]
) -> dict[str, dict[str, Any]]:
    """The button blocks of these papers of the channel's digest, from the database (the
    counts now, the links as the paper has them); papers not in the digest are left out."""
    counts = digest_counts(db, channel, digest_id)
    fresh = {}
    for paper_id in papers:
        row = get_paper(db, paper_id) if paper_id in counts else None
        if row is None:
            continue
        block = item_actions(digest_id, paper_id, tuple(paper_links(row)), counts[paper_id])
        if block is not None:
            fresh[paper_id] = block
    return fresh


async def _update(
    client: AsyncWebClient,
    payload: dict[str, Any],
    channel_id: str,
    ts: str,
    blocks: list[dict[str, Any]],
    fresh: dict[str, dict[str, Any]],
) -> bool:
    """`chat.update` the message with its item buttons replaced by `fresh`; False (and
    a log line with Slack's error code) when Slack refused or could not be reached."""
    new = [fresh.get(paper, block) if paper else block for block, paper in _paired(blocks)]
    text = payload["message"].get("text")  # only called for a click with its message
    try:
        await client.chat_update(
            channel=channel_id,
            ts=ts,
            text=text if isinstance(text, str) and text else "Paperboy digest",
            blocks=new,
        )
    except SlackApiError as exc:
        why = error_code(exc)
    except (aiohttp.ClientError, TimeoutError) as exc:
        why = type(exc).__name__
    else:
        return True
    log.warning("chat.update of a digest message in %s failed: %s", channel_id, why)
    return False


def _paired(blocks: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str | None]]:
    return [(block, _item_of(block)) for block in blocks]


async def respond(services: Services, payload: dict[str, Any], text: str) -> None:
    """Tell the clicker `text`, ephemerally, through the payload's response_url (only
    when it is Slack's); failures are logged, never raised."""
    url = payload.get("response_url")
    if not isinstance(url, str) or not slack_url(url, services.settings.slack_api_url):
        log.info("no answer to a Slack click: its response_url is not Slack's")
        return
    body = {"response_type": "ephemeral", "replace_original": False, "text": text}
    timeout = aiohttp.ClientTimeout(total=RESPONSE_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=body) as response,
        ):
            if response.status >= 300:
                log.warning("response_url answered HTTP %d to a click", response.status)
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("could not answer a click through response_url: %s", type(exc).__name__)
