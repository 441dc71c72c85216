"""Posting digest messages to Slack with `chat.postMessage`, paced per channel and per
workspace; a personal digest goes to the user's DM with the app."""

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

from bot.delivery import PermanentError, RefusedMessage, TransientError
from bot.dm import SLACK_OPENS_PER_SECOND, DmChannels
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
# A personal digest's user cannot get a DM from the app (conversations.open, or the post).
DM_REFUSALS = frozenset(
    {
        "user_not_found",
        "user_not_visible",
        "user_disabled",
        "cannot_dm_bot",
        "messages_tab_disabled",
        # An external (Slack Connect) user who shares no channel with the app: only they
        # or an admin can change that, so retrying until the outbox gives up loses it.
        "invalid_user_combination",
    }
)
# Slack refused the message itself: the same message is refused every time, and the next
# message (another digest) may well be fine. `msg_blocks_too_long`: its blocks carry more
# text than Slack takes in one message (undocumented, near 12,000 characters: see
# `digests.render.limits.SLACK_MESSAGE_TEXT`, which the renderer keeps to);
# `invalid_blocks` / `invalid_blocks_format`: blocks past Block Kit's rules; `msg_too_long`:
# the message text. Retried, each would be sent `max_attempts` times and then given up all
# the same.
MESSAGE_REFUSALS = frozenset(
    {"msg_blocks_too_long", "invalid_blocks", "invalid_blocks_format", "msg_too_long"}
)
MIN_INTERVAL_SECONDS = 1.0
DEFAULT_POSTS_PER_SECOND = 5.0  # the setting's default: "several hundred per minute"


class SlackPoster:
    """At most one message per `min_interval` per channel and `rate` a second in all (the
    shared `limits`; a 429 counts as workspace-wide: Slack does not say which limit it
    was). A personal digest (`slack:T/@U`) goes to the DM `conversations.open` gives,
    remembered in `dms` and paced by `opening` (Tier 3). Errors: `PERMANENT_ERRORS`
    (and, for a personal digest, `DM_REFUSALS`) pause the channel, `MESSAGE_REFUSALS`
    give the message up, the rest are transient."""

    platform = "slack"

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        min_interval: float = MIN_INTERVAL_SECONDS,
        rate: float | None = DEFAULT_POSTS_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        dms: DmChannels | None = None,
    ) -> None:
        self.client = client
        self.dms = dms if dms is not None else DmChannels()
        self.limits = SendLimits(
            rate, channel_interval=min_interval, monotonic=monotonic, sleep=sleep
        )
        # conversations.open has a limit of its own (Tier 3), apart from posting: `bot.dm`.
        self.opening = SendLimits(SLACK_OPENS_PER_SECOND, monotonic=monotonic, sleep=sleep)

    def ready_in(self, channel: ChannelRef) -> float:
        """Seconds before a send to `channel` could start (a DM to open: `bot.dm`)."""
        return self.dms.open_delay(str(channel), self.opening) if channel.personal else 0.0

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        """Post one message (the caller waited on `limits` first); a personal digest's
        into the user's DM, opened first if not known (again if the known one is gone)."""
        if not channel.personal:
            return await self._post(channel.name, payload, thread_of)
        known = self.dms.get(str(channel))
        if known is not None:
            try:
                return await self._post(known, payload, thread_of, personal=True)
            except PermanentError as exc:
                if exc.reason != "channel_not_found":
                    raise
                log.info("the DM of %s is gone; opening it again", channel)
                self.dms.forget(str(channel))
        return await self._post(await self._open(channel), payload, thread_of, personal=True)

    async def _open(self, channel: ChannelRef) -> str:
        """The DM channel with the personal digest's user, through conversations.open,
        paced by `opening` (a 429 waited out there, not taken for a blocked DM)."""

        async def open_dm() -> str:
            try:
                response = await self.client.conversations_open(users=channel.user)
            except SlackApiError as exc:
                raise _error(exc, personal=True) from None
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise TransientError(f"connection problem: {type(exc).__name__}") from None
            return str(response["channel"]["id"])

        post_turn = (self.limits, channel.name)  # the message's turn went before the wait
        return await self.dms.opened(str(channel), open_dm, self.opening, post_turn=post_turn)

    async def _post(
        self,
        target: str,
        payload: dict[str, Any],
        thread_of: str | None,
        *,
        personal: bool = False,
    ) -> str:
        try:
            response = await self.client.chat_postMessage(
                channel=target,
                text=payload["text"],
                blocks=payload.get("blocks"),
                thread_ts=thread_of,
                unfurl_links=False,
                unfurl_media=False,
            )
        except SlackApiError as exc:
            raise _error(exc, personal) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientError(f"connection problem: {type(exc).__name__}") from None
        return str(response["ts"])


def _error(exc: SlackApiError, personal: bool) -> PermanentError | RefusedMessage | TransientError:
    """A Slack API error as the delivery sees it: pause (permanent), give this message up
    (refused), or retry later."""
    error = error_code(exc)
    if error in PERMANENT_ERRORS or (personal and error in DM_REFUSALS):
        return PermanentError(error)
    if error in MESSAGE_REFUSALS:
        return RefusedMessage(error)
    # "ratelimited": a 429's body; "rate_limited": chat.postMessage's own error
    # ("Application has posted too many messages"). Neither posted anything.
    limited = exc.response.status_code == 429 or error in ("ratelimited", "rate_limited")
    return TransientError(error, _retry_after(exc), rate_limited=limited, scope="global")


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
