"""Fetching arXiv through the fake export API: paging to `since`, the 3 s
spacing, the zero-entry page, 503 + Retry-After, malformed pages, new versions, errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web

from bot.fetching import (
    ArxivFetch,
    FetchConfig,
    FetchError,
    collect,
    next_arxiv_since,
    open_fetch,
    open_session,
)
from digests.sources.spec import parse_source
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.arxiv_fetch import SPEC, run, time_  # noqa: F401
from tests.fakes.fetch_time import FakeTime
from tests.fakes.server import serve

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def corpus(n: int = 25) -> list[Entry]:
    """One cs.LG paper every 8 hours back from NOW, plus a stat.ML one that never matches."""
    entries = [
        Entry(
            f"2611.{i:05d}",
            f"Paper {i}",
            f"Abstract of paper {i}.",
            NOW - timedelta(hours=8 * i + 1),
        )
        for i in range(n)
    ]
    return [*entries, Entry("2611.99999", "Other", "Stats.", NOW, categories=["stat.ML"])]


@pytest.fixture
async def arxiv(time_: FakeTime) -> AsyncIterator[tuple[FakeArxiv, FetchConfig]]:
    fake = FakeArxiv(corpus(), clock=time_.clock)
    runner, port = await serve(fake.app())
    config = FetchConfig(
        arxiv_url=f"http://127.0.0.1:{port}/api",
        arxiv_page_size=5,
        contact_email="team@lab.example",
        arxiv_revisions=False,  # one pass, so request counts are simple; the update pass has its own test
    )
    try:
        yield fake, config
    finally:
        await runner.cleanup()


async def test_pages_until_since_three_seconds_apart(arxiv, time_: FakeTime) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    papers, result = await run(config, time_, NOW - timedelta(days=4))
    # 8 h apart from NOW-1h: indices 0..11 are within 4 days (12*8+1 = 97 h > 96 h).
    assert [p.arxiv_id for p in papers] == [f"2611.{i:05d}" for i in range(12)]
    assert result.complete and result.read == 12 and result.pages == 3
    assert result.cursor == NOW - timedelta(hours=1)
    starts = [r.params["start"] for r in fake.requests]
    assert starts == ["0", "5", "10"]  # page 3 holds the first older entry: no 4th request
    first = fake.requests[0].params
    assert first == {"search_query": "cat:cs.LG", "start": "0", "max_results": "5",
                     "sortBy": "submittedDate", "sortOrder": "descending"}  # fmt: skip
    gaps = [b.at - a.at for a, b in zip(fake.requests, fake.requests[1:], strict=False)]
    assert gaps == [3.0, 3.0] and time_.sleeps == [3.0, 3.0]
    agent = fake.requests[0].user_agent
    assert agent.startswith("Paperboy/") and "team@lab.example" in agent


async def test_reads_to_the_end_when_since_is_older_than_everything(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    papers, result = await run(config, time_, NOW - timedelta(days=365))
    assert len(papers) == 25 and result.complete
    assert [r.params["start"] for r in fake.requests] == ["0", "5", "10", "15", "20"]


async def test_a_zero_entry_page_is_asked_again(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.empty_once = {5}
    papers, result = await run(config, time_, NOW - timedelta(days=4))
    assert len(papers) == 12 and result.complete
    assert [r.params["start"] for r in fake.requests] == ["0", "5", "5", "10"]
    assert time_.sleeps == [3.0, 3.0, 3.0]  # the retry is spaced like any request


async def test_a_page_that_stays_empty_ends_the_fetch_incomplete(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    config = replace(config, empty_page_retries=2)

    class AlwaysEmpty(set[int]):
        def __contains__(self, item: object) -> bool:
            return item == 5

        def discard(self, item: int) -> None:
            pass

    fake.empty_once = AlwaysEmpty()
    papers, result = await run(config, time_, NOW - timedelta(days=4))
    assert len(papers) == 5 and not result.complete  # the caller keeps its cursor: no gap
    assert "zero entries at 5 of 25" in result.notes[0]
    assert [r.params["start"] for r in fake.requests] == ["0", "5", "5", "5"]


async def test_503_with_retry_after_is_honoured(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.failures = [(503, "7"), (503, None)]
    papers, result = await run(config, time_, NOW - timedelta(hours=30))
    assert len(papers) == 4 and result.complete
    # 7 s asked (more than the 5 s backoff), then the doubled backoff, 10 s.
    assert time_.sleeps == [7.0, 10.0]
    assert len(fake.requests) == 3


async def test_a_retry_after_too_long_fails_at_once(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.failures = [(503, "86400")]
    with pytest.raises(FetchError) as caught:
        await run(config, time_, NOW - timedelta(days=1))
    assert str(caught.value).startswith("arxiv:cs.LG: HTTP 503")
    assert "asks to wait 86400 s" in str(caught.value) and time_.sleeps == []


async def test_5xx_until_the_attempts_run_out(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.failures = [(502, None)] * 10
    with pytest.raises(FetchError, match=r"gave up after 4 attempts") as caught:
        await run(config, time_, NOW - timedelta(days=1))
    assert "\n" not in str(caught.value) and len(fake.requests) == 4
    assert time_.sleeps == [5.0, 10.0, 20.0]


async def test_a_malformed_page_is_retried(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.malformed = 1
    papers, result = await run(config, time_, NOW - timedelta(hours=30))
    assert len(papers) == 4 and result.complete and len(fake.requests) == 2


async def test_a_page_malformed_every_time_is_one_error(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.malformed = 100
    with pytest.raises(FetchError) as caught:
        await run(config, time_, NOW - timedelta(days=1))
    message = str(caught.value)
    assert message.startswith("arxiv:cs.LG: malformed answer from 127.0.0.1:")
    assert "not well-formed XML" in message and "gave up after 4 attempts" in message


async def test_arxivs_error_feed_is_not_retried(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.error_feed = "malformed query"
    with pytest.raises(FetchError, match="arXiv refused the query: malformed query"):
        await run(config, time_, NOW - timedelta(days=1))
    assert len(fake.requests) == 1


async def test_4xx_fails_at_once(time_) -> None:  # type: ignore[no-untyped-def]
    runner, port = await serve(web.Application())  # every path 404
    config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api")
    try:
        with pytest.raises(FetchError) as caught:
            await run(config, time_, NOW - timedelta(days=1))
    finally:
        await runner.cleanup()
    assert str(caught.value) == f"arxiv:cs.LG: HTTP 404 Not Found from 127.0.0.1:{port}"
    assert time_.sleeps == []


async def test_an_unreachable_host_is_one_line(time_) -> None:  # type: ignore[no-untyped-def]
    runner, port = await serve(web.Application())
    await runner.cleanup()  # nothing listens on that port now
    config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api", attempts=2)
    with pytest.raises(FetchError) as caught:
        await run(config, time_, NOW - timedelta(days=1))
    message = str(caught.value)
    assert message.startswith(f"arxiv:cs.LG: cannot reach 127.0.0.1:{port}") and "\n" not in message
    assert time_.sleeps == [5.0]


async def test_a_new_version_is_the_same_paper(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    first, _ = await run(config, time_, NOW - timedelta(hours=10))
    fake.entries[0] = replace(fake.entries[0], version=2, abstract="Revised abstract.", updated=NOW)
    second, _ = await run(config, time_, NOW - timedelta(hours=10))
    assert first[0].external_ids() == second[0].external_ids() == ["arXiv:2611.00000"]
    assert (first[0].arxiv_version, second[0].arxiv_version) == (1, 2)
    assert second[0].abstract == "Revised abstract." and second[0].updated == NOW


async def test_a_search_query_source(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    fake.entries.append(
        Entry(
            "2611.77777",
            "Offline Reinforcement Learning at Scale",
            "Big.",
            NOW - timedelta(hours=2),
        )
    )
    spec = parse_source('arxiv:"offline reinforcement learning"')
    papers, result = await run(config, time_, NOW - timedelta(days=2), spec=spec)
    assert [p.arxiv_id for p in papers] == ["2611.77777"] and result.complete
    assert fake.requests[0].params["search_query"] == 'all:"offline reinforcement learning"'


async def test_open_fetch_defaults_to_seven_days(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    _fake, config = arxiv
    async with open_session(config) as session:
        fetch = open_fetch(SPEC, session, config, now=NOW, sleep=time_.sleep, clock=time_.clock)
        assert isinstance(fetch, ArxivFetch) and fetch.since == NOW - timedelta(days=7)
        papers, result = await collect(fetch)
    assert len(papers) == 21 and result.complete  # 8 h apart: 21 within 7 days


def test_next_since_overlaps_the_cursor() -> None:
    cursor = NOW - timedelta(days=1)
    assert next_arxiv_since(None, NOW) == NOW - timedelta(days=7)
    assert next_arxiv_since(cursor, NOW) == cursor - timedelta(days=3)
    assert next_arxiv_since(cursor, NOW, since=NOW - timedelta(days=30)) == NOW - timedelta(days=30)


async def test_a_killed_fetch_refetched_gives_each_paper_once_per_id(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    """Stop after one page (kill -9 stand-in), then fetch again from the same `since`:
    the second fetch covers the first's pages again (same ids: the store merges them)
    and everything after (no gap)."""
    _fake, config = arxiv
    since = NOW - timedelta(days=4)
    stored: dict[str, int] = {}
    async with open_session(config) as session:
        fetch = ArxivFetch(SPEC, session, config, since=since, sleep=time_.sleep, clock=time_.clock)
        async for page in fetch:
            for p in page.papers:
                stored[p.external_ids()[0]] = stored.get(p.external_ids()[0], 0) + 1
            break
        assert fetch.result is None  # not complete: the cursor stays
        again, result = await collect(
            ArxivFetch(SPEC, session, config, since=since, sleep=time_.sleep, clock=time_.clock)
        )
    keys = {p.external_ids()[0] for p in again}
    assert set(stored) <= keys and len(keys) == len(again) == 12 and result.complete


async def test_a_timeout_is_retried_then_one_line(time_) -> None:  # type: ignore[no-untyped-def]
    never = asyncio.Event()

    async def stall(request: web.Request) -> web.Response:
        await never.wait()
        return web.Response()

    app = web.Application()
    app.router.add_get("/api/query", stall)
    runner, port = await serve(app)
    config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api", timeout=0.05, attempts=2)
    try:
        with pytest.raises(FetchError) as caught:
            await run(config, time_, NOW - timedelta(days=1))
    finally:
        never.set()
        await runner.cleanup()
    assert str(caught.value) == (
        f"arxiv:cs.LG: 127.0.0.1:{port} did not answer within 0.05 s (gave up after 2 attempts)"
    )
    assert time_.sleeps == [5.0]


async def test_a_new_version_of_an_older_paper_is_found_by_the_update_pass(arxiv, time_) -> None:  # type: ignore[no-untyped-def]
    fake, config = arxiv
    config = replace(config, arxiv_revisions=True)
    old = fake.entries[20]  # submitted 161 h ago, outside a 2-day window
    fake.entries[20] = replace(
        old, version=2, abstract="Revised.", updated=NOW - timedelta(minutes=5)
    )
    papers, result = await run(config, time_, NOW - timedelta(days=2))
    ids = [p.arxiv_id for p in papers]
    assert ids[:6] == [f"2611.{i:05d}" for i in range(6)]  # the submission pass, to since
    assert (
        ids[6:] == [old.arxiv_id]
        and papers[6].arxiv_version == 2
        and papers[6].abstract == "Revised."
    )
    assert result.complete and result.cursor == NOW - timedelta(hours=1)
    sorts = [(r.params["sortBy"], r.params["start"]) for r in fake.requests]
    assert sorts == [
        ("submittedDate", "0"),
        ("submittedDate", "5"),
        ("lastUpdatedDate", "0"),
        ("lastUpdatedDate", "5"),
    ]
    assert len(set(ids)) == len(ids)  # papers both passes see are yielded once
