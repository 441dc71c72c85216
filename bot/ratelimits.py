"""Pacing the messages sent to one platform, so that it rarely has to say 429.

Slack and Discord limit posting per channel (about one message a second) and for everything
an app sends together (Slack: a workspace-wide limit it does not publish, "several hundred
messages per minute"; Discord: 50 requests a second per bot). A `SendLimits` belongs to a
poster (one per Slack client or Discord bot) and is shared by every delivery through it:

- `wait_turn(channel)` waits for the channel's spacing (`channel_interval`; Slack's poster
  sets 1 s, Discord's none: discord.py spaces each channel by its bucket's
  `X-RateLimit-Remaining` and `-Reset-After`), for any pause a 429 asked for, and for a slot
  of the platform-wide rate. Slots are handed out in order, `1 / rate` apart (a GCRA, with no
  burst): however many channels deliver at once, they send at most `rate` messages a second
  between them, and at that rate as long as any is waiting.
- `limited(channel, retry_after, scope)` is told of every 429: a channel's pauses that
  channel; a platform-wide one (Discord's `global`; any Slack 429, since Slack does not say
  and the channel spacing should have kept within the channel's limit) pauses every send
  for `retry_after`, and lowers the rate by a fifth (at most once a second): the
  configured rate was more than the platform allows now. It climbs back by 1% of the
  configured rate a second without 429s.
- A pause longer than `max_wait` is not waited out: `wait_turn` raises `Throttled`, and the
  outbox tries again after it, without holding a delivery slot meanwhile.

Times are on `monotonic`; tests pass a fake clock and a sleep that moves it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

MAX_WAIT_SECONDS = 60.0
# The longest pause a 429 is taken at its word for (an hour, the outbox's longest backoff): a
# Retry-After beyond it, infinite or not a number is taken as this long.
MAX_PAUSE_SECONDS = 3600.0
DEFAULT_PAUSE_SECONDS = 1.0  # a 429 that does not say for how long
SLOW_DOWN = 0.8  # the rate after a platform-wide 429, as a share of what it was
# A platform-wide 429 lowers the rate at most once in this long: the sends already under
# way when the limit was hit come back 429 over their round trips, after a pause as short
# as Discord's (a few ms) has ended, and say nothing new. Lowered by each of them, 1,000
# Discord channels told 100/s against 50/s fell to the 0.5/s floor: 5% of the allowed rate.
SLOW_DOWN_INTERVAL = 1.0
RECOVERY_PER_SECOND = 0.01  # of the configured rate, regained per second without a 429
MIN_RATE = 0.5  # messages a second: a 429 lowers no rate below it (nor lifts one to it)
MAX_CHANNELS_REMEMBERED = 10_000


def pause_seconds(retry_after: float | None) -> float | None:
    """A platform's Retry-After as a wait we can keep: None stays None (no figure given);
    negative is 0; infinite, not a number, or over `MAX_PAUSE_SECONDS` is
    `MAX_PAUSE_SECONDS` (a longer one only means another 429 then, which costs no attempt;
    taken as given, it overflowed the date of the retry, or paused every send for good)."""
    if retry_after is None:
        return None
    if not retry_after < MAX_PAUSE_SECONDS:  # also nan and inf
        return MAX_PAUSE_SECONDS
    return max(retry_after, 0.0)


class Throttled(Exception):
    """Sending now would first mean a wait longer than `max_wait` (a long Retry-After)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"rate limited for {seconds:.0f} s")
        self.seconds = seconds


