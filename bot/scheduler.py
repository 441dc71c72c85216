"""The weekly schedule: one APScheduler CronTrigger per channel, plus the outbox loop.

APScheduler only decides *when*; what happens is plain coroutines that take `now`
(`run_digest`, `deliver_due`, `catch_up`), which tests call directly.

- Every channel with subscriptions has a job `digest:CHANNEL` on its own weekday, time
  and timezone. `sync_jobs` re-reads the schedules (every 30 s, and at once after a
  change made in this process), so changes from Slack, Discord or the CLI apply
  without a restart.
- A digest is built once per channel and ISO week, so a DST fall-back hour that fires
  twice, a restart, or a catch-up never posts a second one.
- On start-up, a digest missed while down is posted once if it was due within
  `PAPERBOY_CATCHUP_HOURS`; older misses are skipped with a log line.
- Before each digest run, new files in `PAPERBOY_INBOX` are ingested.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.delivery import ChannelResult, Poster, deliver_channel, queue_digest
from bot.inbox import ingest_inbox
from bot.send import platform_messages
from bot.services import Services
from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from digests.channels import parse_channel
from digests.digest import build_digest
from digests.schedule import Schedule, week_key
from digests.timestamps import stamp

log = logging.getLogger(__name__)

JOB_PREFIX = "digest:"
MAINTENANCE_SECONDS = 30


def scheduled_channels(services: Services) -> dict[str, Schedule]:
    """Channels with at least one subscription, and their schedules."""
    rows = services.db().query(
        "select * from channels where id in "
        "(select channel from subscriptions where removed_at is null) order by id"
    )
    return {row["id"]: Schedule(row["weekday"], row["time"], row["timezone"]) for row in rows}


class DigestScheduler:
    def __init__(self, services: Services, posters: Mapping[str, Poster]) -> None:
        self.services = services
        self.posters = dict(posters)
        self.scheduler = AsyncIOScheduler(timezone="UTC")
        self._signatures: dict[str, Schedule] = {}
        self._running: set[asyncio.Task[Any]] = set()
        # One run per channel at a time (a scheduled fire may meet a catch-up).
        self._channel_locks: dict[str, asyncio.Lock] = {}
        self._limit = asyncio.Semaphore(services.settings.delivery_concurrency)

    # --- what happens ---------------------------------------------------------------

    def _build_and_queue(self, channel: str, built_at: datetime, now: datetime) -> int:
        """In a worker thread (its own connection): inbox, digest, outbox."""
        db = self.services.db()
        settings = self.services.settings
        ingest_inbox(db, settings.inbox, now)
        digest = build_digest(
            db, channel, built_at, catalog=self.services.catalog, settings=settings
        )
        platform = parse_channel(channel).platform
        return queue_digest(
            db, digest, platform_messages(digest, platform, settings.empty_digest), now
        )

    async def run_digest(
        self, channel: str, now: datetime | None = None, built_at: datetime | None = None
    ) -> ChannelResult | None:
        """Build (once per week), queue and deliver one channel's digest."""
        now = now or self.services.clock()
        row = channel_store.get_channel(self.services.db(), channel)
        if row is None:
            return None
        if row["paused"]:
            log.info(
                "digest for %s not built: the channel is paused (%s)", channel, row["paused_reason"]
            )
            return None
        if row["platform"] not in self.posters:
            log.warning(
                "digest for %s not built: %s is not configured here", channel, row["platform"]
            )
            return None
        async with self._channel_locks.setdefault(channel, asyncio.Lock()):
            await self.services.in_thread(self._build_and_queue, channel, built_at or now, now)
        return await self._deliver_channel(channel, now)

    async def _deliver_channel(self, channel: str, now: datetime | None = None) -> ChannelResult:
        """Deliver one channel's due messages: one delivery per channel at a time (two must
        never send the same pending message), at most `delivery_concurrency` channels at once."""
        poster = self.posters.get(parse_channel(channel).platform)
        if poster is None:
            return ChannelResult(channel, state="nothing", reason="platform not configured")
        async with self._limit, self._channel_locks.setdefault(channel, asyncio.Lock()):
            return await deliver_channel(
                self.services.db(),
                poster,
                channel,
                now or self.services.clock(),
                self.services.settings.max_attempts,
                self.services.clock,
            )

    async def deliver_due(self, now: datetime | None = None) -> list[ChannelResult]:
        """Send every channel's due outbox messages, channels in parallel (bounded), so a
        slow or failing channel never delays the others."""
        now = now or self.services.clock()
        channels = outbox.channels_with_due(self.services.db(), stamp(now))
        results = await asyncio.gather(
            *(self._deliver_channel(channel, now) for channel in channels), return_exceptions=True
        )
        found = []
        for channel, result in zip(channels, results, strict=True):
            if isinstance(result, BaseException):
                log.error("delivery to %s failed: %s: %s", channel, type(result).__name__, result)
                found.append(ChannelResult(channel, state="retrying", reason=type(result).__name__))
            else:
                found.append(result)
        return found

    def start_due_deliveries(self) -> int:
        """Start delivering each channel with due messages that is not delivering already,
        without waiting: a channel stuck in a rate-limit storm holds up no one else."""
        busy = {task.get_name() for task in self._running}
        started = 0
        for channel in outbox.channels_with_due(self.services.db(), stamp(self.services.clock())):
            name = f"deliver:{channel}"
            if name in busy or parse_channel(channel).platform not in self.posters:
                continue
            work = self._deliver_channel(channel)
            task = asyncio.create_task(self._guarded(work, f"delivery to {channel}"), name=name)
            self._running.add(task)  # a reference until done, and something stop() can await
            task.add_done_callback(self._running.discard)
            started += 1
        return started

    async def catch_up(self, now: datetime | None = None) -> list[str]:
        """Post, once, the digests that fell due while the process was down."""
        now = now or self.services.clock()
        grace = timedelta(hours=self.services.settings.catchup_hours)
        caught = []
        for channel, schedule in scheduled_channels(self.services).items():
            due_at = schedule.last_at_or_before(now)
            db = self.services.db()
            built = digest_store.get_digest(db, channel, week_key(due_at, schedule.timezone))
            if built and outbox.messages_for_digest(db, built["id"]):
                continue  # built and queued already; unsent parts go out with the outbox loop
            first = next(iter(channel_store.active_subscriptions(db, channel)), None)
            if first is None or first["created_at"] > stamp(due_at):
                continue  # nothing was due yet then
            late = now - due_at
            if late > grace:
                log.warning(
                    "missed the digest for %s due %s (%.0f h ago, beyond the %d h grace): skipped",
                    channel,
                    due_at.isoformat(timespec="minutes"),
                    late.total_seconds() / 3600,
                    self.services.settings.catchup_hours,
                )
                continue
            log.info(
                "catching up the digest for %s due %s",
                channel,
                due_at.isoformat(timespec="minutes"),
            )
            await self.run_digest(channel, now=now, built_at=due_at)
            caught.append(channel)
        return caught

    # --- when it happens --------------------------------------------------------------

    def sync_jobs(self) -> None:
        """Make the jobs match the channels' schedules in the database."""
        try:
            wanted = scheduled_channels(self.services)
        except Exception:
            log.exception("could not read the schedules")
            return
        for channel in list(self._signatures):
            if channel not in wanted:
                self.scheduler.remove_job(JOB_PREFIX + channel)
                del self._signatures[channel]
        for channel, schedule in wanted.items():
            if self._signatures.get(channel) == schedule:
                continue
            try:
                self.scheduler.add_job(
                    self._fire,
                    schedule.trigger(),
                    args=[channel],
                    id=JOB_PREFIX + channel,
                    replace_existing=True,
                    coalesce=True,
                    max_instances=1,
                    misfire_grace_time=3600,
                )
            except Exception:  # one bad row (say, an unknown timezone) must not stop the rest
                log.exception("could not schedule %s (%s)", channel, schedule.describe())
                continue
            if channel in self._signatures:
                log.info("schedule of %s is now %s", channel, schedule.describe())
            self._signatures[channel] = schedule

    async def _fire(self, channel: str) -> None:
        await self._guarded(self.run_digest(channel), f"digest for {channel}")

    async def _maintenance(self) -> None:
        self.sync_jobs()
        self.start_due_deliveries()

    async def _guarded(self, work: Any, what: str) -> None:
        """Run scheduled work so that nothing escapes to crash the scheduler, and so that
        a stop can wait for it."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            await work
        except Exception:
            log.exception("%s failed", what)
        finally:
            if task is not None:
                self._running.discard(task)

    def next_runs(self) -> dict[str, datetime]:
        return {
            job.id.removeprefix(JOB_PREFIX): job.next_run_time
            for job in self.scheduler.get_jobs()
            if job.id.startswith(JOB_PREFIX) and job.next_run_time
        }

    async def start(self) -> str:
        self.sync_jobs()
        self.scheduler.add_job(
            self._maintenance, "interval", seconds=MAINTENANCE_SECONDS, id="maintenance",
            coalesce=True, max_instances=1,
        )  # fmt: skip
        self.scheduler.start()
        self.services.listeners.append(lambda channel: self.sync_jobs())
        await self._guarded(self.catch_up(), "catch-up")
        self.start_due_deliveries()
        platforms = ", ".join(sorted(self.posters))
        return f"scheduler: {len(self._signatures)} channel(s) scheduled; delivering to {platforms}"

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop firing; let in-flight sends finish (a message cut off stays pending)."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        running = [task for task in self._running if task is not asyncio.current_task()]
        if running:
            _, pending = await asyncio.wait(running, timeout=timeout)
            for task in pending:
                task.cancel()
