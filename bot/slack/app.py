"""The `/papers` slash command in Slack, on slack-bolt's AsyncApp.

One handler serves every subcommand: the core grammar decides what the text means.
Slack wants an acknowledgement within 3 seconds. Paperboy gives the command
`ACK_BUDGET_SECONDS` to finish: if it does, the answer *is* the acknowledgement;
if not, it acknowledges with "Working on it…" and answers through `response_url`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.slack.client import error_code
from digests.commands import Context, handle
from digests.commands.grammar import ParseError, parse
from digests.commands.replies import Reply, error
from digests.render import slack as slack_render

log = logging.getLogger(__name__)

COMMAND = "/papers"
ACK_BUDGET_SECONDS = 2.0
WORKING = "Working on it…"
REFUSAL = (
    "Sorry, only {who} can change this channel's topics or schedule. "
    "You can still use `/papers find`, `show`, `topics` and `list`."
)
FAILURE = "Sorry, something went wrong on my side. It is logged; please try again later."


def payloads(reply: Reply) -> list[dict[str, Any]]:
    """`ack`/`respond` arguments for a reply: ephemeral for lookups, in_channel for changes."""
    response_type = "ephemeral" if reply.ephemeral else "in_channel"
    return [
        {"response_type": response_type, "text": message.text, "blocks": message.blocks}
        for message in slack_render.reply_messages(reply)
    ]


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


def create_app(
    services: Services,
    client: AsyncWebClient,
    *,
    signing_secret: str | None,
    ack_budget: float = ACK_BUDGET_SECONDS,
) -> AsyncApp:
    """The bolt app. With a signing secret (HTTP mode) every request is verified;
    without one (Socket Mode) requests arrive over the app-token websocket instead."""
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=signing_secret is not None,
        process_before_response=False,
        logger=logging.getLogger("bot.slack.bolt"),
    )

    def run_command(text: str, channel: str, user: str) -> Reply:
        ctx: Context = services.context(channel, user)
        return handle(text, ctx)

    async def answer(command: dict[str, Any], client: AsyncWebClient) -> Reply:
        text = str(command.get("text") or "")
        try:
            verb = parse(text).verb
        except ParseError:
            verb = None
        managers = services.settings.slack_managers
        if (
            verb is not None
            and verb.changes
            and not await may_change(client, managers, command["user_id"])
        ):
            return _refusal(managers)
        channel = f"slack:{command['team_id']}/{command['channel_id']}"
        user = f"@{command['user_name']}" if command.get("user_name") else str(command["user_id"])
        reply = await services.in_thread(run_command, text, channel, user)
        if reply.changed:
            services.changed(channel)  # e.g. the scheduler picks up a new schedule at once
        return reply

    @app.command(COMMAND)
    async def papers(
        ack: Any, command: dict[str, Any], respond: Any, client: AsyncWebClient
    ) -> None:
        task = asyncio.ensure_future(answer(command, client))
        done, _ = await asyncio.wait({task}, timeout=ack_budget)
        if not done:
            await ack(response_type="ephemeral", text=WORKING)
        try:
            messages = payloads(await task)
        except Exception:  # in the command or in rendering its answer: never a stack trace
            log.exception("/papers %r failed", str(command.get("text"))[:80])
            messages = payloads(error(FAILURE))
        if done:
            await ack(**messages[0])
            messages = messages[1:]
        for message in messages:
            await respond(**message)

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("Slack request failed: %s: %s", type(error).__name__, error)

    return app
