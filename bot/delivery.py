"""Delivering digests through the outbox, whatever the platform.

A digest's messages are written to the outbox first (`queue_digest`), then sent in
order (`deliver_channel`). Each platform supplies a `Poster`; its errors come back as
`PermanentError` (the channel is paused: retrying will never work) or
`TransientError` (try again later, with exponential backoff and jitter, up to
`max_attempts`; then the message is given up and its papers count as undelivered).

Crash safety: a message is marked sent only after the platform accepted it. A crash
between the two resends that one message on restart; nothing else is lost or repeated.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlite_utils import Database

from db import channels as channel_store
from db import outbox
from digests.channels import ChannelRef, parse_channel
from digests.digest import Digest

log = logging.getLogger(__name__)

BACKOFF_BASE_SECONDS = 30.0
BACKOFF_MAX_SECONDS = 3600.0
DEFAULT_MAX_ATTEMPTS = 8


class PermanentError(Exception):
    """The platform will not accept messages for this channel (e.g. channel_not_found)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TransientError(Exception):
    """Worth retrying later: rate limits, server errors, timeouts, lost connections."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class Poster(Protocol):
    platform: str

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        """Send one message; return the platform's id for it (Slack ts, Discord id)."""
        ...


@dataclass(frozen=True)
class ChannelResult:
    channel: str
    sent: int = 0
    state: str = "done"  # done | paused | retrying | failed | nothing
    reason: str | None = None

    def describe(self) -> str:
        if self.state == "paused":
            return (
                f"{self.channel}: paused ({self.reason}); {self.sent} message(s) sent before that"
            )
        if self.state == "retrying":
            return f"{self.channel}: {self.sent} sent, then {self.reason}; will retry"
        if self.state == "failed":
            return f"{self.channel}: {self.sent} sent, then gave up ({self.reason})"
        if self.state == "nothing":
            return f"{self.channel}: nothing to send"
        return f"{self.channel}: {self.sent} message(s) sent"


def backoff(attempts: int, retry_after: float | None = None) -> float:
    """Seconds to wait before the next attempt: Retry-After if the platform gave one,
    else exponential from 30 s, capped at an hour, with jitter so retries do not align."""
    if retry_after is not None:
        return max(retry_after, 0.0)
    base = min(BACKOFF_BASE_SECONDS * 2**attempts, BACKOFF_MAX_SECONDS)
    return base * random.uniform(0.5, 1.0)


def queue_digest(
    db: Database, digest: Digest, messages: list[tuple[dict[str, Any], list[str]]], now: datetime
) -> int:
    """Write a recorded digest's messages (payload, paper ids) to the outbox, once."""
    if digest.digest_id is None:
        raise ValueError("only a recorded digest can be queued, not a preview")
    rows = outbox.enqueue(
        db, digest.channel, digest.digest_id, messages, now.isoformat(timespec="seconds")
    )
    return len(rows)


async def deliver_channel(
    db: Database,
    poster: Poster,
    channel: str,
    now: datetime,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> ChannelResult:
    """Send the channel's due messages in order; stop at the first error."""
    row = channel_store.get_channel(db, channel)
    if row is not None and row["paused"]:
        return ChannelResult(channel, state="paused", reason=row["paused_reason"])
    ref = parse_channel(channel)
    stamp = now.isoformat(timespec="seconds")
    sent = 0
    messages = outbox.due(db, channel, stamp)
    if not messages:
        return ChannelResult(channel, state="nothing")
    for message in messages:
        thread_of = outbox.thread_root(db, message) if message["part"] > 1 else None
        try:
            platform_id = await poster.send(ref, message["payload"], thread_of)
        except PermanentError as exc:
            channel_store.set_paused(db, channel, exc.reason, stamp)
            outbox.pause_channel(db, channel, exc.reason)
            log.warning("delivery to %s paused: %s", channel, exc.reason)
            return ChannelResult(channel, sent, "paused", exc.reason)
        except TransientError as exc:
            attempts = int(message["attempts"]) + 1
            if attempts >= max_attempts:
                outbox.mark_failed(db, message["id"], exc.reason)
                log.warning(
                    "delivery to %s gave up after %d attempts: %s", channel, attempts, exc.reason
                )
                return ChannelResult(channel, sent, "failed", exc.reason)
            wait = backoff(attempts - 1, exc.retry_after)
            retry_at = (now + timedelta(seconds=wait)).isoformat(timespec="seconds")
            outbox.mark_retry(db, message["id"], exc.reason, retry_at)
            log.info("delivery to %s failed (%s); retrying after %s", channel, exc.reason, retry_at)
            return ChannelResult(channel, sent, "retrying", exc.reason)
        outbox.mark_sent(db, message["id"], platform_id, stamp)
        sent += 1
    return ChannelResult(channel, sent)
