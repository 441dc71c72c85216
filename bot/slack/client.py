"""The Slack Web API client Paperboy uses: its base URL from the settings, and retries that
never send a posting call twice (slack_sdk's default handler repeats any call whose
connection broke, even one Slack already read)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

MAX_RATE_LIMIT_RETRIES = 3
MAX_WAIT_SECONDS = 60.0
Sleep = Callable[[float], Awaitable[None]]


# Calls whose 429s the posters' limiters wait out (`bot.ratelimits`, `bot.dm`), for every
# send through them: never retried by `RetryAfterHandler`.
PACED_METHODS = frozenset({"chat.postMessage", "conversations.open"})


class RetryAfterHandler(AsyncRetryHandler):
    """On HTTP 429 with a Retry-After of at most `MAX_WAIT_SECONDS`, wait, then try again
    (Slack refused the call, so a retry repeats nothing); a longer one, and any 429 of
    `PACED_METHODS` (the posters' limiters wait those out), goes to the caller."""

    def __init__(self, max_retry_count: int = MAX_RATE_LIMIT_RETRIES, sleep: Sleep = asyncio.sleep):
        super().__init__(max_retry_count=max_retry_count)
        self.sleep = sleep

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        if _method(request) in PACED_METHODS:
            return False  # the poster's limiters wait out a paced method's 429 themselves
        return _retry_after(response) <= MAX_WAIT_SECONDS

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        wait = min(_retry_after(response) if response is not None else 1.0, MAX_WAIT_SECONDS)
        log.info("Slack rate limit on %s; waiting %.0f s", request.url.rsplit("/", 1)[-1], wait)
        state.next_attempt_requested = True
        await self.sleep(wait)
        state.increment_current_attempt()


def _retry_after(response: HttpResponse) -> float:
    """The response's Retry-After in seconds (1 s when it has none or it is unreadable)."""
    for name, values in response.headers.items():
        if name.lower() == "retry-after" and values:
            with contextlib.suppress(ValueError):
                return max(float(values[0]), 0.0)
    return 1.0


# Calls that post something: sending one again after a lost answer may post it twice.
POSTING_METHODS = ("chat.postMessage", "chat.postEphemeral", "chat.scheduleMessage")


def _method(request: HttpRequest) -> str:
    return request.url.rstrip("/").rsplit("/", 1)[-1]


class SafeConnectionErrorRetryHandler(AsyncConnectionErrorRetryHandler):
    """slack_sdk's connection-error retry (once, after its backoff), but never for a posting call: a
    post whose answer was lost is the outbox's failed attempt, retried with backoff."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if _method(request) in POSTING_METHODS:
            return False
        return await super()._can_retry_async(
            state=state, request=request, response=response, error=error
        )


def error_code(exc: SlackApiError) -> str:
    """Slack's error code (`channel_not_found`), or the HTTP status when there is none."""
    data = exc.response.data
    if isinstance(data, dict) and data.get("error"):
        return str(data["error"])
    return f"HTTP {exc.response.status_code}"


def make_client(token: str, base_url: str, sleep: Sleep = asyncio.sleep) -> AsyncWebClient:
    """An AsyncWebClient against `base_url` that honours rate limits and never posts a
    message twice on its own: a broken connection is retried only for calls that post
    nothing, and a 429 of a paced method is left to the poster's limiters."""
    return AsyncWebClient(
        token=token,
        base_url=base_url,
        timeout=30,
        retry_handlers=[SafeConnectionErrorRetryHandler(), RetryAfterHandler(sleep=sleep)],
    )
