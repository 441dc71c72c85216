"""Delivering digests through the outbox, whatever the platform: a digest's messages are
written to the outbox first (`queue_digest`), then claimed, sent in order and marked sent
(`deliver_channel`), so a crash resends at most the one message under way."""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import os
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.ratelimits import MAX_WAIT_SECONDS, SendLimits, Throttled, pause_seconds
from config.settings import Settings
from db import channels as channel_store
from db import outbox, processes
from db.errors import StorageError
from db.store import Store
from digests.channels import ChannelRef, parse_channel
from digests.digest import Digest
from digests.timestamps import stamp

log = logging.getLogger(__name__)

BACKOFF_BASE_SECONDS = 30.0
BACKOFF_MAX_SECONDS = 3600.0
DEFAULT_MAX_ATTEMPTS = 8
# 429s waited out within one delivery of a message, before leaving it to the outbox.
MAX_RATE_LIMIT_RETRIES = 3


class PermanentError(Exception):
    """The platform will not accept messages for this channel (e.g. channel_not_found)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RefusedMessage(Exception):
    """The platform refused this message for what it is (Slack's `msg_blocks_too_long`,
    `invalid_blocks`): sending it again can never work, but the channel takes others. The
    renderer keeps within every limit it knows, so this is Paperboy's bug, not the
    channel's: the message is given up at once (with the digest's later parts) rather
    than retried `max_attempts` times, and the channel is not paused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TransientError(Exception):
    """Worth retrying later: rate limits, server errors, timeouts, lost connections.

    `rate_limited`: the platform refused the message with a 429, so it was certainly not
    posted; `scope` says whether its limit was the channel's or platform-wide ("global")."""

    def __init__(
        self,
        reason: str,
        retry_after: float | None = None,
        *,
        rate_limited: bool = False,
        scope: str = "channel",
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.scope = scope


# The outbox message being sent, as a key that is the same on every attempt: a platform
# that deduplicates on a client key (Discord's `nonce` with `enforce_nonce`) uses it.
MESSAGE_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "paperboy_message_key", default=None
)


def message_key(message: dict[str, Any]) -> str:
    """The same on every attempt at one outbox message, and different for every other
    message this bot may send: Discord deduplicates nonces per bot user, across its
    channels, so a key made of row ids alone (digest 1, part 1, row 1) would match the
    first message of another database on the same bot (another deployment, a fresh
    `demo`) and Discord would answer with that message instead of posting this one.
    A snowflake-sized decimal (at most 19 digits: Discord takes up to 25 characters)
    hashed from the channel, the row's ids and its queueing time."""
    source = "|".join(
        str(message.get(name)) for name in ("channel", "digest_id", "part", "id", "created_at")
    )
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return str(int.from_bytes(digest[:8], "big") >> 1)


class Poster(Protocol):
    """Sends messages to one platform. A poster may also have `limits: SendLimits`, which
    `deliver_channel` waits on before each message is claimed (shared by every delivery
    through that poster, so channels delivering at once keep within the limits), and
    `ready_in(channel) -> float`, seconds before a send could start: beyond the limits'
    `max_wait`, the message waits in the outbox as for a long 429 (a DM to open)."""

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
                f"{self.channel}: paused ({self.reason}); {_messages(self.sent)} sent before that"
            )
        if self.state == "retrying":
            return f"{self.channel}: {self.sent} sent, then {self.reason}; will retry"
        if self.state == "failed":
            return f"{self.channel}: {self.sent} sent, then gave up ({self.reason})"
        if self.state == "nothing":
            return f"{self.channel}: nothing to send"
        return f"{self.channel}: {_messages(self.sent)} sent"


def _messages(count: int) -> str:
    return "1 message" if count == 1 else f"{count} messages"


def backoff(attempts: int, retry_after: float | None = None) -> float:
    """Seconds to wait before the next attempt: Retry-After if the platform gave one,
    else exponential from 30 s, capped at an hour, with jitter so retries do not align."""
    if retry_after is not None:
        return max(retry_after, 0.0)
    base = min(BACKOFF_BASE_SECONDS * 2.0**attempts, BACKOFF_MAX_SECONDS)
    return base * random.uniform(0.5, 1.0)


