"""Posting digest messages to Discord channels and DMs through discord.py, paced against
the bot's global limit, with every 429 heard as it arrives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord

from bot.delivery import MESSAGE_KEY, PermanentError, RefusedMessage, TransientError
from bot.discordbot.buttons import view_of
from bot.discordbot.client import MAX_RATE_LIMIT_WAIT_SECONDS
from bot.dm import DmChannels
from bot.ratelimits import MAX_WAIT_SECONDS, SendLimits, Throttled
from digests.channels import ChannelRef

log = logging.getLogger(__name__)

# Discord's JSON error codes after which retrying cannot help.
PERMANENT_CODES = {
    10003: "Unknown Channel",
    10004: "Unknown Guild",
    50001: "Missing Access",
    50013: "Missing Permissions",
    50007: "Cannot send messages to this user",
    10013: "Unknown User",  # a personal digest's user (opening the DM)
    50033: "Invalid Recipient(s)",  # ... answered 400, not 403/404
}

# Discord's JSON error codes that say the message itself is wrong (its shape, its size), not
# the channel, the permissions or the rate: sending it again can never work, but the channel
# takes other messages (https://discord.com/developers/docs/topics/opcodes-and-status-codes
# #json-json-error-codes). 50035 is what a broken limit gets: an embed over 6,000
# characters, 11 embeds, a 2,001-character content, a field too long ("errors" says which).
MESSAGE_REFUSALS = {
    50035: "Invalid Form Body",
    50006: "Cannot send an empty message",
    40005: "Request entity too large",
    50045: "File uploaded exceeds the maximum size",
    50109: "The request body contains invalid JSON",
}


DEFAULT_POSTS_PER_SECOND = 50.0  # Discord's global limit per bot
# The channel a request posts to (`/api/v10/channels/{id}/messages`).
_CHANNEL_POST = re.compile(r"/channels/(\d+)/messages$")


class DiscordPoster:
    """Sends at `rate` a second in all (the shared `limits`; discord.py keeps each
    channel's bucket but not the bot's global limit), hearing of every 429 as it arrives,
    those discord.py retries by itself included (`PaperboyClient.response_listeners`): a
    global one pauses every channel and lowers the rate. `PERMANENT_CODES` pause the
    channel; `MESSAGE_REFUSALS`, and what discord.py refuses before sending
    (`_message_fields`), give the message up; a longer rate limit or one discord.py gave
    up on is a rate-limited transient error. Mentions are off; buttons go as a view."""

    platform = "discord"

    def __init__(
        self,
        client: discord.Client,
        *,
        rate: float | None = DEFAULT_POSTS_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        dms: DmChannels | None = None,
    ) -> None:
        self.client = client
        self.dms = dms if dms is not None else DmChannels()
        self.limits = SendLimits(rate, monotonic=monotonic, sleep=sleep)
        # Opening DMs: no rate of its own (discord.py keeps to the route's bucket), only
        # the pauses of its 429s; the opens count against the global rate (`_dm`).
        self.opening = SendLimits(None, monotonic=monotonic, sleep=sleep)
        listeners = getattr(client, "response_listeners", None)
        if listeners is not None:  # a PaperboyClient: hear of every 429 it receives
            listeners.append(self._answered)

    async def _answered(self, response: aiohttp.ClientResponse) -> None:
        """Tell the limits of a 429, as soon as it arrives: the pause it asks for, for its
        channel or (global) for every send. A 429 to any other request than a post
        (a command sync, an interaction's answer) matters only when it is global."""
        if response.status != 429:
            if response.status < 300 and _CHANNEL_POST.search(response.url.path):
                self.limits.accepted()  # what Discord let through: its rate, measured
            return
        body: Any = None  # as discord.py reads it: JSON only when it says so, else text
        with contextlib.suppress(Exception):  # cut off: decided by the headers alone
            # Read before discord.py does: aiohttp keeps the body for discord.py's read.
            raw = await response.read()
            body = raw.decode("utf-8", "replace")
            if response.headers.get("Content-Type") == "application/json":
                body = json.loads(raw)
        headers = response.headers
        retry_after, scope = _limit_of(headers, body)
        channel = _CHANNEL_POST.search(response.url.path)
        if channel is None and scope != "global":
            return
        # Declared global (not a Cloudflare ban, which is global without saying so): the
        # limits measure the bot's real global rate from these (a rate set above it).
        self.limits.limited(
            channel.group(1) if channel else "",
            retry_after,
            scope,
            declared=_declared_global(headers, body),
            bucket_size=_number(headers.get("X-RateLimit-Limit")),
            full_after=_number(headers.get("X-RateLimit-Reset-After")),
        )
        if channel is not None and (retry_after or 0.0) <= MAX_RATE_LIMIT_WAIT_SECONDS:
            # discord.py will send this post again, after retry_after, by itself: that send
            # takes its turn like any other, or it skips the pause and the rate.
            with contextlib.suppress(Throttled):
                await self.limits.wait_turn(channel.group(1))

    def ready_in(self, channel: ChannelRef) -> float:
        """Seconds before a send to `channel` could start (a DM to open: `bot.dm`)."""
        return self.dms.open_delay(str(channel), self.opening) if channel.personal else 0.0

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if not channel.personal:
            target = self.client.get_partial_messageable(
                int(channel.name), guild_id=int(channel.team) if channel.team else None
            )
        fields = _message_fields(payload)  # RefusedMessage: nothing sent, nothing opened
        # A remembered DM id may be stale (retried, reopened); one just opened is not.
        remembered = self.dms.get(str(channel)) if channel.personal else None
        try:
            if channel.personal:  # a personal digest: the user's DM channel
                target = await self._dm(channel, remembered)
            message = await target.send(**fields)
        except discord.RateLimited as exc:  # longer than the client will wait: try later
            raise TransientError(
                "rate limited", retry_after=exc.retry_after, rate_limited=True
            ) from None
        except (discord.NotFound, discord.Forbidden) as exc:
            if channel.personal and exc.code == 10003:
                self.dms.forget(str(channel))  # a DM channel gone: open it again next time
                if remembered is not None:
                    raise TransientError("the DM channel is gone; opening it again") from None
                # Just opened and already unknown: reopening cannot help (as Slack's
                # channel_not_found on a new DM), so pause rather than retry to give-up.
            reason = PERMANENT_CODES.get(exc.code, f"{exc.status} {exc.text or 'refused'}")
            raise PermanentError(reason) from None
        except discord.HTTPException as exc:
            if exc.status == 429:  # discord.py's own retries of it ran out
                raise _rate_limited(exc) from None
            if channel.personal and exc.code in PERMANENT_CODES:
                raise PermanentError(PERMANENT_CODES[exc.code]) from None
            # A 413 without Discord's JSON (its proxy's) says the body is too large all the same.
            if exc.status == 413 or (exc.status == 400 and exc.code in MESSAGE_REFUSALS):
                raise RefusedMessage(_refusal(exc)) from None
            raise TransientError(f"HTTP {exc.status}: {exc.text or 'error'}") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientError(f"connection problem: {type(exc).__name__}") from None
        return str(message.id)

    async def _dm(self, channel: ChannelRef, known: str | None) -> discord.PartialMessageable:
        """The DM channel of a personal digest's user: `known` (its remembered id), or
        opened with `POST /users/@me/channels` (discord.py's `create_dm`) and remembered.
        The open is one more request against the bot's global limit: it goes out on the
        message's turn, and the post then takes a turn of `limits` of its own (`bot.dm`);
        a 429 on the open is waited out there.
        Discord's other answers (50033, 10013) go to `send`."""
        if known is None:

            async def open_dm() -> str:
                try:
                    dm = await self.client.create_dm(discord.Object(id=int(channel.user or 0)))
                except discord.RateLimited as exc:  # longer than discord.py waits
                    raise TransientError(
                        "rate limited", retry_after=exc.retry_after, rate_limited=True
                    ) from None
                except discord.HTTPException as exc:
                    if exc.status == 429:
                        raise _rate_limited(exc) from None
                    raise
                return str(dm.id)

            post_turn = (self.limits, channel.name)
            known = await self.dms.opened(str(channel), open_dm, self.opening, post_turn=post_turn)
        return self.client.get_partial_messageable(int(known), type=discord.ChannelType.private)


def _message_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of discord.py's `send` for a payload, checked as discord.py
    checks them before it makes any request (`http.handle_message_parameters`: at most 10
    embeds; the view's rows: at most 5, of 5 buttons; an embed's fields' types). What fails
    those checks raises `ValueError` or `TypeError` inside `send` before anything is sent,
    the same every time: it is raised here as `RefusedMessage`, given up at once. Checked
    apart from `send`, so that a `ValueError` from the request itself (an answer that is
    not JSON, after the message may have been posted) is not taken for one."""
    components = payload.get("components")
    try:
        fields: dict[str, Any] = {
            # The same nonce on every attempt at one outbox message: with enforce_nonce
            # (which discord.py sets), Discord answers a repeat within a few minutes with
            # the message it already created, instead of posting it again.
            "nonce": MESSAGE_KEY.get(),
            "content": payload.get("content") or None,
            "embeds": [discord.Embed.from_dict(embed) for embed in payload.get("embeds", [])],
            "allowed_mentions": discord.AllowedMentions.none(),
            # The digest items' buttons: their custom_ids are handled by
            # `buttons.DigestButton`, whoever posted the message and whenever.
            "view": view_of(components) if components else discord.utils.MISSING,
        }
        with discord.http.handle_message_parameters(
            content=fields["content"], embeds=fields["embeds"], view=fields["view"]
        ):
            pass  # only its checks: the request is built again by `send`
    except (ValueError, TypeError) as exc:
        reason = f"refused by discord.py before sending: {type(exc).__name__}: {exc}"
        raise RefusedMessage(reason if len(reason) <= 300 else reason[:299] + "…") from None
    return fields


def _refusal(exc: discord.HTTPException) -> str:
    """A refused message's reason on one line: Discord's message and code, then what its
    `errors` say is wrong (discord.py puts each "In embeds.0.description: Must be 4096 or
    fewer in length." on a line of its own), at most 300 characters."""
    name = MESSAGE_REFUSALS.get(exc.code, "Request entity too large")
    lines = [line.strip() for line in (exc.text or "").splitlines() if line.strip()]
    detail = "; ".join(line for line in lines if line != name)
    reason = f"HTTP {exc.status}: {name} ({exc.code})" + (f": {detail}" if detail else "")
    return reason if len(reason) <= 300 else reason[:299] + "…"


def _number(text: str | None) -> float | None:
    """A header's number; None when absent, not a number, or not finite and positive."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < float("inf") else None


def _rate_limited(exc: discord.HTTPException) -> TransientError:
    """A 429 that discord.py raised (its own retries of it ran out, or Cloudflare's) as a
    rate-limited transient error, by `_limit_of` its headers."""
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    retry_after, scope = _limit_of(headers, None)
    return TransientError("rate limited", retry_after=retry_after, rate_limited=True, scope=scope)


def _limit_of(headers: Any, body: Any) -> tuple[float | None, str]:
    """A 429's pause in seconds (None: it does not say) and scope ("global" or "channel").

    The pause is the body's `retry_after` (a float), else the `Retry-After` header (whole
    seconds). Global when the body's `global` is true, `X-RateLimit-Global: true` or
    `X-RateLimit-Scope: global`. A 429 without Discord's `Via` header, or whose body is not
    Discord's JSON, is Cloudflare refusing this address (discord.py raises it at once, as
    "banned by Cloudflare"): every request alike, so it is global too, and waited out for
    a minute when it does not say how long (more requests meanwhile only lengthen the ban).
    `body` None: not read (the header alone decides)."""
    retry_after = None
    if isinstance(body, dict):
        with contextlib.suppress(TypeError, ValueError):
            retry_after = max(float(body["retry_after"]), 0.0)
    if retry_after is None:
        with contextlib.suppress(TypeError, ValueError):
            retry_after = max(float(headers.get("Retry-After")), 0.0)
    banned = not headers.get("Via") or (body is not None and not isinstance(body, dict))
    if banned and retry_after is None:
        retry_after = MAX_WAIT_SECONDS
    is_global = (
        banned
        or _declared_global(headers, body)
        or str(headers.get("X-RateLimit-Scope", "")).lower() == "global"
    )
    return retry_after, "global" if is_global else "channel"


def _declared_global(headers: Any, body: Any) -> bool:
    """Discord says the 429 is the bot's global limit: the body's `global` is true, or
    `X-RateLimit-Global: true`."""
    return (isinstance(body, dict) and body.get("global") is True) or str(
        headers.get("X-RateLimit-Global", "")
    ).lower() == "true"
