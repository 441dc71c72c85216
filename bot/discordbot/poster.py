"""Posting digest messages to Discord channels through discord.py.

discord.py waits out a 429 and retries, for waits up to 30 s; a longer one comes back
as a transient error with its retry_after, so the message stays queued. Errors that
retrying cannot fix pause the channel: Unknown Channel, Missing Access, Missing
Permissions. Every message goes out with mentions disabled.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import discord

from bot.delivery import MESSAGE_KEY, PermanentError, TransientError
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


class DiscordPoster:
    platform = "discord"

    def __init__(self, client: discord.Client) -> None:
        self.client = client

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
            raise TransientError("rate limited", retry_after=exc.retry_after) from None
        except (discord.NotFound, discord.Forbidden) as exc:
            reason = PERMANENT_CODES.get(exc.code, f"{exc.status} {exc.text or 'refused'}")
            raise PermanentError(reason) from None
        except discord.HTTPException as exc:
            raise TransientError(f"HTTP {exc.status}: {exc.text or 'error'}") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientError(f"connection problem: {type(exc).__name__}") from None
        return str(message.id)
