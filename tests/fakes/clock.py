"""Fake clocks. `Clock`: callable like the `clock=` the services and the scheduler take,
and set by the test (`clock.now = ...`) to move time on. `FakeTime`: a monotonic clock and
a sleep that only moves it, for the Slack posting and Home refresh pacing (fetch tests have
their own, tests/fakes/fetch_time.py, whose clock is `clock()`)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

log = logging.getLogger(__name__)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class FakeTime:
    """`monotonic()` reads `now`; `sleep(seconds)` records the wait (rounded to the
    millisecond, `sleeps`) and moves `now` on by it at once (never back, as asyncio.sleep
    takes a negative wait as none), then yields once to the event loop, as a real sleep
    does, so other tasks run."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)
