"""Fetching OpenReview (API v2 fake) and feeds (fake host), and the same paper from arXiv
and OpenReview."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.fetching import (
    FeedFetch,
    FetchConfig,
    FetchError,
    OpenReviewFetch,
    collect,
    open_fetch,
    open_session,
)
from digests.sources.records import to_paper_record
from digests.sources.spec import parse_source
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.feeds import FakeFeeds
from tests.fakes.fetch_time import FakeTime
from tests.fakes.openreview_api import FakeOpenReview, note
from tests.fakes.server import serve

VENUE = parse_source("openreview:ICLR.cc/2025/Conference")
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def venue_notes() -> list[dict]:  # type: ignore[type-arg]
    notes = [
        note(f"n{i}", f"Paper {i}", f"Abstract {i}.", keywords=["rl"], tldr=f"TLDR {i}")
        for i in range(5)
    ]
    notes[1]["content"].pop("TLDR")
    notes[1]["content"].pop("keywords")
    notes.append(note("other", "Elsewhere", "Other venue.", venueid="ICML.cc/2025/Conference"))
    return notes


async def fetch_venue(fake: FakeOpenReview, time_: FakeTime, **config: object):  # type: ignore[no-untyped-def]
    runner, port = await serve(fake.app())
    cfg = FetchConfig(openreview_url=f"http://127.0.0.1:{port}", openreview_page_size=2, **config)  # type: ignore[arg-type]
    try:
        async with open_session(cfg) as session:
            return await collect(
                OpenReviewFetch(VENUE, session, cfg, sleep=time_.sleep, clock=time_.clock)
            )
    finally:
        await runner.cleanup()


async def test_openreview_pages_by_offset_until_count() -> None:
    time_ = FakeTime()
    fake = FakeOpenReview(venue_notes(), clock=time_.clock)
    papers, result = await fetch_venue(fake, time_)
    assert [p.openreview_id for p in papers] == ["n0", "n1", "n2", "n3", "n4"]
    assert [(r.params["offset"], r.params["limit"]) for r in fake.requests] == [
        ("0", "2"),
        ("2", "2"),
        ("4", "2"),
    ]
    assert all(r.params["content.venueid"] == "ICLR.cc/2025/Conference" for r in fake.requests)
    assert result.complete and result.read == 5 and result.pages == 3
    assert time_.sleeps == [1.0, 1.0]  # the smaller polite delay
    assert papers[0].tldr == "TLDR 0" and papers[1].tldr is None and papers[1].keywords == []
    assert papers[0].pdf_url == "https://openreview.net/pdf/n0.pdf"
    assert papers[0].url == "https://openreview.net/forum?id=n0"
    assert (papers[0].venue, papers[0].year) == ("ICLR 2025 Poster", 2025)
    assert "Paperboy/" in fake.requests[0].user_agent


async def test_openreview_empty_page_retry_503_and_malformed() -> None:
    time_ = FakeTime()
    fake = FakeOpenReview(
        venue_notes(), clock=time_.clock, empty_once={2}, failures=[(503, "3")], malformed=1
    )
    papers, result = await fetch_venue(fake, time_)
    assert len(papers) == 5 and result.complete
    offsets = [r.params["offset"] for r in fake.requests]
    assert offsets == ["0", "0", "0", "2", "2", "4"]  # 503, malformed, good; empty, good; good
    assert time_.sleeps[:2] == [5.0, 10.0]


async def test_openreview_malformed_every_time() -> None:
    time_ = FakeTime()
    fake = FakeOpenReview(venue_notes(), clock=time_.clock, malformed=99)
    with pytest.raises(FetchError) as caught:
        await fetch_venue(fake, time_, attempts=2)
    message = str(caught.value)
    assert (
        message.startswith("openreview:ICLR.cc/2025/Conference: malformed answer")
        and "not JSON" in message
    )


async def test_the_same_paper_from_arxiv_and_openreview() -> None:
    """An OpenReview note linking the arXiv preprint shares its matching key."""
    time_ = FakeTime()
    arxiv = FakeArxiv(
        [
            Entry(
                "2501.01234",
                "Planning Agents",
                "We show agents plan, in detail.",
                NOW - timedelta(hours=3),
                comment="ICLR 2025 (Oral)",
            )
        ],
        clock=time_.clock,
    )
    openreview = FakeOpenReview(
        [
            note(
                "abcXYZ",
                "Planning Agents",
                "We show agents plan.",
                venue="ICLR 2025 Oral",
                tldr="Agents plan.",
                extra={"arxiv": "https://arxiv.org/abs/2501.01234v2"},
            )
        ],
        clock=time_.clock,
    )
    runner_a, port_a = await serve(arxiv.app())
    runner_o, port_o = await serve(openreview.app())
    config = FetchConfig(
        arxiv_url=f"http://127.0.0.1:{port_a}/api", openreview_url=f"http://127.0.0.1:{port_o}"
    )
    try:
        async with open_session(config) as session:
            from_arxiv, _ = await collect(
                open_fetch(
                    parse_source("arxiv:cs.LG"),
                    session,
                    config,
                    now=NOW,
                    sleep=time_.sleep,
                    clock=time_.clock,
                )
            )
            from_openreview, _ = await collect(
                open_fetch(VENUE, session, config, sleep=time_.sleep, clock=time_.clock)
            )
    finally:
        await runner_a.cleanup()
        await runner_o.cleanup()
    (a,), (o,) = from_arxiv, from_openreview
    assert a.external_ids()[0] == o.external_ids()[0] == "arXiv:2501.01234"
    assert (a.venue, o.venue) == ("ICLR 2025 Oral", "ICLR 2025 Oral")
    assert o.tldr == "Agents plan." and a.tldr is None
    record_a, record_o = to_paper_record(a), to_paper_record(o)
    assert record_a is not None and record_o is not None
    assert record_a.external_id == record_o.external_id == "arXiv:2501.01234"


@pytest.fixture
async def feeds():  # type: ignore[no-untyped-def]
    fake = FakeFeeds(big_bytes=300_000)
    runner, port = await serve(fake.app())
    try:
        yield fake, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def fetch_feed(url: str, **kwargs: object):  # type: ignore[no-untyped-def]
    config = FetchConfig(feed_max_bytes=100_000, attempts=2)
    time_ = FakeTime()
    async with open_session(config) as session:
        return await collect(
            FeedFetch(
                parse_source(f"feed:{url}"),
                session,
                config,
                sleep=time_.sleep,
                clock=time_.clock,
                **kwargs,
            )  # type: ignore[arg-type]
        )


async def test_rss_then_conditional_get(feeds) -> None:  # type: ignore[no-untyped-def]
    fake, base = feeds
    papers, result = await fetch_feed(f"{base}/cs.LG.rss")
    assert len(papers) == 2 and result.complete and not result.not_modified
    assert (result.etag, result.last_modified) == ('"v1"', "Sat, 28 Nov 2026 12:00:00 GMT")
    assert papers[0].external_ids() == ["arXiv:2611.01234"]
    again, result2 = await fetch_feed(
        f"{base}/cs.LG.rss", etag=result.etag, last_modified=result.last_modified
    )
    assert again == [] and result2.not_modified and result2.complete and result2.etag == '"v1"'
    assert fake.requests[1]["If-None-Match"] == '"v1"'
    assert fake.requests[1]["If-Modified-Since"] == "Sat, 28 Nov 2026 12:00:00 GMT"


async def test_atom_served_as_html_is_sniffed(feeds) -> None:  # type: ignore[no-untyped-def]
    _, base = feeds
    papers, result = await fetch_feed(f"{base}/journal.atom")
    assert [p.title for p in papers] == ["Learning to Plan"] and result.last_modified


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/index.html", "not a feed (an HTML page)"),
        ("/paper.pdf", "not a feed (application/pdf)"),
        ("/big.rss", "too big (over 100000 bytes)"),
        ("/gone.rss", "HTTP 404 Not Found from 127.0.0.1:"),
    ],
)
async def test_feed_errors_are_one_line_and_not_retried(feeds, path: str, message: str) -> None:  # type: ignore[no-untyped-def]
    fake, base = feeds
    with pytest.raises(FetchError) as caught:
        await fetch_feed(f"{base}{path}")
    text = str(caught.value)
    assert text.startswith(f"feed:{base}{path}: ") and message in text and "\n" not in text
    assert len(fake.requests) == 1


async def test_a_feed_tokens_query_never_shows(feeds) -> None:  # type: ignore[no-untyped-def]
    _, base = feeds
    with pytest.raises(FetchError) as caught:
        await fetch_feed(f"{base}/gone.rss?token=s3cr3t")
    assert "s3cr3t" not in str(caught.value) and str(caught.value).startswith(
        f"feed:{base}/gone.rss?…: "
    )