class SendLimits:
    def __init__(
        self,
        rate: float | None,
        *,
        channel_interval: float | None = None,
        monotonic: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        max_wait: float = MAX_WAIT_SECONDS,
    ) -> None:
        """`rate`: messages a second across all channels (None: no platform-wide limit);
        `channel_interval`: seconds between two messages to one channel (None: none)."""
        self.ceiling = rate
        self.rate = rate
        self.channel_interval = channel_interval
        self.monotonic = monotonic
        self.sleep = sleep
        self.max_wait = max_wait
        self._next_slot = -math.inf  # when the next platform-wide slot is free
        self._paused_until = -math.inf  # a platform-wide 429's pause
        self._slowed_at = -math.inf  # when a platform-wide 429 last lowered the rate
        self._channel_next: dict[str, float] = {}  # spacing and 429 pauses, by channel
        self._adjusted = monotonic()

    def configure(self, rate: float | None) -> None:
        """Take the configured platform-wide rate (the settings'); a change resets what
        was learnt from 429s."""
        if rate != self.ceiling:
            self.ceiling = self.rate = rate
            self._adjusted = self.monotonic()

    def _recover(self, now: float) -> None:
        if self.rate is not None and self.ceiling is not None and self.rate < self.ceiling:
            regained = self.ceiling * RECOVERY_PER_SECOND * max(now - self._adjusted, 0.0)
            self.rate = min(self.ceiling, self.rate + regained)
        self._adjusted = now

    async def wait_turn(self, channel: str) -> None:
        """Wait until a message may go to `channel` now, and take that turn. Raises
        `Throttled` instead when a 429's pause has longer than `max_wait` to run."""
        while True:
            now = self.monotonic()
            ready = max(self._paused_until, self._channel_next.get(channel, -math.inf))
            if ready - now > self.max_wait:
                raise Throttled(ready - now)
            if ready > now:
                await self.sleep(ready - now)
                continue  # a 429 may have asked for a longer pause meanwhile
            if self.rate is not None:
                self._recover(now)
                slot = max(now, self._next_slot)
                self._next_slot = slot + 1.0 / self.rate
                if slot > now:
                    slowed = self._slowed_at
                    await self.sleep(slot - now)
                    if self._paused_until > self.monotonic() or self._slowed_at != slowed:
                        # A platform-wide 429 came while waiting: wait it out, and take a
                        # turn at the lowered rate (this one was spaced at the old rate).
                        continue
            break
        if self.channel_interval is not None:
            self._remember(channel, self.monotonic() + self.channel_interval)

    def _remember(self, channel: str, until: float) -> None:
        if len(self._channel_next) >= MAX_CHANNELS_REMEMBERED:
            now = self.monotonic()
            self._channel_next = {c: t for c, t in self._channel_next.items() if t > now}
        self._channel_next[channel] = max(until, self._channel_next.get(channel, -math.inf))

    def limited(self, channel: str, retry_after: float | None, scope: str) -> None:
        """A 429 for `channel`: pause it (`scope` "channel") or every send ("global") for
        `retry_after` seconds; a platform-wide one also lowers the rate, once per pause and
        at most once per `SLOW_DOWN_INTERVAL` (the sends already under way when the limit
        was hit come back 429 too)."""
        now = self.monotonic()
        pause = pause_seconds(retry_after)
        until = now + (DEFAULT_PAUSE_SECONDS if pause is None else pause)
        if scope != "global":
            self._remember(channel, until)
            return
        slowed_lately = now - self._slowed_at < SLOW_DOWN_INTERVAL
        if self._paused_until <= now and not slowed_lately and self.rate is not None:
            self._slowed_at = now
            self._recover(now)
            # The floor never lifts a rate configured below it above the setting.
            floor = min(MIN_RATE, self.ceiling) if self.ceiling is not None else MIN_RATE
            self.rate = max(self.rate * SLOW_DOWN, floor)
            log.info(
                "platform-wide rate limit: pausing every send for %.2f s, then %.1f messages/s",
                until - now,
                self.rate,
            )
            # The turns handed out so far were spaced at the old rate: they are taken
            # again, from the end of the pause (64 deliveries waiting for theirs are over a
            # second more at the old rate, into the limit).
            self._next_slot = until
        self._paused_until = max(self._paused_until, until)
        self._next_slot = max(self._next_slot, until)
