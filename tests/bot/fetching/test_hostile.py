"""Fetching against hostile or quirky servers, and politeness across sources: bodies
without a length, gzip bombs, redirects off HTTP, a venue whose `count` lies, and arXiv's
3 s kept between two sources read one after the other."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web

from bot.fetching import FetchConfig, FetchError, collect, open_fetch, open_session
from bot.fetching.client import retry_after
from bot.fetching.store import SourceFetcher
from db import open_db
from db import sources as source_store
from digests.sources.spec import parse_source
from digests.timestamps import stamp
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.fetch_time import FakeTime
from tests.fakes.openreview_api import FakeOpenReview, note
from tests.fakes.server import serve

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
VENUE = parse_source("openreview:ICLR.cc/2025/Conference")


async def test_two_arxiv_sources_keep_three_seconds_between_them(tmp_path: Path) -> None:
    """Sources of one kind are read one after the other, each with a client of its own:
    the second's first request came at once after the first's last (0 s, not 3 s)."""
    time_ = FakeTime()
    entries = [
        Entry(f"2511.{i:05d}", f"Paper {i} on learning things", f"Abstract {i}.",
              NOW - timedelta(hours=i + 1), categories=["cs.LG" if i % 2 else "cs.AI"])
        for i in range(8)
    ]  # fmt: skip
    fake = FakeArxiv(entries, clock=time_.clock)
    runner, port = await serve(fake.app())
    config = FetchConfig(
        arxiv_url=f"http://127.0.0.1:{port}/api", arxiv_page_size=2, arxiv_revisions=False
    )
    path = tmp_path / "p.db"
    db = open_db(path)
    for name in ("arxiv:cs.AI", "arxiv:cs.LG"):
        spec = parse_source(name)
        source_store.add_source(
            db, {"name": spec.name, "kind": spec.kind, "value": spec.value, "added_at": stamp(NOW)}
        )
    fetcher = SourceFetcher(
        lambda: open_db(path), config, clock=lambda: NOW, sleep=time_.sleep, monotonic=time_.clock
    )
    try:
        outcomes = await fetcher.fetch()
    finally:
        await runner.cleanup()
    assert [o.added for o in outcomes] == [4, 4]
    queries = [r.params["search_query"] for r in fake.requests]
    assert queries[0] == "cat:cs.AI" and queries[-1] == "cat:cs.LG"
    gaps = [b.at - a.at for a, b in zip(fake.requests, fake.requests[1:], strict=False)]
    assert len(gaps) == 3 and min(gaps) >= 3.0, gaps


async def serve_handler(handler) -> tuple[web.AppRunner, str]:  # type: ignore[no-untyped-def]
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner, port = await serve(app)
    return runner, f"http://127.0.0.1:{port}"


async def fetch_venue(base: str, **config: object):  # type: ignore[no-untyped-def]
    time_ = FakeTime()
    cfg = FetchConfig(openreview_url=base, attempts=1, **config)  # type: ignore[arg-type]
    async with open_session(cfg) as session:
        return await collect(
            open_fetch(VENUE, session, cfg, now=NOW, sleep=time_.sleep, clock=time_.clock)
        )


async def test_an_answer_without_a_length_is_cut_at_the_cap() -> None:
    """An OpenReview (or arXiv) answer had no size cap at all: a server streaming without
    Content-Length was read whole into memory."""

    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for _ in range(64):  # 4 MB, in 64 KB chunks, never a Content-Length
            await resp.write(b" " * 65536)
        return resp

    runner, base = await serve_handler(endless)
    try:
        with pytest.raises(FetchError, match=r"too big \(over 1000000 bytes\)") as caught:
            await fetch_venue(base, max_bytes=1_000_000)
    finally:
        await runner.cleanup()
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("openreview:ICLR.cc/2025/Conference: ")


async def test_a_gzip_bomb_is_cut_after_decompression() -> None:
    """20 KB of gzip inflating to 20 MB: the cap counts the inflated bytes."""
    bomb = gzip.compress(b"\0" * 20_000_000)
    assert len(bomb) < 100_000

    async def gzipped(request: web.Request) -> web.Response:
        return web.Response(
            body=bomb,
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )

    runner, base = await serve_handler(gzipped)
    try:
        with pytest.raises(FetchError, match=r"too big \(over 1000000 bytes\)"):
            await fetch_venue(base, max_bytes=1_000_000)
    finally:
        await runner.cleanup()


async def test_a_redirect_off_http_is_one_line() -> None:
    async def to_file(request: web.Request) -> web.Response:
        raise web.HTTPFound("file:///etc/passwd")

    runner, base = await serve_handler(to_file)
    try:
        with pytest.raises(FetchError) as caught:
            await fetch_venue(base)
    finally:
        await runner.cleanup()
    assert "\n" not in str(caught.value) and "root:" not in str(caught.value)


async def test_a_venue_whose_count_lies_stops_at_the_limit() -> None:
    """A server that ignores `offset` and claims a huge count: paging stops at
    `max_results`, the fetch is incomplete (the cursor must not move)."""
    fake = FakeOpenReview([note(f"n{i}", f"Paper {i}", f"Abstract {i}.") for i in range(3)])
    app = fake.app()

    async def liar(request: web.Request) -> web.Response:
        resp = await fake.list_notes(request.clone(rel_url=request.rel_url.with_query(
            {**request.query, "offset": "0"})))  # fmt: skip
        return web.json_response({**json.loads(resp.text), "count": 10**9})

    app = web.Application()
    app.router.add_get("/notes", liar)
    runner, port = await serve(app)
    try:
        papers, result = await fetch_venue(
            f"http://127.0.0.1:{port}", max_results=30, openreview_page_size=3
        )
    finally:
        await runner.cleanup()
    assert len(papers) == 30 and not result.complete
    assert result.notes == ["stopped at 30 notes (the limit per fetch)"]


def test_retry_after_as_an_http_date() -> None:
    now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC).timestamp()
    assert retry_after("Mon, 30 Nov 2026 09:00:42 GMT", now) == 42.0
    assert retry_after("Mon, 30 Nov 2026 08:00:00 GMT", now) == 0.0  # past: no wait
    assert retry_after("soon", now) is None


def test_a_future_publication_date_is_stored_as_now() -> None:
    from digests.ingest.fetched import fetched_row
    from digests.sources.records import FetchedPaper

    paper = FetchedPaper(
        source="feed:https://j.example/rss",
        title="A paper from the year 2099 at a journal",
        abstract="Dated wrong by the feed.",
        published=datetime(2099, 1, 1, tzinfo=UTC),
        updated=datetime(2099, 1, 2, tzinfo=UTC),
    )
    row = fetched_row(paper, NOW)
    assert row is not None
    assert (row["published_at"], row["revised_at"]) == (stamp(NOW), stamp(NOW))


async def test_the_cursor_never_moves_past_now(tmp_path: Path) -> None:
    """An arXiv entry dated after our clock (our host's clock behind) made the cursor a
    future date: the next fetch then started after papers it never read."""
    time_ = FakeTime()
    entries = [
        Entry("2511.00001", "Ahead of our clock paper", "Abstract.", NOW + timedelta(days=30)),
        Entry("2511.00002", "A normal paper of today", "Other.", NOW - timedelta(hours=2)),
    ]
    fake = FakeArxiv(entries, clock=time_.clock)
    runner, port = await serve(fake.app())
    config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api", arxiv_revisions=False)
    path = tmp_path / "p.db"
    spec = parse_source("arxiv:cs.LG")
    source_store.add_source(
        open_db(path),
        {"name": spec.name, "kind": spec.kind, "value": spec.value, "added_at": stamp(NOW)},
    )
    fetcher = SourceFetcher(
        lambda: open_db(path), config, clock=lambda: NOW, sleep=time_.sleep, monotonic=time_.clock
    )
    try:
        (outcome,) = await fetcher.fetch()
    finally:
        await runner.cleanup()
    assert outcome.complete and outcome.added == 2
    row = source_store.get_source(open_db(path), spec.name)
    assert row is not None and row["cursor"] == stamp(NOW)
