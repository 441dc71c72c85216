"""Fetching an RSS or Atom feed: one conditional GET.

`FeedFetch(spec, session, config, etag=..., last_modified=...)` is an async iterable of at
most one `FetchPage`; `result` is set at the end with the validators to store
(`etag`, `last_modified`) and `not_modified` when the server answered 304. The body is
capped at `config.feed_max_bytes` (a bigger one fails: "too big"); a body that is an
HTML page, a PDF, an image or any non-feed fails with "not a feed" (never retried).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import aiohttp

from bot.fetching.base import SourceFetch
from bot.fetching.client import Answer, Clock, Pacer, Sleep
from bot.fetching.config import FetchConfig
from bot.fetching.pages import FetchPage, FetchResult, newest
from digests.sources.errors import NotAFeedError
from digests.sources.feeds import parse_feed
from digests.sources.records import FetchedPaper
from digests.sources.spec import SourceSpec

log = logging.getLogger(__name__)

_NEVER_FEEDS = ("application/pdf", "image/", "audio/", "video/", "application/zip", "font/")


class FeedFetch(SourceFetch):
    """One fetch of a feed (see the module doc)."""

    kind = "feed"
    label = "a feed source"

    def __init__(
        self,
        spec: SourceSpec,
        session: aiohttp.ClientSession,
        config: FetchConfig,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        pacer: Pacer | None = None,
    ) -> None:
        super().__init__(
            spec, session, config, delay=config.feed_delay, sleep=sleep, clock=clock, pacer=pacer
        )
        self.etag = etag
        self.last_modified = last_modified

    def _parse(self, answer: Answer) -> tuple[Answer, list[FetchedPaper] | None]:
        if answer.status == 304:
            return answer, None
        content_type = answer.headers.get("Content-Type", "")
        if content_type.lower().startswith(_NEVER_FEEDS):
            raise NotAFeedError(f"not a feed ({content_type.split(';')[0]})")
        return answer, parse_feed(answer.body, source=self.spec.name, content_type=content_type)

    async def _pages(self) -> AsyncIterator[FetchPage]:
        result = FetchResult(self.spec.name, etag=self.etag, last_modified=self.last_modified)
        headers = {
            "Accept": "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.1"
        }
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        answer, papers = await self.client.request(
            self.spec.value, self._parse, headers=headers, max_bytes=self.config.feed_max_bytes
        )
        result.requests = self.client.requests
        result.complete = True
        if papers is None:
            result.not_modified = True
        else:
            result.etag = answer.headers.get("ETag") or None
            result.last_modified = answer.headers.get("Last-Modified") or None
            result.cursor = newest(None, *(p.updated or p.published for p in papers))
            result.read = len(papers)
            if papers:
                result.pages = 1
                self.result = result  # set before the yield: a caller may stop after one page
                yield FetchPage(self.spec.name, 0, papers)
        self.result = result
