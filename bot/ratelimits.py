"""Pacing the messages sent to one platform, so that it rarely has to say 429.

A `SendLimits` belongs to a poster and is shared by every delivery through it. `wait_turn`
waits for the channel's spacing, any 429's pause and a slot of the platform-wide rate (slots
`1 / rate` apart, no burst); a pause longer than `max_wait` raises `Throttled`. `limited` is
told of every 429: it pauses the channel or every send, lowers the rate (then climbs back),
and from the platform's declared global 429s measures the real rate and keeps to it a while.
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
# as Discord's (a few ms) has ended, and say nothing new.
SLOW_DOWN_INTERVAL = 1.0
RECOVERY_PER_SECOND = 0.01  # of the configured rate, regained per second without a 429
MIN_RATE = 0.5  # messages a second: a 429 lowers no rate below it (nor lifts one to it)
MAX_CHANNELS_REMEMBERED = 10_000
FIRST_SLOW_DOWN = 0.5  # the rate after the first declared global 429: nothing measured yet
LEARN_MARGIN = 0.98  # of a measured rate: the rate sent at once it is known
# 429s closer together measure nothing: the same overrun's sends under way come back 429
# within a round trip, and over a short time the answers still on their way count more.
MIN_MEASURE_SECONDS = 2.0
# 429s further apart measure nothing either: the bucket was empty at both only if the bot
# kept sending between them (it may have idled between two batches). The later one starts
# a new measure instead.
MAX_MEASURE_SECONDS = 30.0
# A measured rate holds this long after the last declared global 429, then the rate
# climbs back towards the setting (and a 429 measures again): a wrong measure (a forged
# or stray 429, another process sending with the same token) does not throttle for good.
LEARNED_SECONDS = 600.0


def pause_seconds(retry_after: float | None) -> float | None:
    """A platform's Retry-After as a wait we can keep: None stays None (no figure given);
    negative is 0; infinite, not a number, or over `MAX_PAUSE_SECONDS` is
    `MAX_PAUSE_SECONDS` (a longer one only means another 429 then, which costs no attempt;
    taken as given, it could overflow the retry's date, or pause every send for good)."""
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
        self._channel_spacing: dict[str, float] = {}  # learnt from a channel's 429
        self._adjusted = monotonic()
        self.learned: float | None = None  # the platform-wide rate measured, x LEARN_MARGIN
        self._accepted = 0  # sends the platform answered as posted (`accepted`)
        self._empty: tuple[float, int] | None = None  # a declared global 429: when, accepted
        self._declared_at = -math.inf  # the last declared global 429 (`learned` holds since)

    def configure(self, rate: float | None) -> None:
        """Take the configured platform-wide rate (the settings'); a change resets what
        was learnt from 429s."""
        if rate != self.ceiling:
            self.ceiling = self.rate = rate
            self.learned, self._empty = None, None
            self._adjusted = self.monotonic()

    def _recover(self, now: float) -> None:
        expires = self._declared_at + LEARNED_SECONDS
        if self.learned is not None and now >= expires:
            log.info(
                "platform-wide rate measured %.0f s ago: climbing back", now - self._declared_at
            )
            self.learned, self._empty = None, None  # the next 429 starts over
            self._adjusted = max(self._adjusted, expires)  # climbs from then on
        if self.rate is not None and self.ceiling is not None:
            cap = min(self.ceiling, self.learned or math.inf)  # never back above a measure
            if self.rate < cap:
                regained = self.ceiling * RECOVERY_PER_SECOND * max(now - self._adjusted, 0.0)
                self.rate = min(cap, self.rate + regained)
        self._adjusted = now

    def delay(self, channel: str) -> float:
        """Seconds before `wait_turn(channel)` would give a turn now (0: at once), taking
        none: a 429's pause, the channel's spacing and the next platform-wide slot."""
        now = self.monotonic()
        ready = max(self._paused_until, self._channel_next.get(channel, -math.inf))
        if self.rate is not None:
            ready = max(ready, self._next_slot)
        return max(ready - now, 0.0)

    async def wait_turn(self, channel: str, *, within: float | None = None) -> None:
        """Wait until a message may go to `channel` now, and take that turn. Raises
        `Throttled` instead when a 429's pause has longer than `max_wait` to run, or (with
        `within`) when that pause, or the next platform-wide slot, is further off than
        `within` seconds (its turn not taken): for a wait made inside a send, which its
        timeout and claim bound (`bot.dm`: opening a DM)."""
        limit = self.max_wait if within is None else min(self.max_wait, within)
        while True:
            now = self.monotonic()
            ready = max(self._paused_until, self._channel_next.get(channel, -math.inf))
            if ready - now > limit:
                raise Throttled(ready - now)
            if ready > now:
                await self.sleep(ready - now)
                continue  # a 429 may have asked for a longer pause meanwhile
            if self.rate is not None:
                self._recover(now)
                slot = max(now, self._next_slot)
                if within is not None and slot - now > within:
                    raise Throttled(slot - now)
                self._next_slot = slot + 1.0 / self.rate
                if slot > now:
                    slowed = self._slowed_at
                    await self.sleep(slot - now)
                    if self._paused_until > self.monotonic() or self._slowed_at != slowed:
                        # A platform-wide 429 came while waiting: wait it out, and take a
                        # turn at the lowered rate (this one was spaced at the old rate).
                        continue
            break
        spacing = max(self.channel_interval or 0.0, self._channel_spacing.get(channel, 0.0))
        if spacing > 0:
            self._remember(channel, self.monotonic() + spacing)

    def _remember(self, channel: str, until: float) -> None:
        if len(self._channel_next) >= MAX_CHANNELS_REMEMBERED:
            now = self.monotonic()
            self._channel_next = {c: t for c, t in self._channel_next.items() if t > now}
            if len(self._channel_spacing) >= MAX_CHANNELS_REMEMBERED:
                self._channel_spacing.clear()  # learnt again from the next 429, if any
        self._channel_next[channel] = max(until, self._channel_next.get(channel, -math.inf))

    def limited(
        self,
        channel: str,
        retry_after: float | None,
        scope: str,
        *,
        declared: bool = False,
        bucket_size: float | None = None,
        full_after: float | None = None,
    ) -> None:
        """A 429 for `channel`: pause it (`scope` "channel") or every send ("global") for
        `retry_after` seconds; a platform-wide one also lowers the rate, once per pause and
        at most once per `SLOW_DOWN_INTERVAL` (the sends already under way when the limit
        was hit come back 429 too). `declared`: the platform said the 429 was its global
        limit (see the module's doc: the rate is then measured). A channel's 429 with
        `bucket_size` (X-RateLimit-Limit) and `full_after` (X-RateLimit-Reset-After, its
        bucket being empty) spaces the channel's later sends `full_after / bucket_size`
        apart, its bucket's rate."""
        now = self.monotonic()
        pause = pause_seconds(retry_after)
        until = now + (DEFAULT_PAUSE_SECONDS if pause is None else pause)
        if scope != "global":
            if bucket_size and full_after and 0 < full_after <= MAX_WAIT_SECONDS:
                spacing = full_after / bucket_size / LEARN_MARGIN
                if spacing > self._channel_spacing.get(channel, 0.0):
                    self._channel_spacing[channel] = spacing
            self._remember(channel, until)
            return
        if declared:
            self._recover(now)  # a measure that has expired is forgotten first
        first = declared and self._empty is None
        measured = self._measure(now) if declared else None
        if declared:
            self._declared_at = now
        slowed_lately = now - self._slowed_at < SLOW_DOWN_INTERVAL
        if self.rate is not None and (
            measured is not None or (self._paused_until <= now and not slowed_lately)
        ):
            self._slowed_at = now
            self._recover(now)
            # The floor never lifts a rate configured below it above the setting.
            floor = min(MIN_RATE, self.ceiling) if self.ceiling is not None else MIN_RATE
            if measured is not None:
                self.learned = max(measured * LEARN_MARGIN, floor)
                self.rate = min(self.rate, self.learned)
                log.info(
                    "platform-wide rate limit measured at %.1f messages/s: sending at %.1f",
                    measured,
                    self.rate,
                )
            else:
                # Once measured, a 429 too soon to measure again (a burst of sends a late
                # event loop let out together) only pauses: slowing down would cost rate.
                factor = FIRST_SLOW_DOWN if first else 1.0 if self.learned else SLOW_DOWN
                self.rate = max(self.rate * factor, floor)
                log.info(
                    "platform-wide rate limit: pausing every send for %.2f s, then %.1f messages/s",
                    until - now,
                    self.rate,
                )
            # The turns handed out so far were spaced at the old rate: they are taken
            # again, from the end of the pause (64 deliveries waiting for theirs are over a
            # second more at the old rate, into the limit).
            self._next_slot = until
        # The pause itself is `_paused_until` alone: `wait_turn` takes no slot before it.
        self._paused_until = max(self._paused_until, until)

    def accepted(self) -> None:
        """The platform answered a send as posted (Discord's poster hears every answer).
        Counted by answer, not by turn: at a 429, the turns taken but not yet answered
        (10-30 of them at 100/s on a late loop) would make the measure low."""
        self._accepted += 1

    def _measure(self, now: float) -> float | None:
        """The platform's rate, from a declared global 429 at `now` and the previous one:
        its bucket was empty at both, so what it accepted between them over the time
        between them is its rate (less, if this sender left it unused long enough for it
        to fill). None at the first (the start had its burst), or within
        `MIN_MEASURE_SECONDS` of the last one measured from."""
        through = self._accepted
        if self._empty is None:
            self._empty = (now, through)
            return None
        since, before = self._empty
        if now - since < MIN_MEASURE_SECONDS:
            return None
        if now - since > MAX_MEASURE_SECONDS:  # idle meanwhile, maybe: measure from here
            self._empty = (now, through)
            return None
        self._empty = (now, through)
        return max(through - before, 0) / (now - since)