def posting_rate(settings: Settings, platform: str) -> float | None:
    """The platform-wide posting rate the settings give `platform` (None: unlimited)."""
    if platform == "slack":
        return settings.slack_posts_per_second
    if platform == "discord":
        return settings.discord_posts_per_second
    return None


def queue_digest(
    db: Store, digest: Digest, messages: list[tuple[dict[str, Any], list[str]]], now: datetime
) -> int:
    """Write a recorded digest's messages (payload, paper ids) to the outbox, once."""
    if digest.digest_id is None:
        raise ValueError("only a recorded digest can be queued, not a preview")
    return outbox.enqueue(db, digest.channel, digest.digest_id, messages, stamp(now))


def _machine() -> str:
    """This host, and its process-id namespace: two containers on one host network share
    the host name, but a pid means nothing outside its own namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        namespace = "pid"
    return f"{socket.gethostname()}/{namespace}"


_monotonic = time.monotonic  # tests replace it


MACHINE = _machine()
SENDER = f"{MACHINE}:{os.getpid()}"
CLAIM_SECONDS = 600  # longer than any one send, retries of rate limits included
# A send with no answer by then is given up for this attempt (a hung connection must not
# hold a channel, or a stop, for ever). Slack's own retries of a 429 fit within it.
SEND_TIMEOUT_SECONDS = 300.0


def heartbeat_alive(db: Store, gone_after: timedelta) -> Callable[[str], bool]:
    """`sender_alive`, where a sender on another machine is also dead once its process
    (bot/cluster.py registers each `paperboy run` under its SENDER) stopped or has not
    heartbeat for `gone_after`: its claims are taken over then, not when they run out."""
    gone = {str(row["id"]) for row in processes.gone(db, processes.database_now(db), gone_after)}
    return lambda sender: sender not in gone and sender_alive(sender)


def sender_alive(sender: str) -> bool:
    """Whether the process that claimed a message may still be sending it. On this host,
    in this pid namespace, we can tell; elsewhere (another host, another container on
    this host's network) only the claim's time limit can."""
    machine, _, pid = sender.rpartition(":")
    if machine != MACHINE or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _record_sent(db: Store, message_id: int, platform_id: str, at: str) -> bool:
    """Record a send; a busy database must not make an accepted message go out again.
    False if our claim was taken over meanwhile: the record is the new holder's."""
    for attempt in range(5):
        try:
            return outbox.mark_sent(db, message_id, platform_id, at, sender=SENDER)
        except StorageError:
            if attempt == 4:
                raise
            await asyncio.sleep(0.5 * 2**attempt)
    return False  # not reached: the last attempt returns or raises


async def deliver_channel(
    db: Store,
    poster: Poster,
    channel: str,
    now: datetime,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    clock: Callable[[], datetime] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    send_timeout: float = SEND_TIMEOUT_SECONDS,
    rate: float | None = None,
    gone_after: timedelta | None = None,
) -> ChannelResult:
    """Send the channel's due messages in order; stop at the first error.

    Each message is claimed before it is sent, so a second sender (another process,
    `paperboy digest --send` while `paperboy run` is up) never sends it too. No new send
    starts once `stopping()` is true; a send with no answer within `send_timeout` counts as
    a transient error (it may have arrived: see "at most one repeat" in the architecture
    notes). A send cut off by cancellation (a stop) leaves its message pending. The wait
    for the poster's rate limits comes before the claim, outside `send_timeout`; `rate`
    (the settings' `posting_rate`) is the platform-wide rate they keep to.

    Errors: `PermanentError` pauses the channel; `RefusedMessage` gives that message up at
    once (with the digest's later parts); `TransientError` retries later with exponential
    backoff and jitter, and gives up after `max_attempts` (its papers count as
    undelivered). A 429 (`rate_limited`) is no attempt: the limiter is told (a global one
    pauses every channel) and the message is sent again after the wait, up to
    MAX_RATE_LIMIT_RETRIES times in one delivery, then left to the outbox.
    """
    row = channel_store.get_channel(db, channel)
    if row is not None and row["paused"]:
        return ChannelResult(channel, state="paused", reason=row["paused_reason"])
    ref = parse_channel(channel)
    alive = sender_alive if gone_after is None else heartbeat_alive(db, gone_after)
    messages = outbox.due(db, channel, stamp(now), alive)
    if not messages:
        return ChannelResult(channel, state="nothing")
    limits: SendLimits | None = getattr(poster, "limits", None)
    ready_in: Callable[[ChannelRef], float] | None = getattr(poster, "ready_in", None)
    if limits is not None and rate is not None:
        limits.configure(rate)
    clock = clock or (lambda: now)
    started = _monotonic()

    def current() -> datetime:
        # From the clock, not `now`: the waits for turns (and, in the scheduler, for a
        # delivery slot) can be long. And never from before the time spent here (a caller
        # without a clock: `--send`).
        return max(clock(), now + timedelta(seconds=_monotonic() - started))

    sent = 0
    for message in messages:
        refused = 0  # 429s for this message in this delivery
        while True:
            if stopping():
                return ChannelResult(channel, sent, "retrying" if sent else "nothing", "stopping")
            if limits is not None:
                try:
                    # A send that could not start within the limits' wait (a DM to open,
                    # its opens' turn further off) takes no posting turn to give back.
                    ahead = ready_in(ref) if ready_in is not None else 0.0
                    if ahead > limits.max_wait:
                        raise Throttled(ahead)
                    await limits.wait_turn(ref.name)
                except Throttled as exc:
                    outbox.defer(db, message["id"], stamp(clock() + timedelta(seconds=exc.seconds)))
                    log.info("delivery to %s waits: %s", channel, exc)
                    return ChannelResult(channel, sent, "retrying", "rate limited")
                if stopping():
                    return ChannelResult(
                        channel, sent, "retrying" if sent else "nothing", "stopping"
                    )
            # From now on: the wait for a turn can be longer than the claim, which would then
            # have expired before the send and let a second sender take it as abandoned.
            until = stamp(current() + timedelta(seconds=CLAIM_SECONDS))
            if not outbox.claim(db, message, SENDER, until):
                return ChannelResult(
                    channel, sent, "nothing" if not sent else "done", "sent elsewhere"
                )
            if int(message["attempts"]) >= max_attempts:
                # Its attempts were used up by sends whose outcome is unknown (crashes or
                # stops mid-send): sending it again could make more copies than attempts.
                # (Claimed first, so that no other sender is sending it while it is given up.)
                return _give_up(db, channel, message, "no answer to its last attempt", sent)
            outcome = await _send_one(db, poster, ref, message, send_timeout)
            if isinstance(outcome, str):
                platform_id = outcome
                break
            if isinstance(outcome, RefusedMessage):
                return _give_up(db, channel, message, outcome.reason, sent, refused=True)
            if isinstance(outcome, PermanentError):
                channel_store.set_paused(db, channel, outcome.reason, stamp(current()))
                outbox.pause_channel(db, channel, outcome.reason)
                log.warning("delivery to %s paused: %s", channel, outcome.reason)
                return ChannelResult(channel, sent, "paused", outcome.reason)
            if not outcome.rate_limited:
                return _retry_later(
                    db,
                    channel,
                    message,
                    outcome.reason,
                    pause_seconds(outcome.retry_after),
                    sent,
                    max_attempts,
                    clock,
                )
            # Refused with a 429: not posted, so no attempt (the claim's is given back).
            wait = pause_seconds(outcome.retry_after)
            if limits is not None:
                limits.limited(ref.name, wait, outcome.scope)
            refused += 1
            retry_at = None  # None: sent again here after the wait; else by the outbox
            if limits is None or refused > MAX_RATE_LIMIT_RETRIES or (wait or 0) > MAX_WAIT_SECONDS:
                retry_at = stamp(clock() + timedelta(seconds=backoff(0, wait)))
            if not outbox.release(
                db,
                message["id"],
                refund=True,
                sender=SENDER,
                error=outcome.reason,
                next_attempt_at=retry_at,
            ):  # another sender took it over meanwhile: it is theirs now
                return ChannelResult(channel, sent, "retrying", "sent elsewhere")
            message = {**message, "state": "pending", "claimed_by": None}
            if retry_at is not None:
                log.info(
                    "delivery to %s rate limited (%s); retrying after %s",
                    channel,
                    outcome.reason,
                    retry_at,
                )
                return ChannelResult(channel, sent, "retrying", outcome.reason)
            log.info("delivery to %s rate limited; sending again after the wait", channel)
        sent += 1
        if not await _record_sent(db, message["id"], platform_id, stamp(clock())):
            # Our claim ran out and another sender took the message over: it is sending it
            # too, and records it. The parts after it wait for that (they go in order).
            log.info("delivered to %s, but another sender has that message now", channel)
            return ChannelResult(channel, sent, "retrying", "sent elsewhere")
        week, parts = outbox.digest_parts(db, message["digest_id"])
        log.info(
            "delivered to %s: digest %s (%s), part %d of %d",
            channel,
            message["digest_id"],
            week,
            message["part"],
            parts,
        )
    return ChannelResult(channel, sent)


async def _send_one(
    db: Store, poster: Poster, ref: ChannelRef, message: dict[str, Any], send_timeout: float
) -> str | PermanentError | RefusedMessage | TransientError:
    """Send one claimed message: the platform's id for it, or the error (an unexpected one
    as a transient error, logged with its traceback). A cancellation (a stop) gives the
    message back, pending, and goes on."""
    thread_of = outbox.thread_root(db, message) if message["part"] > 1 else None
    key = MESSAGE_KEY.set(message_key(message))
    try:
        try:
            return await asyncio.wait_for(
                poster.send(ref, message["payload"], thread_of), send_timeout
            )
        except TimeoutError:
            raise TransientError(f"no answer within {send_timeout:.0f} s") from None
    except asyncio.CancelledError:
        outbox.release(db, message["id"], sender=SENDER)  # cut off by a stop: pending again
        raise
    except (PermanentError, RefusedMessage, TransientError) as exc:
        return exc
    except Exception as exc:  # unexpected: retried with backoff all the same
        log.exception("unexpected error sending to %s", ref)
        return TransientError(f"unexpected {type(exc).__name__}")
    finally:
        MESSAGE_KEY.reset(key)


def _retry_later(
    db: Store,
    channel: str,
    message: dict[str, Any],
    reason: str,
    retry_after: float | None,
    sent: int,
    max_attempts: int,
    clock: Callable[[], datetime],
) -> ChannelResult:
    attempts = int(message["attempts"]) + 1  # this one included (counted at the claim)
    if attempts >= max_attempts:
        return _give_up(db, channel, {**message, "attempts": attempts}, reason, sent)
    # From the time of the error, not of the run: the run may have waited long.
    retry_at = stamp(clock() + timedelta(seconds=backoff(attempts - 1, retry_after)))
    if not outbox.mark_retry(db, message["id"], reason, retry_at, sender=SENDER):
        # Taken over by another sender meanwhile (our claim had run out): theirs now.
        log.info("delivery to %s failed (%s); another sender has it now", channel, reason)
    else:
        log.info("delivery to %s failed (%s); retrying after %s", channel, reason, retry_at)
    return ChannelResult(channel, sent, "retrying", reason)


def _give_up(
    db: Store,
    channel: str,
    message: dict[str, Any],
    reason: str,
    sent: int,
    *,
    refused: bool = False,
) -> ChannelResult:
    """Give the message up (with its digest's later parts), and say so in one log line.
    `refused`: the platform refused the message itself (`RefusedMessage`)."""
    later = outbox.mark_failed(db, message["id"], reason, sender=SENDER)
    if later is None:  # taken over by another sender meanwhile (our claim had run out)
        log.info("delivery to %s failed (%s); another sender has it now", channel, reason)
        return ChannelResult(channel, sent, "retrying", "sent elsewhere")
    if refused:
        # An error, not a warning: the message was made wrong. Its payload stays in the
        # outbox (state failed) to look at, and its papers are not lost: a given-up
        # message's papers count as undelivered, so a later digest picks them again.
        log.error(
            "delivery to %s: the platform refused part %d of digest %s (%s), a message "
            "Paperboy should not have made (please report it); gave it up%s without "
            "retrying, the channel is not paused and its papers can go in a later digest",
            channel,
            message["part"],
            message["digest_id"],
            reason,
            f" with the {later} later part(s)" if later else "",
        )
        return ChannelResult(channel, sent, "failed", reason)
    log.warning(
        "delivery to %s gave up after %d attempts: %s%s",
        channel,
        message["attempts"],
        reason,
        f" (and the {later} later part(s) of that digest)" if later else "",
    )
    return ChannelResult(channel, sent, "failed", reason)
