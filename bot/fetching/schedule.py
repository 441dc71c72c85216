"""Scheduled fetching in `paperboy run`, a part of `bot.scheduler.DigestScheduler`.

Each source has a job `fetch:NAME` on its `cron`, else `PAPERBOY_FETCH_CRON`; sources due
(`DUE_AFTER`) are fetched at start-up and before each digest run, which waits for them at
most `FETCH_WAIT_SECONDS`. A failed source is retried after its backoff. Fetches run as
their own tasks, one at a time per kind; a stop cancels them, stored pages kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable
from datetime import datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from bot.fetching.store import DUE_AFTER, SourceFetcher, fetch_config
from bot.services import Services
from db.sources import list_sources
from digests.ingest.decode import Limits

log = logging.getLogger(__name__)

JOB_PREFIX = "fetch:"
FETCH_WAIT_SECONDS = 300.0  # how long a digest waits for due sources being fetched
Spawn = Callable[[Coroutine[Any, Any, Any], str], "asyncio.Task[None]"]


class FetchJobs:
    def __init__(
        self,
        services: Services,
        scheduler: AsyncIOScheduler,
        spawn: Spawn,
        fetcher: SourceFetcher | None = None,
    ) -> None:
        self.services = services
        self.scheduler = scheduler
        self.spawn = spawn
        settings = services.settings
        self.fetcher = fetcher or SourceFetcher(
            services.db,
            fetch_config(settings),
            clock=services.clock,
            limits=Limits.from_kb(settings.max_record_kb),
        )
        self.wait_seconds = FETCH_WAIT_SECONDS
        self._crons: dict[str, str] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._kinds: dict[str, asyncio.Lock] = {}
        self._due_ask: asyncio.Future[list[str]] | None = None
        self.stopping = False

    def sync(self) -> None:
        """Make the fetch jobs match the sources in the database."""
        wanted = {
            row["name"]: row["cron"] or self.services.settings.fetch_cron
            for row in list_sources(self.services.db())
        }
        for name in list(self._crons):
            if name not in wanted:
                if self.scheduler.get_job(JOB_PREFIX + name):
                    self.scheduler.remove_job(JOB_PREFIX + name)
                del self._crons[name]
        for name, cron in wanted.items():
            if self._crons.get(name) == cron:
                continue
            try:
                self.scheduler.add_job(
                    self._fire,
                    CronTrigger.from_crontab(cron, timezone="UTC"),
                    args=[name],
                    id=JOB_PREFIX + name,
                    replace_existing=True,
                    coalesce=True,
                    max_instances=1,
                    misfire_grace_time=3600,
                )
            except Exception:  # one bad row must not stop the others' schedules
                log.exception("could not schedule the fetch of %s (%s)", name, cron)
                continue
            self._crons[name] = cron

    async def _fire(self, name: str) -> None:
        self.start([name])

    def start(self, names: Iterable[str]) -> list[asyncio.Task[None]]:
        """Start fetching `names` (each unless it is being fetched already); returns the
        tasks fetching them, those already under way included."""
        tasks = []
        for name in names:
            task = self._tasks.get(name)
            if task is None or task.done():
                if self.stopping:
                    continue
                task = self.spawn(self._fetch(name), JOB_PREFIX + name)
                self._tasks[name] = task
            tasks.append(task)
        return tasks

    async def _fetch(self, name: str) -> None:
        kind = name.partition(":")[0]
        async with self._kinds.setdefault(kind, asyncio.Lock()):
            if not self.stopping:
                await self.fetcher.fetch([name])

    def start_due(self, now: datetime | None = None) -> list[asyncio.Task[None]]:
        """Fetch the sources whose last success is older than DUE_AFTER."""
        return self.start(self.fetcher.due(now or self.services.clock(), DUE_AFTER))

    async def before_digest(self, now: datetime, channel: str) -> None:
        """Fetch due sources, and wait for them (and those under way) at most
        `wait_seconds`; then the digest is built from what is stored."""
        names = await self._due_sources(now)
        tasks = self.start(names)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.wait_seconds)
        if pending:
            log.info(
                "digest for %s: %d source(s) still fetching after %.0f s; built from the "
                "papers stored (the rest go in the next digest)",
                channel,
                len(pending),
                self.wait_seconds,
            )

    async def _due_sources(self, now: datetime) -> list[str]:
        """Which sources are due, asked once for all the digests firing together: a digest
        that asks while an ask is under way takes its answer (as the inbox ingest is
        shared) instead of reading the sources table again in a thread of its own (10,000
        channels due at one moment asked 10,000 times). The answer is for a moment at
        most one query older than the joiner's; the next ask, once it is done, reads anew."""
        if self._due_ask is None or self._due_ask.done():
            self._due_ask = asyncio.ensure_future(
                self.services.in_thread(self.fetcher.due, now, DUE_AFTER)
            )
        # Shielded: one waiter cancelled (a stop) must not cancel the others' answer.
        return list(await asyncio.shield(self._due_ask))

    def maintain(self) -> None:
        """Re-read the sources' schedules; retry failed sources whose backoff passed."""
        self.sync()
        self.start(self.fetcher.retries_due(self.services.clock()))

    def halt(self) -> None:
        """Stop fetching at once (synchronous): no new fetch starts, those under way are
        cancelled (what they stored stays; their cursors do not move)."""
        self.stopping = True
        self.fetcher.stopping = True
        for task in self._tasks.values():
            task.cancel()
