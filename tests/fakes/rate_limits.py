"""Posting limits as Slack and Discord enforce them, for the local fakes.

Both services limit posting per channel to about one message a second with a short burst
(Slack: "1 per second, short bursts >1 allowed"; Discord: 5 per 5 s on
`POST /channels/{id}/messages`), and everything an app or bot sends together (Slack: a
workspace-wide limit it does not publish; Discord: 50 requests a second per bot). Each
limit is a token bucket here: `rate` tokens a second, at most `burst` saved up; a post
takes one token from its channel's bucket and one from the global one, or, when either is
empty, none, and is refused (HTTP 429) with the wait until both have one.

The clock is injectable, so tests can share one fake clock between the sender and the
fake. `shortest_time` says how long a perfect sender needs for a workload: the
benchmark's "allowed rate" (see `bench/delivery.py`).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class TokenBucket:
    rate: float  # tokens a second
    burst: float  # tokens saved up at most (and at the start)
    tokens: float = -1.0
    stamp: float = 0.0

    def refill(self, now: float) -> None:
        if self.tokens < 0:
            self.tokens, self.stamp = self.burst, now
            return
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait(self, now: float) -> float:
        """Seconds until the bucket has a token (0 when it has one now)."""
        self.refill(now)
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate

    def until_full(self, now: float) -> float:
        self.refill(now)
        return (self.burst - self.tokens) / self.rate


def up(seconds: float) -> float:
    """Rounded up to the millisecond, as Discord's retry_after is: a sender that waits
    exactly that finds a token."""
    return math.ceil(seconds * 1000) / 1000


@dataclass(frozen=True)
class Verdict:
    ok: bool
    scope: str = "channel"  # of a refusal: "channel" or "global"
    retry_after: float = 0.0
    # The channel's bucket after this request, as Discord's X-RateLimit-* headers say it.
    limit: int = 0
    remaining: int = 0
    reset_after: float = 0.0


@dataclass
class RateLimits:
    channel_rate: float = 1.0
    channel_burst: int = 3
    global_rate: float = 50.0
    global_burst: int = 50
    clock: Callable[[], float] = time.monotonic
    refused: Counter[str] = field(default_factory=Counter)  # 429s by channel
    refused_global: int = 0  # of those, refused by the global limit
    _channels: dict[str, TokenBucket] = field(default_factory=dict)
    _global: TokenBucket | None = None

    def admit(self, channel: str) -> Verdict:
        """Take a token for a post to `channel`, or refuse it (nothing taken)."""
        now = self.clock()
        if self._global is None:
            self._global = TokenBucket(self.global_rate, self.global_burst)
        bucket = self._channels.get(channel)
        if bucket is None:
            bucket = self._channels[channel] = TokenBucket(self.channel_rate, self.channel_burst)
        channel_wait, global_wait = bucket.wait(now), self._global.wait(now)
        if channel_wait > 0 or global_wait > 0:
            self.refused[channel] += 1
            scope = "global" if global_wait > channel_wait else "channel"
            self.refused_global += scope == "global"
            return Verdict(
                False,
                scope,
                up(max(channel_wait, global_wait)),
                self.channel_burst,
                0,
                up(bucket.until_full(now)),
            )
        bucket.tokens -= 1
        self._global.tokens -= 1
        return Verdict(
            True,
            limit=self.channel_burst,
            remaining=math.floor(bucket.tokens),
            reset_after=up(bucket.until_full(now)),
        )

    def shortest_time(self, per_channel: Sequence[int]) -> float:
        """Seconds a perfect sender needs to post `per_channel[i]` messages to each of these
        channels, starting with full buckets: the global bucket lets `global_burst + global_rate
        * t` through by time t, a channel's `channel_burst + channel_rate * t`."""
        total = sum(per_channel)
        by_global = (total - self.global_burst) / self.global_rate
        by_channel = max(
            ((m - self.channel_burst) / self.channel_rate for m in per_channel), default=0
        )
        return max(by_global, by_channel, 0.0)
