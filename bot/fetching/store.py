"""Fetch the configured sources and store their papers: what `paperboy fetch` and the
scheduler in `paperboy run` call (docs/explanation/guarantees.md, "Fetching writes little")."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from bot.delivery import SENDER, sender_alive
from bot.fetching import (
    FetchConfig,
    FetchError,
    FetchResult,
    next_arxiv_since,
    open_fetch,
    open_session,
    shown_source,
)
from bot.fetching.client import Clock, Pacer, Sleep
from db import sources as source_store
from db import text_index
from db.errors import StorageError
from db.store import Store
from digests.ingest.decode import Limits
from digests.ingest.fetched import PreparedPaper, known_unchanged, prepare_page, store_page
from digests.ingest.pipeline import IngestSummary, counts_text, other_abstracts_text
from digests.ingest.progress import plural
from digests.sources.errors import SourceError
from digests.sources.records import FetchedPaper
from digests.sources.spec import SourceSpec, parse_source
from digests.timestamps import stamp

log = logging.getLogger(__name__)

T = TypeVar("T")
InThread = Callable[..., Awaitable[Any]]

BACKOFF_BASE = timedelta(minutes=15)  # after the first failure; doubles after each
BACKOFF_MAX = timedelta(hours=6)
CLAIM_STALE = timedelta(hours=1)  # a claim this old is taken over even if its holder lives
DUE_AFTER = timedelta(hours=12)  # before a digest, sources last fetched longer ago


def fetch_config(settings: Any) -> FetchConfig:
    """The fetchers' configuration from Paperboy's settings."""
    return FetchConfig(
        arxiv_url=settings.arxiv_url,
        openreview_url=settings.openreview_url,
        contact_email=settings.contact_email,
        allow_private_redirects=settings.fetch_allow_private_redirects,
    )


def source_backoff(failures: int) -> timedelta:
    """How long a source that failed `failures` times in a row waits before the next try."""
    factor: int = 2 ** min(max(failures - 1, 0), 16)
    return min(BACKOFF_BASE * factor, BACKOFF_MAX)


@dataclass
class SourceOutcome:
    """What one source's fetch did. `error` is one line; `busy`: another process holds
    the source's claim, so it was left alone (not a failure)."""

    name: str
    read: int = 0
    added: int = 0
    merged: int = 0
    skipped: int = 0  # already stored, nothing new (`IngestSummary.skipped`)
    ignored: int = 0  # nothing to store, too long or holding a secret
    restamped: int = 0  # of `skipped`: only bookkeeping written (`IngestSummary.restamped`)
    other_abstracts: int = 0  # of merged and skipped: a different abstract not stored
    complete: bool = False
    error: str | None = None
    busy: bool = False
    interrupted: bool = False  # by a stop: recorded as neither success nor failure
    notes: list[str] = field(default_factory=list)
    result: FetchResult | None = field(default=None, repr=False)

    @property
    def failed(self) -> bool:
        return self.error is not None

    def describe(self) -> str:
        """One line whose counts add up to the papers read, e.g. "arxiv:cs.LG: 120 papers
        read: 40 added, 3 merged, 77 skipped (already stored); 0 errors". A paper already
        stored that brings nothing a reader sees (it came from another source first) is
        skipped, not merged; "N not stored (...)" follows for papers refused, and "; N with
        a different abstract (the stored one kept)" for papers whose abstract was not
        stored (`IngestSummary.other_abstracts`)."""
        shown = shown_source(self.name)
        if self.busy:
            return f"{shown}: skipped, another Paperboy process is fetching it now"
        line = f"{shown}: {plural(self.read, 'paper')} read"
        if self.read:
            line += ": " + counts_text(self.added, self.merged, self.skipped)
        if self.ignored:
            line += f", {self.ignored} not stored (empty, too long or holding a secret)"
        line += other_abstracts_text(self.other_abstracts)
        line += f"; {plural(1 if self.error else 0, 'error')}"
        if self.error:
            line += f" ({self.error})"
        elif self.notes:
            line += f" (incomplete: {'; '.join(self.notes)})"
        return line

    def as_json(self) -> dict[str, Any]:
        return {
            "source": shown_source(self.name),
            "read": self.read,
            "added": self.added,
            "merged": self.merged,
            "skipped": self.skipped,
            "ignored": self.ignored,
            "other_abstracts": self.other_abstracts,
            "complete": self.complete,
            "busy": self.busy,
            "error": self.error,
            "notes": self.notes,
        }


async def check_source(spec: SourceSpec, config: FetchConfig, now: datetime) -> int:
    """Read a feed's or an OpenReview venue's first page, as `paperboy sources add` does
    before adding it: the papers on it (0: none yet). Raises FetchError (one line naming
    the source) for an unreachable URL, a page that is no feed, an HTTP error."""
    quick = replace(config, attempts=2, backoff=1.0, openreview_page_size=25)
    async with open_session(quick) as session:
        fetch = open_fetch(spec, session, quick, now=now)
        async for page in fetch:
            return len(page.papers)
    return 0


