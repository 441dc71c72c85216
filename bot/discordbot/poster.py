"""Posting digest messages to Discord channels through discord.py.

Pacing: discord.py keeps each channel within its route's bucket (it reads every answer's
`X-RateLimit-Remaining` and `-Reset-After`, and waits when the bucket is empty), but not
the bot's global limit (50 requests a second) until it has hit it. So the poster's
`limits` (`bot/ratelimits.py`, shared by every delivery through this bot) hand out turns at
`rate` a second (`PAPERBOY_DISCORD_POSTS_PER_SECOND`). discord.py waits out a 429 and
retries, for waits up to 30 s (a global one pauses all its requests); a longer one, or one
it gave up on, comes back as a rate-limited transient error with its retry_after and
scope, so the message stays queued. Errors that retrying cannot fix pause the channel:
Unknown Channel, Missing Access, Missing Permissions. Every message goes out with
mentions disabled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord

from bot.delivery import MESSAGE_KEY, PermanentError, TransientError
from bot.ratelimits import MAX_WAIT_SECONDS, SendLimits
from digests.channels import ChannelRef

log = logging.getLogger(__name__)

# Discord's JSON error codes after which retrying cannot help.
PERMANENT_CODES = {
    10003: "Unknown Channel",
    10004: "Unknown Guild",
    50001: "Missing Access",
    50013: "Missing Permissions",
    50007: "Cannot send messages to this user",
}


DEFAULT_POSTS_PER_SECOND = 50.0  # Discord's global limit per bot


class DiscordPoster:
    platform = "discord"

    def __init__(
        self,
        client: discord.Client,
        *,
        rate: float | None = DEFAULT_POSTS_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.limits = SendLimits(rate, monotonic=monotonic, sleep=sleep)

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        target = self.client.get_partial_messageable(
            int(channel.name), guild_id=int(channel.team) if channel.team else None
        )
        try:
            message = await target.send(
                # The same nonce on every attempt at one outbox message: with enforce_nonce
                # (which discord.py sets), Discord answers a repeat within a few minutes
                # with the message it already created, instead of posting it again.
                nonce=MESSAGE_KEY.get(),
                content=payload.get("content") or None,
                embeds=[discord.Embed.from_dict(embed) for embed in payload.get("embeds", [])],
                allowed_mentions=discord.AllowedMentions.none(),
            )
        except discord.RateLimited as exc:  # longer than the client will wait: try later
            raise TransientError(
                "rate limited", retry_after=exc.retry_after, rate_limited=True
            ) from None
        except (discord.NotFound, discord.Forbidden) as exc:
            reason = PERMANENT_CODES.get(exc.code, f"{exc.status} {exc.text or 'refused'}")
            raise PermanentError(reason) from None
        except discord.HTTPException as exc:
            if exc.status == 429:  # discord.py's own retries of it ran out
                raise _rate_limited(exc) from None
            raise TransientError(f"HTTP {exc.status}: {exc.text or 'error'}") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientError(f"connection problem: {type(exc).__name__}") from None
        return str(message.id)


def _rate_limited(exc: discord.HTTPException) -> TransientError:
    """A 429 as a rate-limited transient error: its `Retry-After` header (seconds) and
    whether the limit was the bot's global one. A 429 without Discord's `Via` header is
    Cloudflare refusing this address (discord.py raises it at once, as "banned by
    Cloudflare"): every request alike, so it is global too, and waited out for a minute
    when it does not say how long (more requests meanwhile only lengthen the ban)."""
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    retry_after = None
    with contextlib.suppress(TypeError, ValueError):
        retry_after = max(float(headers.get("Retry-After")), 0.0)
    banned = not headers.get("Via")
    if banned and retry_after is None:
        retry_after = MAX_WAIT_SECONDS
    is_global = (
        banned
        or str(headers.get("X-RateLimit-Global", "")).lower() == "true"
        or str(headers.get("X-RateLimit-Scope", "")).lower() == "global"
    )
    return TransientError(
        "rate limited",
        retry_after=retry_after,
        rate_limited=True,
        scope="global" if is_global else "channel",
    )
