"""Delivery under rate limits on virtual time: a queue, a poster, Slack payloads."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import Counter
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from bot.delivery import ChannelResult, deliver_channel
from bot.ratelimits import SendLimits
from config.settings import load_settings
from db import digests as digest_store
from db import open_db, outbox
from db.store import Store
from digests.channels import ChannelRef
from digests.digest import ensure_channel
from digests.timestamps import stamp
from tests.conftest import NOW


class VirtualTime:
    """A clock that moves only when every sender waits on `sleep`: then to the earliest
    wake-up, which is woken. A sender busy with HTTP holds time still."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.active = 0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(seconds, 0.0), next(self._order), future))
        self._advance()
        await future

    def _advance(self) -> None:
        if self._sleepers and len(self._sleepers) >= self.active:
            at, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, at)
            future.set_result(None)

    async def run(self, work: list[Coroutine[Any, Any, ChannelResult]]) -> list[ChannelResult]:
        async def one(job: Coroutine[Any, Any, ChannelResult]) -> ChannelResult:
            try:
                return await job
            finally:
                self.active -= 1
                self._advance()

        self.active = len(work)
        return list(await asyncio.gather(*(one(job) for job in work)))


def queue(db: Store, channels: list[str], parts: int, payload: Any) -> None:
    settings = load_settings({}, dotenv=None)
    for channel in channels:
        ensure_channel(db, channel, settings, NOW)
        row = digest_store.insert_digest(db, channel, "2026-W49", stamp(NOW), [], [])
        messages = [(payload(channel, part), []) for part in range(1, parts + 1)]
        outbox.enqueue(db, channel, int(row["id"]), messages, stamp(NOW))


async def deliver_all(
    db: Store, poster: Any, channels: list[str], time: VirtualTime, **kwargs: Any
) -> list[ChannelResult]:
    return await time.run([deliver_channel(db, poster, c, NOW, **kwargs) for c in channels])


def states(db: Store) -> Counter[str]:
    return Counter(row["state"] for row in db.query("select state from outbox"))


def slack_payload(channel: str, part: int) -> dict[str, Any]:
    return {"text": f"{channel} part {part}"}


@pytest.fixture
def db(tmp_path: Path) -> Store:
    return open_db(tmp_path / "outbox.db")


@pytest.fixture
def time() -> VirtualTime:
    return VirtualTime()


class Poster:
    """A Slack-like poster on the virtual clock that answers each send with the next of
    `answers` (an exception to raise), or posts."""

    platform = "slack"

    def __init__(self, limits: SendLimits, answers: list[Exception] | None = None) -> None:
        self.limits = limits
        self.answers = list(answers or [])
        self.posted: list[str] = []
        self.during_send: list[Any] = []

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if self.answers:
            raise self.answers.pop(0)
        self.posted.append(payload["text"])
        self.during_send.append(self.watch(channel))
        return f"ts{len(self.posted)}"

    def watch(self, channel: ChannelRef) -> Any:  # replaced by the test
        return None
