"""Posting digest messages to Slack with `chat.postMessage`.

At most one message a second per channel, and `rate` a second across the workspace
(Slack's posting limits: "1 per second per channel" and a workspace-wide one it does not
publish; `PAPERBOY_SLACK_POSTS_PER_SECOND`), kept by the poster's `limits`, which every
delivery through it shares (`bot/ratelimits.py`). A 429 comes back as a rate-limited
transient error, taken as workspace-wide: Slack does not say which limit it was, and the
channel spacing keeps within the channel's. Later parts of a digest go in a thread under
the first. Errors that retrying cannot fix pause the channel; the rest are transient and
left to the outbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import PermanentError, TransientError
from bot.ratelimits import SendLimits
from bot.slack.client import error_code
from digests.channels import ChannelRef

log = logging.getLogger(__name__)

# Errors after which retrying cannot help: the channel is paused until someone acts.
PERMANENT_ERRORS = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_authed",
        "missing_scope",
        "restricted_action",
        "team_access_not_granted",
        "org_login_required",
        "ekm_access_denied",
    }
)
MIN_INTERVAL_SECONDS = 1.0
DEFAULT_POSTS_PER_SECOND = 5.0  # the setting's default: "several hundred per minute"


class SlackPoster:
    platform = "slack"

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        min_interval: float = MIN_INTERVAL_SECONDS,
        rate: float | None = DEFAULT_POSTS_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.limits = SendLimits(
            rate, channel_interval=min_interval, monotonic=monotonic, sleep=sleep
        )

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        """Post one message (the caller waited on `limits` first)."""
        try:
            response = await self.client.chat_postMessage(
                channel=channel.name,
                text=payload["text"],
                blocks=payload.get("blocks"),
                thread_ts=thread_of,
                unfurl_links=False,
                unfurl_media=False,
            )
        except SlackApiError as exc:
            error = error_code(exc)
            if error in PERMANENT_ERRORS:
                raise PermanentError(error) from None
            # "ratelimited": a 429's body; "rate_limited": chat.postMessage's own error
            # ("Application has posted too many messages"). Neither posted anything.
            limited = exc.response.status_code == 429 or error in ("ratelimited", "rate_limited")
            raise TransientError(
                error, _retry_after(exc), rate_limited=limited, scope="global"
            ) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientError(f"connection problem: {type(exc).__name__}") from None
        return str(response["ts"])


def _retry_after(exc: SlackApiError) -> float | None:
    """The answer's Retry-After in seconds, if it has a readable one."""
    headers = exc.response.headers or {}
    for name, value in headers.items():
        if name.lower() == "retry-after":
            with contextlib.suppress(TypeError, ValueError):
                seconds = float(value[0] if isinstance(value, list) else value)
                if math.isfinite(seconds):
                    return max(seconds, 0.0)
    return None