async def _despite_cancel(work: Awaitable[T]) -> T:
    """Await `work` to its end even if the caller is cancelled (again) meanwhile, then
    let the cancel through. A stop cancels a fetch twice (the runner's halt, then the
    scheduler's): a second cancel must not drop the recording of the first (a job not
    yet started in a worker thread), or the claim would stay held after the stop."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    if cancelled:
        task.result()  # its own error first, if it failed
        raise asyncio.CancelledError
    return task.result()


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


class SourceFetcher:
    """Fetches sources into the database. `db` gives the calling thread's connection
    (`Services.db`); every database call runs through `in_thread`, so the event loop
    never waits on SQLite."""

    def __init__(
        self,
        db: Callable[[], Store],
        config: FetchConfig,
        *,
        clock: Callable[[], datetime],
        limits: Limits | None = None,
        sleep: Sleep = asyncio.sleep,
        monotonic: Clock = time.monotonic,
        in_thread: InThread = asyncio.to_thread,
        holder: str = SENDER,
        failure_level: int = logging.WARNING,
    ) -> None:
        """`failure_level`: how a failed source is logged; `paperboy fetch` prints its
        own line for it, so it logs it at info (no second copy on the terminal)."""
        self.db = db
        self.config = config
        self.clock = clock
        self.limits = limits or Limits()
        self.sleep = sleep
        self.monotonic = monotonic
        self.in_thread = in_thread
        self.holder = holder
        self.failure_level = failure_level
        self.stopping = False
        # One spacing per host for every fetch this fetcher makes: two arXiv sources read
        # one after the other keep arXiv's 3 s between them too.
        self.pacer = Pacer()

    async def fetch(
        self, names: Sequence[str] | None = None, since: datetime | None = None
    ) -> list[SourceOutcome]:
        """Fetch `names` (all sources when None), in the order given; one outcome each.

        Each source is claimed first (two processes never fetch one source at once),
        fetched page by page, each page enriched and stored in a write transaction of its
        own; its cursor and validators move only when the fetch was complete, so a killed
        fetch reads its window again at the next run (re-stored pages merge). A failing
        source logs one warning line, records its error and a backoff (`next_try_at`),
        and stops no other. Sources of one kind are fetched one after another (arXiv's
        one request every 3 seconds), the kinds in parallel."""
        rows = await self.in_thread(self._rows, names)
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_kind.setdefault(row["kind"], []).append(row)
        outcomes: dict[str, SourceOutcome] = {}
        async with open_session(self.config) as session:

            async def one_kind(kind_rows: list[dict[str, Any]]) -> None:
                for row in kind_rows:
                    if self.stopping:
                        return
                    outcomes[row["name"]] = await self._fetch_one(session, row, since)

            await asyncio.gather(*(one_kind(kind_rows) for kind_rows in by_kind.values()))
        if any(o.added or o.merged or o.restamped for o in outcomes.values()):
            # The next lookup then does not pay for indexing what was fetched.
            await self.in_thread(lambda: text_index.catch_up(self.db()))
        return [outcomes[row["name"]] for row in rows if row["name"] in outcomes]

    def _rows(self, names: Sequence[str] | None) -> list[dict[str, Any]]:
        db = self.db()
        if names is None:
            return source_store.list_sources(db)
        found = [source_store.get_source(db, name) for name in names]
        return [row for row in found if row is not None]

    def due(self, now: datetime, older_than: timedelta = DUE_AFTER) -> list[str]:
        """Sources whose last success is older than `older_than` (or that never
        succeeded), and not waiting out a backoff."""
        limit = stamp(now - older_than)
        return [
            row["name"]
            for row in source_store.list_sources(self.db())
            if (row["last_success_at"] or "") < limit and (row["next_try_at"] or "") <= stamp(now)
        ]

    def retries_due(self, now: datetime) -> list[str]:
        """Failed sources whose backoff has passed."""
        return [
            row["name"]
            for row in source_store.list_sources(self.db())
            if row["next_try_at"] and row["next_try_at"] <= stamp(now)
        ]

    def _claim(self, row: dict[str, Any], now: datetime) -> bool:
        holder = row["fetching_by"]
        if holder is not None and holder != self.holder:
            started = row["fetch_started_at"] or ""
            if sender_alive(holder) and started >= stamp(now - CLAIM_STALE):
                return False
        return source_store.claim(self.db(), row["name"], self.holder, stamp(now), holder)

    def _prepare(
        self, papers: list[FetchedPaper], now: datetime
    ) -> tuple[list[PreparedPaper], int, int]:
        """Rows for the papers not stored already as they are, enriched outside any
        transaction (in a worker thread); how many were stored already so (skipped), and
        how many `prepare_page` refused (ignored)."""
        db = self.db()
        fresh = [paper for paper in papers if not known_unchanged(db, paper)]
        prepared, ignored = prepare_page(fresh, now, self.limits)
        return prepared, len(papers) - len(fresh), ignored

    def _store(self, prepared: list[PreparedPaper], now: datetime) -> IngestSummary:
        return store_page(self.db(), prepared, now)

    async def _fetch_one(
        self, session: Any, row: dict[str, Any], since: datetime | None
    ) -> SourceOutcome:
        name = row["name"]
        outcome = SourceOutcome(name)
        now = self.clock()
        if not await self.in_thread(self._claim, row, now):
            outcome.busy = True
            log.info(
                "fetch of %s skipped: %s is fetching it", shown_source(name), row["fetching_by"]
            )
            return outcome
        try:
            await self._read(session, row, since, now, outcome)
        except asyncio.CancelledError:
            # A stop: the pages stored stay, nothing else is recorded (the source is
            # not marked fetched, its cursor does not move). Only the claim is released.
            outcome.interrupted = True
            raise
        except (FetchError, SourceError) as exc:
            outcome.error = str(exc).removeprefix(f"{shown_source(name)}: ")
        except StorageError as exc:
            outcome.error = f"database problem: {exc}"
        except Exception as exc:  # one source's bug must not stop the others
            log.debug("fetch of %s failed", name, exc_info=True)
            outcome.error = f"unexpected failure ({type(exc).__name__}: {exc})"
        finally:
            try:
                await _despite_cancel(self.in_thread(self._finish, name, outcome, now))
            except StorageError as exc:
                log.warning("fetch of %s: not recorded (%s)", shown_source(name), exc)
        if outcome.interrupted:
            log.info("fetch of %s: stopped midway; resumed next time", shown_source(name))
        elif outcome.error:
            log.log(self.failure_level, "fetch of %s failed: %s", shown_source(name), outcome.error)
        else:
            log.info("fetch: %s", outcome.describe())
        return outcome

    async def _read(
        self,
        session: Any,
        row: dict[str, Any],
        since: datetime | None,
        now: datetime,
        outcome: SourceOutcome,
    ) -> None:
        spec = parse_source(row["name"])
        cursor = _parse_time(row["cursor"])
        start = next_arxiv_since(cursor, now, since) if spec.kind == "arxiv" else None
        fetch = open_fetch(
            spec,
            session,
            self.config,
            since=start,
            now=now,
            etag=row["etag"],
            last_modified=row["last_modified"],
            sleep=self.sleep,
            clock=self.monotonic,
            pacer=self.pacer,
        )
        async for page in fetch:
            # Each page is stamped when it is stored, not when the fetch began: a page
            # stored after a digest was built must be new for the next one.
            stored_at = self.clock()
            prepared, skipped, ignored = await self.in_thread(self._prepare, page.papers, stored_at)
            summary = await self.in_thread(self._store, prepared, stored_at)
            outcome.read += len(page.papers)
            outcome.added += summary.added
            outcome.merged += summary.merged
            outcome.skipped += summary.skipped + skipped
            outcome.ignored += ignored
            outcome.restamped += summary.restamped
            outcome.other_abstracts += summary.other_abstracts
            if self.stopping:
                outcome.interrupted = True
                return
        result = fetch.result
        assert result is not None
        outcome.notes.extend(result.notes)
        # A --since later than where the next fetch would start skipped a window: the
        # cursor must not move past it (that window would never be read).
        widened = since is None or since <= next_arxiv_since(cursor, now)
        outcome.complete = result.complete and widened
        outcome.result = result

    def _finish(self, name: str, outcome: SourceOutcome, now: datetime) -> None:
        """Record the outcome and release the claim (in a worker thread)."""
        db = self.db()
        if outcome.interrupted:
            pass
        elif outcome.error:
            failures = int(
                (source_store.get_source(db, name) or {}).get("consecutive_failures") or 0
            )
            source_store.record_failure(
                db,
                name,
                now=stamp(now),
                error=outcome.error,
                next_try_at=stamp(now + source_backoff(failures + 1)),
                added=outcome.added,
            )
        elif not outcome.busy:
            result = outcome.result if outcome.complete else None
            source_store.record_success(
                db,
                name,
                now=stamp(now),
                read=outcome.read,
                added=outcome.added,
                merged=outcome.merged,
                complete=outcome.complete,
                # Never past our own clock: a cursor in the future (a bogus date, or
                # this host's clock behind) would start the next fetch after papers
                # not yet read, a gap never filled.
                cursor=stamp(min(result.cursor, now)) if result and result.cursor else None,
                etag=result.etag if result else None,
                last_modified=result.last_modified if result else None,
                note="; ".join(outcome.notes) or None,
            )
        source_store.release(db, name, self.holder)
