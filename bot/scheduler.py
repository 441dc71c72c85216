"""The digest schedule: one APScheduler CronTrigger per channel, plus the outbox loop.
APScheduler only decides *when*; what happens is plain coroutines that take `now`
(`run_digest`, `deliver_due`, `catch_up`), which tests call directly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.delivery import (
    ChannelResult,
    Poster,
    backoff,
    deliver_channel,
    posting_rate,
    queue_digest,
)
from bot.fetching.schedule import FetchJobs
from bot.inbox import SETTLE_SECONDS, ingest_inbox
from bot.send import platform_messages
from bot.services import Services
from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from db import sources as source_store
from db.errors import StorageError
from db.store import Store
from digests.channels import parse_channel
from digests.digest import Digest, build_digests, schedule_of
from digests.render.view import batch as render_batch
from digests.schedule import Schedule
from digests.timestamps import stamp

log = logging.getLogger(__name__)

JOB_PREFIX = "digest:"
MAINTENANCE_SECONDS = 30
# Digest builds at once (each in a thread of its own, with its own connection): a catch-up
# of many channels must not start a thread per channel, all contending for the write lock.
BUILD_THREADS = 4
# A batch of builds, once it may start, waits for more channels to join it until none has
# for GATHER_SECONDS (at most GATHER_MAX_SECONDS): the runs of channels firing together
# reach their build step close together, but not in one turn of the event loop (each
# asks, in a worker thread, which sources are due).
GATHER_SECONDS = 0.05
GATHER_MAX_SECONDS = 1.0
# Digests queued per transaction (a commit waits for the disk).
QUEUE_CHUNK = 200
STOP_GRACE_SECONDS = 5.0  # for sends under way at a stop; the whole stop stays within 10 s
# The outbox prune: once a day, the first one a while after start-up (not among the
# catch-up's builds and sends, and not skipped by a bot restarted more often than daily).
PRUNE_HOURS = 24
PRUNE_FIRST_MINUTES = 10


def scheduled_channels(services: Services) -> dict[str, Schedule]:
    """Channels with at least one subscription, and their schedules."""
    rows = channel_store.subscribed_channels(services.db())
    return {row["id"]: schedule_of(row) for row in rows}


def _fetches_under_way(db: Store, since: datetime) -> list[datetime]:
    """When the fetches claimed at or after `since`, and not finished, started."""
    started = source_store.fetches_started_since(db, stamp(since))
    return [datetime.fromisoformat(moment) for moment in started]


@dataclass
class _Build:
    """One channel's digest to build in a batch, and how it went: `outcome` is set by the
    worker thread (the messages queued, or the failure; None: not built, a stop came)."""

    channel: str
    built_at: datetime
    now: datetime
    on_time: bool
    done: asyncio.Future[bool] = field(repr=False)
    outcome: int | Exception | None = None


class DigestScheduler:
    """Each channel with subscriptions has a job `digest:CHANNEL` on its cadence, re-read
    every MAINTENANCE_SECONDS (and at once after a change in this process). A period gets
    one digest, whatever fires twice (a DST hour, a restart, a catch-up); a digest missed
    while down is posted on start-up if due within PAPERBOY_CATCHUP_HOURS. Before the
    digests due together, new inbox files are ingested once, then the digests are built
    as one batch (`build_digests`), queued and delivered; a failed build is recorded in
    `digest_failures` and retried with backoff until the channel's next digest is due.
    Once a day sent messages' payloads older than PAPERBOY_OUTBOX_KEEP_DAYS are emptied."""

    def __init__(
        self,
        services: Services,
        posters: Mapping[str, Poster],
        configured: Iterable[str] | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`posters` may be live (a platform appears once it has connected); `configured`
        names the platforms that will deliver, connected or not (default: `posters`'), so
        their digests are built and queued on time and sent once they connect."""
        self.services = services
        self.posters = posters
        self.sleep = sleep  # the inbox's wait for a file still being written
        self.configured = set(configured if configured is not None else posters)
        self.stopping = False
        self.scheduler = AsyncIOScheduler(timezone="UTC")
        self._signatures: dict[str, Schedule] = {}
        self._running: set[asyncio.Task[Any]] = set()
        # One run per channel at a time (a scheduled fire may meet a catch-up).
        self._channel_locks: dict[str, asyncio.Lock] = {}
        self._limit = asyncio.Semaphore(services.settings.delivery_concurrency)
        self._builders = asyncio.Semaphore(BUILD_THREADS)
        # Failed builds that could not be recorded in digest_failures (the database was
        # busy), by channel, in that table's shape: retried from here until recorded.
        self._unrecorded: dict[str, dict[str, Any]] = {}
        # The inbox ingest under way, shared by every digest that fires meanwhile.
        self._inbox: asyncio.Future[Any] | None = None
        # Builds waiting to go, together, and the task that will take them (`_run_batch`).
        self._waiting: list[_Build] = []
        self._batching: asyncio.Task[None] | None = None
        # Fetching the sources: its own jobs and tasks (bot/fetching/schedule.py).
        self.fetching = FetchJobs(services, self.scheduler, self._spawn)

    # --- what happens ---------------------------------------------------------------

    async def ingest_inbox(self, now: datetime) -> None:
        """Ingest new inbox files once for all the digests firing together: a digest that
        arrives while an ingest is under way waits for that one instead of starting its
        own (six channels re-reading one file in parallel held the write lock in turn)."""
        if self._inbox is None or self._inbox.done():
            self._inbox = asyncio.ensure_future(self._ingest_settled(now))
        # Shielded: one waiter cancelled (a stop) must not cancel the others' ingest.
        await asyncio.shield(self._inbox)

    async def _ingest_settled(self, now: datetime) -> None:
        """The inbox, and once more `SETTLE_SECONDS` later if a file was left because it
        was modified just now: it then goes in this digest, not the next one (a week on)."""
        waiting = await self.services.in_background_thread(self._ingest_sync, now)
        if waiting and not self.stopping:
            await self.sleep(SETTLE_SECONDS)
            if not self.stopping:
                later = self.services.clock()
                await self.services.in_background_thread(self._ingest_sync, later)

    def _ingest_sync(self, now: datetime) -> bool:
        """Ingest the inbox as of `now`; whether a file was left for being too new."""
        settings = self.services.settings
        result = ingest_inbox(
            self.services.db(), settings.inbox, now, max_record_kb=settings.max_record_kb
        )
        return bool(result.waiting)

    async def _build(self, channel: str, built_at: datetime, now: datetime, on_time: bool) -> bool:
        """Build and queue the channel's digest in the next batch (see `_run_batch`): False
        if a stop came first (nothing built); a failure of its own build is raised here."""
        build = _Build(channel, built_at, now, on_time, asyncio.get_running_loop().create_future())
        self._waiting.append(build)
        if self._batching is None:
            self._batching = self._spawn(self._run_batch(), "digest builds")
        return await build.done

    async def _run_batch(self) -> None:
        """Build the digests waiting, together, in one worker thread (at most BUILD_THREADS
        batches at once): once a thread is free, the channels firing together join (see
        GATHER_SECONDS), then every waiting channel goes in."""
        batch: list[_Build] = []
        failure: BaseException | None = None
        try:
            async with self._builders:
                loop, seen = asyncio.get_running_loop(), -1
                until = loop.time() + GATHER_MAX_SECONDS
                while len(self._waiting) != seen and loop.time() < until:
                    seen = len(self._waiting)
                    await asyncio.sleep(GATHER_SECONDS)
                batch, self._waiting, self._batching = self._waiting, [], None
                batch = [build for build in batch if not build.done.done()]  # not cut off
                if batch and not self.stopping:
                    await self.services.in_background_thread(self._build_and_queue, batch)
        except Exception as exc:  # not one channel's failure (say, no connection): all's
            failure = exc
        finally:
            if self._batching is asyncio.current_task():  # cut off before taking its batch
                batch, self._waiting, self._batching = self._waiting, [], None
            for build in batch:
                if build.done.done():
                    continue
                outcome = failure if build.outcome is None else build.outcome
                if isinstance(outcome, BaseException):
                    build.done.set_exception(outcome)
                else:  # built and queued; or not built, a stop came first (outcome None)
                    build.done.set_result(outcome is not None)

    def _build_and_queue(self, batch: list[_Build]) -> None:
        """In a worker thread (its own connection): the batch's digests, then each one's
        outbox messages; each build's `outcome` says how it went.

        An `on_time` digest (not a catch-up or retry, which keep the moment they were due
        for) is built as of the clock now, after the sources fetched for it and the inbox:
        they stamp their papers after `now`, and a digest built as of `now` left them all
        to the next one. Its period stays that of `now` (a 23:59 daily digest whose fetch
        ends past midnight keeps its date). Not past the start of a fetch still under way
        (one the digest stopped waiting for): its later pages carry that start as their
        `added_at`, and must fall in the next digest's window, not before it. The clock
        is read once for the batch, so the channels due together are built as of one
        moment, together."""
        db = self.services.db()
        later: dict[datetime, datetime] = {}
        groups: dict[datetime, list[_Build]] = {}
        for build in batch:
            moment = build.built_at
            try:
                if build.on_time:
                    if moment not in later:
                        later[moment] = min(
                            [self.services.clock(), *_fetches_under_way(db, moment)]
                        )
                    row = None  # read only when it matters (10,000 reads: about 1 s)
                    if later[moment] > moment:
                        row = channel_store.get_channel(db, build.channel)
                    if row is not None:
                        schedule = schedule_of(row)
                        if schedule.key(later[moment]) == schedule.key(moment):
                            moment = later[moment]
            except Exception as exc:
                build.outcome = exc
                continue
            groups.setdefault(moment, []).append(build)
        for moment, group in groups.items():
            self._build_group(db, group, moment)

    def _build_group(self, db: Store, group: list[_Build], moment: datetime) -> None:
        """Build the group's digests as of `moment`, together, and queue each.

        `build_digests` stops at its first failure without saying whose: the channels not
        built yet are then built one at a time up to the first that fails (the culprit:
        that failure is its own), and the rest together again; so one channel's failure
        fails no other. Unless that one fails on the database as the batch did ("database
        is locked"): that is no channel's doing, so every channel left fails with it, each
        retried with backoff (they are built together again then), as one build did."""
        # The group's digests share their paper rows: each paper's view and platform
        # pieces are made once for the whole group (`render_batch`).
        with render_batch():
            self._build_together(db, group, moment)

    def _build_together(self, db: Store, group: list[_Build], moment: datetime) -> None:
        settings, catalog = self.services.settings, self.services.catalog
        by_channel = {build.channel: build for build in group}
        todo = list(group)
        while todo and not self.stopping:
            built: list[tuple[_Build, Digest]] = []
            try:
                try:
                    for digest in build_digests(
                        db, [build.channel for build in todo], moment, catalog=catalog,
                        settings=settings,
                    ):  # fmt: skip
                        built.append((by_channel[digest.channel], digest))
                        if len(built) == QUEUE_CHUNK:
                            self._queue(db, built)
                            built = []
                        if self.stopping:  # the rest are not built: none starts after a stop
                            return
                    return
                finally:  # the digests built (recorded) so far, however the batch ends
                    self._queue(db, built)
            except Exception as exc:
                todo = [build for build in todo if build.outcome is None]
                if len(todo) == 1:  # its own failure
                    todo[0].outcome = exc
                    return
                log.warning(
                    "%d digests built together failed (%s: %s); building them one at a time "
                    "until one fails",
                    len(todo),
                    type(exc).__name__,
                    exc,
                )
                batch_failure = exc
            while todo and not self.stopping:
                build = todo.pop(0)
                try:
                    digest = next(
                        build_digests(
                            db, [build.channel], moment, catalog=catalog, settings=settings
                        )
                    )
                except Exception as exc:
                    build.outcome = exc
                    if isinstance(exc, StorageError) and isinstance(batch_failure, StorageError):
                        for other in todo:
                            other.outcome = exc
                        return
                    break
                self._queue(db, [(build, digest)])

    def _queue(self, db: Store, built: list[tuple[_Build, Digest]]) -> None:
        """Queue built digests' messages, in one transaction (a commit waits for the disk);
        each build's `outcome` says how it went: a failure (rendering, its insert: rolled
        back to its own savepoint) is its own."""
        rendered = []
        for build, digest in built:  # rendered before the write lock is taken
            try:
                platform = parse_channel(digest.channel).platform
                parts = platform_messages(digest, platform, self.services.settings.empty_digest)
                rendered.append((build, digest, parts))
            except Exception as exc:
                build.outcome = exc
        if not rendered:
            return
        try:
            with db.write():
                for build, digest, parts in rendered:
                    try:
                        with db.write():  # nested: a savepoint of its own
                            build.outcome = queue_digest(db, digest, parts, build.now)
                    except Exception as exc:
                        build.outcome = exc
        except Exception as exc:  # the commit failed: none of them is queued
            for build, _, _ in rendered:
                build.outcome = exc

    async def run_digest(
        self,
        channel: str,
        now: datetime | None = None,
        built_at: datetime | None = None,
        retry: bool = False,
    ) -> ChannelResult | None:
        """Build (once per week), queue and deliver one channel's digest. A `retry` of a
        failed build (for `built_at`) goes ahead only if that failure is still recorded
        when its turn comes: a later digest built meanwhile (the weekly fire, a catch-up)
        clears it, and took its papers."""
        now = now or self.services.clock()
        if self.stopping:
            return None
        row = channel_store.get_channel(self.services.db(), channel)
        if row is None:
            return None
        if row["paused"]:
            log.info(
                "digest for %s not built: the channel is paused (%s)", channel, row["paused_reason"]
            )
            return None
        if row["platform"] not in self.configured:
            log.warning(
                "digest for %s not built: %s is not configured here", channel, row["platform"]
            )
            return None
        on_time = built_at is None
        built_at = built_at or now
        async with self._channel_locks.setdefault(channel, asyncio.Lock()):
            if self.stopping:  # stopped while waiting for the channel
                return None
            if retry and not self._failure_pending(channel, stamp(built_at)):
                log.info(
                    "digest for %s due %s: no longer needed (a later digest took its papers)",
                    channel,
                    stamp(built_at),
                )
                return None
            try:  # due sources first, waited for a bounded time (FETCH_WAIT_SECONDS)
                await self.fetching.before_digest(now, channel)
            except Exception as exc:  # never a reason not to build from what is stored
                log.warning("sources not fetched before the digest for %s (%s)", channel, exc)
            if self.stopping:
                return None
            try:
                await self.ingest_inbox(now)
            except Exception as exc:
                # The inbox is best effort: a broken one (an unreadable folder) must not
                # fail every digest, week after week. Its files wait for the next run.
                log.warning(
                    "inbox not ingested before the digest for %s (%s: %s); building it "
                    "from the papers stored",
                    channel,
                    type(exc).__name__,
                    exc,
                )
            if self.stopping:  # stopped while waiting for the inbox
                return None
            try:
                if not await self._build(channel, built_at, now, on_time):
                    return None  # a stop came first
            except Exception as exc:
                return self._build_failed(channel, built_at, exc)
            self._clear_failure(channel, stamp(built_at))
        return await self._deliver_channel(channel, now)

    def _build_failed(self, channel: str, built_at: datetime, exc: Exception) -> ChannelResult:
        """Record a failed build so that it is retried with backoff (also after a restart)."""
        reason = f"{type(exc).__name__}: {exc}"
        failed_at = self.services.clock()
        db = self.services.db()
        held = self._unrecorded.get(channel)
        try:
            previous = digest_store.failures(db, channel)
            attempts = int(previous[0]["attempts"]) if previous else 0
            if held is not None and held["due_at"] == stamp(built_at):
                attempts = max(attempts, int(held["attempts"]))
            retry_at = failed_at + timedelta(seconds=backoff(attempts))
            attempts = digest_store.record_failure(
                db, channel, stamp(built_at), reason, stamp(retry_at), stamp(failed_at)
            )
            self._unrecorded.pop(channel, None)
        except StorageError as db_error:
            # The database that failed the build can fail this write too ("database is
            # locked" again): keep the failure in memory, so it is retried all the same,
            # and recorded when the database lets us.
            attempts = (
                int(held["attempts"]) if held and held["due_at"] == stamp(built_at) else 0
            ) + 1
            retry_at = failed_at + timedelta(seconds=backoff(attempts - 1))
            self._unrecorded[channel] = {
                "channel": channel,
                "due_at": stamp(built_at),
                "attempts": attempts,
                "last_error": reason,
                "first_failed_at": stamp(failed_at),
                "next_attempt_at": stamp(retry_at),
            }
            log.warning(
                "digest for %s: its failure could not be recorded (%s); retried from memory",
                channel,
                db_error,
            )
        log.warning(
            "digest for %s failed to build (attempt %d: %s); retrying after %s",
            channel,
            attempts,
            reason,
            stamp(retry_at),
            # A busy database passes; anything else may be a bug that fails every retry
            # and every week: its traceback, once, so that someone can fix it.
            exc_info=exc if attempts == 1 and not isinstance(exc, StorageError) else None,
        )
        return ChannelResult(channel, state="retrying", reason=reason)

    @staticmethod
    def _overtaken(schedule: Schedule, due_at: datetime, now: datetime) -> bool:
        """Whether a later period's digest has fallen due since `due_at`."""
        latest = schedule.last_at_or_before(now)
        return latest > due_at and schedule.key(latest) != schedule.key(due_at)

    @staticmethod
    def _covers(digest: Mapping[str, Any], schedule: Schedule, due_at: datetime) -> bool:
        """Whether `digest` (of another key: the cadence changed) covers the moment `due_at`:
        it was built at or after it, or within its period."""
        built_at = datetime.fromisoformat(str(digest["built_at"]))
        return built_at >= due_at or schedule.key(built_at) == schedule.key(due_at)

    def _record_held_failures(self, db: Store) -> None:
        """Write to the database the failures kept in memory (see `_build_failed`)."""
        for channel, row in list(self._unrecorded.items()):
            try:
                with db.write():
                    recorded = digest_store.failures(db, channel)
                    if not recorded or recorded[0]["due_at"] <= row["due_at"]:
                        digest_store.put_failure(db, row)
            except StorageError:
                return  # still busy: they stay in memory, and are retried from there
            self._unrecorded.pop(channel, None)

    def _failure_pending(self, channel: str, due_at: str) -> bool:
        held = self._unrecorded.get(channel)
        return (held is not None and held["due_at"] == due_at) or any(
            row["due_at"] == due_at for row in digest_store.failures(self.services.db(), channel)
        )

    def _clear_failure(self, channel: str, up_to: str) -> None:
        held = self._unrecorded.get(channel)
        if held is not None and held["due_at"] <= up_to:
            del self._unrecorded[channel]
        digest_store.clear_failure(self.services.db(), channel, up_to)

    def retry_failed_builds(self, now: datetime | None = None) -> list[str]:
        """Start again, without waiting, the failed builds whose backoff has passed. A
        failure that the channel's next digest has overtaken is dropped: nothing of it is
        lost, since a failed build used up no papers."""
        now = now or self.services.clock()
        db = self.services.db()
        self._record_held_failures(db)
        schedules = scheduled_channels(self.services)
        started = []
        busy = {task.get_name() for task in self._running}
        due = {str(row["channel"]): row for row in digest_store.due_failures(db, stamp(now))}
        for channel, row in self._unrecorded.items():  # newer than any recorded one
            if row["next_attempt_at"] <= stamp(now):
                due[channel] = row
        for row in due.values():
            channel = str(row["channel"])
            due_at = datetime.fromisoformat(row["due_at"])
            schedule = schedules.get(channel)
            if schedule is None or self._overtaken(schedule, due_at, now):
                log.warning(
                    "digest for %s due %s was never built (%s); dropped: its papers go in "
                    "the next digest",
                    channel,
                    row["due_at"],
                    row["last_error"],
                )
                self._clear_failure(channel, row["due_at"])
                continue
            name = f"digest:{channel}"
            if name in busy or self.stopping:
                continue
            log.info("retrying the digest for %s due %s", channel, row["due_at"])
            self._spawn(self.run_digest(channel, now=now, built_at=due_at, retry=True), name)
            started.append(channel)
        return started

    async def _deliver_channel(self, channel: str, now: datetime | None = None) -> ChannelResult:
        """Deliver one channel's due messages: one delivery per channel at a time (two must
        never send the same pending message), at most `delivery_concurrency` channels at once."""
        poster = self.posters.get(parse_channel(channel).platform)
        if poster is None:
            return ChannelResult(channel, state="nothing", reason="platform not connected")
        asked = self.services.clock()  # `now` is as of this moment
        async with self._limit, self._channel_locks.setdefault(channel, asyncio.Lock()):
            # As of when its slot came, not `now`: the deliveries before it (their waits for
            # rate limits) may have taken long, and its due messages and stamps are from then.
            return await deliver_channel(
                self.services.db(),
                poster,
                channel,
                (now or asked) + (self.services.clock() - asked),
                self.services.settings.max_attempts,
                self.services.clock,
                stopping=lambda: self.stopping,
                rate=posting_rate(self.services.settings, poster.platform),
                gone_after=timedelta(seconds=self.services.settings.clock_ttl_seconds),
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
            if self.stopping:
                break
            if name in busy or parse_channel(channel).platform not in self.posters:
                continue
            self._spawn(self._deliver_channel(channel), name)
            started += 1
        return started

    def _spawn(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[None]:
        """Run `work` as a guarded background task that stop() waits for (or cuts off)."""
        task = asyncio.create_task(self._guarded(work, name), name=name)
        self._running.add(task)  # a reference until done, and something stop() can await
        task.add_done_callback(self._running.discard)
        return task

    async def catch_up(self, now: datetime | None = None) -> list[str]:
        """Post, once, the digests that fell due while the process was down. Channels are
        independent: they catch up in parallel (deliveries bounded by
        `delivery_concurrency`), so a rate-limited or hanging channel delays no other, and
        one channel's failure stops no other's catch-up."""
        now = now or self.services.clock()
        channels = list(scheduled_channels(self.services).items())
        results = await asyncio.gather(
            *(self._catch_up_one(channel, schedule, now) for channel, schedule in channels),
            return_exceptions=True,
        )
        caught = []
        for (channel, _), result in zip(channels, results, strict=True):
            if isinstance(result, BaseException):
                log.error("catch-up of %s failed: %s: %s", channel, type(result).__name__, result)
            elif result:
                caught.append(channel)
        return caught

    async def _catch_up_one(self, channel: str, schedule: Schedule, now: datetime) -> bool:
        if self.stopping:
            return False
        grace = timedelta(hours=self.services.settings.catchup_hours)
        due_at = schedule.last_at_or_before(now)
        db = self.services.db()
        built = digest_store.get_digest(db, channel, schedule.key(due_at))
        if built and outbox.messages_for_digest(db, built["id"]):
            return False  # built and queued already; unsent parts go out with the outbox loop
        latest = digest_store.last_digest(db, channel)
        if built is None and latest is not None and self._covers(latest, schedule, due_at):
            return False  # a digest built under another cadence covers it already
        first = next(iter(channel_store.active_subscriptions(db, channel)), None)
        if first is None or first["created_at"] > stamp(due_at):
            return False  # nothing was due yet then
        late = now - due_at
        if late > grace:
            log.warning(
                "missed the digest for %s due %s (%.0f h ago, beyond the %d h grace): skipped",
                channel,
                due_at.isoformat(timespec="minutes"),
                late.total_seconds() / 3600,
                self.services.settings.catchup_hours,
            )
            return False
        log.info(
            "catching up the digest for %s due %s", channel, due_at.isoformat(timespec="minutes")
        )
        await self.run_digest(channel, now=now, built_at=due_at)
        return True

    async def prune_outbox(self, now: datetime | None = None) -> int:
        """Empty the payloads of the messages sent more than `outbox_keep_days` before
        `now` (0: keep them forever), in a thread of its own, a batch per transaction (see
        `outbox.prune_sent`; a stop ends it between batches). Returns how many."""
        days = self.services.settings.outbox_keep_days
        if not days or self.stopping:
            return 0
        before = stamp((now or self.services.clock()) - timedelta(days=days))
        pruned = await self.services.in_background_thread(self._prune_sync, before)
        if pruned:
            log.info(
                "outbox: emptied the payloads of %d messages sent before %s "
                "(PAPERBOY_OUTBOX_KEEP_DAYS=%d)",
                pruned,
                before,
                days,
            )
        return pruned

    def _prune_sync(self, before: str) -> int:
        try:
            return outbox.prune_sent(self.services.db(), before, stop=lambda: self.stopping)
        except StorageError as exc:  # busy: the batches done stay done
            log.warning("outbox prune: stopped this time (%s); the next one goes on", exc)
            return 0

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

    async def _prune(self) -> None:
        await self._guarded(self.prune_outbox(), "outbox prune")

    async def _maintenance(self) -> None:
        """Each step on its own: a busy database skips that step until the next run (30 s
        later) with one warning line, and never the steps after it."""
        steps = (self.sync_jobs, self.retry_failed_builds, self.start_due_deliveries)
        for step in (*steps, self.fetching.maintain):
            try:
                step()
            except StorageError as exc:
                log.warning("maintenance: %s skipped this time (%s)", step.__name__, exc)
            except Exception:
                log.exception("maintenance: %s failed", step.__name__)

    async def _guarded(self, work: Any, what: str) -> None:
        """Run scheduled work so that nothing escapes to crash the scheduler, and so that
        a stop can wait for it."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            await work
        except asyncio.CancelledError:
            # A stop cut it off (what was cut off stays pending). Not an error, and not
            # re-raised: this is the top of its task, and APScheduler would log a
            # cancelled job as a failure with a traceback.
            log.info("%s: cut off by the stop", what)
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
        """Start firing, and start the catch-up in the background: start() returns at once,
        so a stop is seen even while the catch-up is under way."""
        self.sync_jobs()
        self.scheduler.add_job(
            self._maintenance, "interval", seconds=MAINTENANCE_SECONDS, id="maintenance",
            coalesce=True, max_instances=1,
        )  # fmt: skip
        # A day's prune may start late: APScheduler skips a run more than 1 s late by default,
        # and a digest batch may hold the interpreter at that moment.
        self.scheduler.add_job(
            self._prune, "interval", hours=PRUNE_HOURS, id="outbox-prune", coalesce=True,
            max_instances=1, misfire_grace_time=PRUNE_HOURS * 3600 // 2,
            next_run_time=datetime.now(UTC) + timedelta(minutes=PRUNE_FIRST_MINUTES),
        )  # fmt: skip
        self.scheduler.start()
        self.services.listeners.append(lambda channel: self.sync_jobs())
        try:
            self.fetching.sync()
            self.fetching.start_due()  # sources not fetched for 12 h (or never)
        except StorageError as exc:
            log.warning("sources not scheduled yet (%s); retried in %d s", exc, MAINTENANCE_SECONDS)
        self._spawn(self._start_up(), "catch-up")
        platforms = ", ".join(sorted(self.configured))
        count = len(self._signatures)
        channels = "1 channel" if count == 1 else f"{count} channels"
        return f"scheduler: {channels} scheduled; delivering to {platforms}"

    async def _start_up(self) -> None:
        await self.catch_up()
        self.retry_failed_builds()
        self.start_due_deliveries()

    def halt(self) -> None:
        """From now on, no new digest, catch-up, retry or send starts (synchronous: it
        takes effect before the caller next yields to the event loop)."""
        self.stopping = True
        self.fetching.halt()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    async def stop(self, timeout: float = STOP_GRACE_SECONDS) -> None:
        """Stop at once: no new digest, catch-up or send starts from now on. Sends under way
        get `timeout` seconds to finish; then they are cut off (their messages stay
        pending, for the next start)."""
        self.halt()
        running = [task for task in self._running if task is not asyncio.current_task()]
        if not running:
            return
        _, pending = await asyncio.wait(running, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            log.info("stop: cut off %d unfinished task(s)", len(pending))
            await asyncio.wait(pending, timeout=timeout)
