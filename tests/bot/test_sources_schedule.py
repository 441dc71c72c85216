"""Scheduled fetching in `paperboy run`: due sources are fetched before a digest, which
holds only the new papers; a hanging source does not hold the digest; a stop cuts a
fetch off; the inbox honours PAPERBOY_MAX_RECORD_KB."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web

from bot.fetching import FetchConfig
from bot.fetching.store import SourceFetcher
from bot.local import LocalPoster
from bot.scheduler import DigestScheduler
from bot.services import Services
from config.settings import load_settings
from db import open_db
from db import papers as paper_store
from db import sources as source_store
from digests.commands import handle
from digests.ingest import ingest_files
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.clock import Clock
from tests.fakes.server import serve

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday


def new_papers() -> list[Entry]:
    return [
        Entry(
            f"2511.{i:05d}",
            f"Conservative offline reinforcement learning with diffusion priors, part {i}",
            f"We study offline reinforcement learning from logged data: policy {i} is "
            "regularised toward the behaviour policy with a diffusion prior, on D4RL.",
            NOW - timedelta(hours=6 * i + 2),
        )
        for i in range(3)
    ]


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def services(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock) -> Services:
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW - timedelta(days=30))  # old papers
    settings = load_settings({"PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox")}, dotenv=None)
    return Services(db_path, settings, catalog, clock=clock)


def subscribe_daily(services: Services, channel: str) -> None:
    for text in ("subscribe offline-rl", "schedule daily 09:00 UTC"):
        reply = handle(text, services.context(channel, "tester"))
        assert not reply.error, reply.text


def add_source(services: Services, name: str) -> None:
    source_store.add_source(
        services.db(),
        {"name": name, "kind": name.split(":")[0], "value": name.split(":", 1)[1],
         "added_at": stamp(NOW - timedelta(days=2))},
    )  # fmt: skip


def quick_fetcher(services: Services, config: FetchConfig) -> SourceFetcher:
    async def no_wait(seconds: float) -> None:
        return None

    return SourceFetcher(services.db, config, clock=services.clock, sleep=no_wait)


async def test_a_due_source_is_fetched_before_the_digest_of_only_new_papers(
    services: Services, clock: Clock
) -> None:
    fake = FakeArxiv(new_papers())
    runner, port = await serve(fake.app())
    try:
        config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api")
        subscribe_daily(services, "local:lab")
        add_source(services, "arxiv:cs.LG")
        scheduler = DigestScheduler(
            services, {"local": LocalPoster(services.settings.local_dir, clock)}
        )
        scheduler.fetching.fetcher = quick_fetcher(services, config)
        await scheduler.run_digest("local:lab", now=NOW)

        row = source_store.get_source(services.db(), "arxiv:cs.LG")
        assert row is not None and row["last_success_at"] == stamp(NOW)
        assert row["papers_added"] == 3 and fake.requests
        [line] = [
            json.loads(text)
            for text in (services.settings.local_dir / "lab.jsonl").read_text().splitlines()
        ]
        shown = line["text"]
        # Only the three new papers: the 38 stored 30 days ago are not new.
        for entry in new_papers():
            assert entry.title in shown
        digest_ids = [
            r["paper_id"] for r in services.db().query("select paper_id from digest_items")
        ]
        assert len(digest_ids) == 3
        aliases = {
            paper_store.paper_id_for_alias(services.db(), f"arXiv:{e.arxiv_id}")
            for e in new_papers()
        }
        assert set(digest_ids) == aliases

        # Fetched 0 h ago: not due before the next digest; a scheduled fetch adds nothing.
        asked = len(fake.requests)
        clock.now = NOW + timedelta(hours=1)
        await scheduler.fetching.before_digest(clock.now, "local:lab")
        assert len(fake.requests) == asked
        outcomes = await scheduler.fetching.fetcher.fetch()
        assert [(o.read, o.added, o.merged, o.error) for o in outcomes] == [(3, 0, 0, None)]
        assert paper_store.count_papers(services.db()) == 38 + 3
        await scheduler.stop()
    finally:
        await runner.cleanup()


async def test_a_hanging_source_does_not_hold_the_digest_and_a_stop_cuts_it_off(
    services: Services, clock: Clock
) -> None:
    asked, release = asyncio.Event(), asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        asked.set()
        await release.wait()  # hangs until the test ends
        return web.Response(text="")

    app = web.Application()
    app.router.add_get("/api/query", hang)
    runner, port = await serve(app)
    try:
        subscribe_daily(services, "local:lab")
        add_source(services, "arxiv:cs.LG")
        scheduler = DigestScheduler(
            services, {"local": LocalPoster(services.settings.local_dir, clock)}
        )
        config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api")
        scheduler.fetching.fetcher = quick_fetcher(services, config)
        scheduler.fetching.wait_seconds = 0.2  # FETCH_WAIT_SECONDS, shrunk
        result = await asyncio.wait_for(scheduler.run_digest("local:lab", now=NOW), 30)
        assert result is not None and asked.is_set()
        assert (services.settings.local_dir / "lab.jsonl").exists()  # built from what is stored
        row = source_store.get_source(services.db(), "arxiv:cs.LG")
        assert row is not None and row["fetching_by"] is not None  # still fetching

        await asyncio.wait_for(scheduler.stop(), 10)  # a stop cancels the fetch at once
        for _ in range(100):  # the claim is released from a worker thread
            row = source_store.get_source(services.db(), "arxiv:cs.LG")
            if row and row["fetching_by"] is None:
                break
            await asyncio.sleep(0.05)
        assert row is not None and row["fetching_by"] is None
        assert row["last_success_at"] is None and row["last_error"] is None  # neither
    finally:
        release.set()
        await runner.cleanup()


async def test_scheduled_fetch_jobs_follow_the_sources(services: Services, clock: Clock) -> None:
    add_source(services, "arxiv:cs.LG")
    source_store.add_source(
        services.db(),
        {"name": "openreview:ICLR.cc/2025/Conference", "kind": "openreview",
         "value": "ICLR.cc/2025/Conference", "cron": "0 */6 * * *", "added_at": stamp(NOW)},
    )  # fmt: skip
    scheduler = DigestScheduler(services, {})
    scheduler.fetching.sync()
    jobs = {job.id: job for job in scheduler.scheduler.get_jobs()}
    assert set(jobs) == {"fetch:arxiv:cs.LG", "fetch:openreview:ICLR.cc/2025/Conference"}
    daily = jobs["fetch:arxiv:cs.LG"].trigger.get_next_fire_time(None, NOW)
    assert daily == datetime(2026, 12, 1, 5, 0, tzinfo=UTC)  # PAPERBOY_FETCH_CRON's default
    six = jobs["fetch:openreview:ICLR.cc/2025/Conference"].trigger.get_next_fire_time(None, NOW)
    assert six == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    source_store.remove_source(services.db(), "arxiv:cs.LG")
    scheduler.fetching.sync()
    assert [job.id for job in scheduler.scheduler.get_jobs()] == [
        "fetch:openreview:ICLR.cc/2025/Conference"
    ]


async def test_the_inbox_honours_max_record_kb(
    tmp_path: Path, services: Services, catalog: Catalog
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    big = "We study offline reinforcement learning. " * 60  # about 2.4 KB
    (inbox / "list.txt").write_text(f"A list\n\n{big}\n")
    settings = replace(services.settings, inbox=inbox, max_record_kb=1)
    small = Services(services.db_path, settings, catalog, clock=services.clock)
    before = paper_store.count_papers(small.db())
    await DigestScheduler(small, {}).ingest_inbox(NOW)
    assert paper_store.count_papers(small.db()) == before  # refused: over 1 KB
    roomy = Services(services.db_path, replace(settings, max_record_kb=100), catalog)
    (inbox / "list.txt").write_text(f"A list\n\n{big}\n\n")  # a new version of the file
    await DigestScheduler(roomy, {}).ingest_inbox(NOW)
    assert paper_store.count_papers(roomy.db()) == before + 1
