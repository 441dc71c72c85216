"""Fetching sources over HTTP (aiohttp): arXiv's export API, OpenReview API v2, feeds.

`open_fetch(spec, session, config, ...)` (the session from `open_session`) is an async
iterable of `FetchPage`s to store one at a time; its `result` says whether it completed and
where the cursor goes (the resume contract: `bot.fetching.pages`). Every failure is a
one-line `FetchError`; `sleep` and `clock` are injectable everywhere.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime

import aiohttp

from bot.fetching.arxiv import ArxivFetch
from bot.fetching.client import Clock, FetchError, Pacer, PoliteClient, Sleep, shown_source
from bot.fetching.config import FetchConfig
from bot.fetching.feeds import FeedFetch
from bot.fetching.guard import GuardedConnector
from bot.fetching.openreview import OpenReviewFetch
from bot.fetching.pages import (
    ARXIV_OVERLAP,
    FIRST_FETCH,
    FetchPage,
    FetchResult,
    next_arxiv_since,
)
from digests.sources.records import FetchedPaper
from digests.sources.spec import SourceSpec

log = logging.getLogger(__name__)

Fetch = ArxivFetch | OpenReviewFetch | FeedFetch

__all__ = [
    "ARXIV_OVERLAP",
    "FIRST_FETCH",
    "ArxivFetch",
    "FeedFetch",
    "Fetch",
    "FetchConfig",
    "FetchError",
    "FetchPage",
    "FetchResult",
    "OpenReviewFetch",
    "Pacer",
    "PoliteClient",
    "collect",
    "next_arxiv_since",
    "open_fetch",
    "open_session",
    "shown_source",
]


def open_session(config: FetchConfig) -> aiohttp.ClientSession:
    """A session for fetching (use it as `async with`): Paperboy's User-Agent, the
    request timeout, at most two connections per host, and the redirect guard: its
    resolver checks each redirect hop's addresses (`bot.fetching.guard`). No DNS cache
    and no connection reused, so every request to a name is looked up, checked when it
    is a hop, and connected to at the very addresses checked."""
    return aiohttp.ClientSession(
        headers={"User-Agent": config.user_agent()},
        timeout=aiohttp.ClientTimeout(total=config.timeout),
        connector=GuardedConnector(config.resolver, limit_per_host=2),
    )


def open_fetch(
    spec: SourceSpec,
    session: aiohttp.ClientSession,
    config: FetchConfig,
    *,
    since: datetime | None = None,
    now: datetime | None = None,
    etag: str | None = None,
    last_modified: str | None = None,
    sleep: Sleep = asyncio.sleep,
    clock: Clock = time.monotonic,
    pacer: Pacer | None = None,
) -> Fetch:
    """The fetch for `spec`. arXiv needs `since` (see `next_arxiv_since`) or `now` (then
    it goes back `FIRST_FETCH`); feeds use `etag`/`last_modified`; OpenReview neither.
    `pacer`: shared with the other fetches that must keep one spacing per host."""
    if spec.kind == "arxiv":
        if since is None:
            if now is None:
                raise ValueError("an arXiv fetch needs since= or now=")
            since = next_arxiv_since(None, now)
        return ArxivFetch(spec, session, config, since=since, sleep=sleep, clock=clock, pacer=pacer)
    if spec.kind == "openreview":
        return OpenReviewFetch(spec, session, config, sleep=sleep, clock=clock, pacer=pacer)
    return FeedFetch(
        spec,
        session,
        config,
        etag=etag,
        last_modified=last_modified,
        sleep=sleep,
        clock=clock,
        pacer=pacer,
    )


async def collect(fetch: Fetch) -> tuple[list[FetchedPaper], FetchResult]:
    """All papers of `fetch` and its result (for small fetches and tests; storing page by
    page is what makes a long fetch resumable)."""
    papers: list[FetchedPaper] = []
    async for page in fetch:
        papers.extend(page.papers)
    assert fetch.result is not None
    return papers, fetch.result
