"""Fetching an arXiv source from the export API, newest first, page by page.

`ArxivFetch(spec, session, config, since=...)` is an async iterable of `FetchPage`s, pages
`config.arxiv_delay` apart, down to the first entry published before `since` (or
`config.max_results`: then incomplete); an empty page that should not be is asked again
(`config.empty_page_retries`). With `config.arxiv_revisions` a second pass by
`lastUpdatedDate` brings the new versions of older papers. Repeated entries come once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from datetime import datetime

import aiohttp

from bot.fetching.base import SourceFetch
from bot.fetching.client import Answer, Clock, FetchError, Pacer, Sleep
from bot.fetching.config import FetchConfig
from bot.fetching.pages import FetchPage, FetchResult, newest
from digests.sources.arxiv import ArxivPage, parse_arxiv_page
from digests.sources.records import FetchedPaper
from digests.sources.spec import SourceSpec

log = logging.getLogger(__name__)


class ArxivFetch(SourceFetch):
    """One fetch of an arXiv source (see the module doc)."""

    kind = "arxiv"
    label = "an arXiv source"

    def __init__(
        self,
        spec: SourceSpec,
        session: aiohttp.ClientSession,
        config: FetchConfig,
        *,
        since: datetime,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        pacer: Pacer | None = None,
    ) -> None:
        super().__init__(
            spec, session, config, delay=config.arxiv_delay, sleep=sleep, clock=clock, pacer=pacer
        )
        if not spec.query:
            raise ValueError(f"not an arXiv source: {spec.name}")
        if since.tzinfo is None:
            raise ValueError("since must be timezone-aware (UTC)")
        self.since = since

    def _parse(self, answer: Answer) -> ArxivPage:
        return parse_arxiv_page(answer.text(), source=self.spec.name)

    async def _pages(self) -> AsyncIterator[FetchPage]:
        result = FetchResult(self.spec.name)
        seen: set[str] = set()
        complete = False
        async for page in self._pass("submittedDate", result, seen):
            yield page
        complete = result.complete
        if complete and self.config.arxiv_revisions:
            # New versions of papers submitted before `since`: the submission-date order
            # never shows them, the last-updated order does.
            result.complete = False
            async for page in self._pass("lastUpdatedDate", result, seen):
                yield page
            complete = result.complete
        result.complete = complete
        result.requests = self.client.requests
        self.result = result
        log.debug("%s: %d papers in %d requests", self.spec.name, result.read, result.requests)

    async def _pass(
        self, sort_by: str, result: FetchResult, seen: set[str]
    ) -> AsyncIterator[FetchPage]:
        """One ordering, newest first, down to `since` (by submission or update date)."""
        url = self.config.arxiv_url.rstrip("/") + "/query"
        by_update = sort_by == "lastUpdatedDate"
        start, empty_tries = 0, 0
        assert self.spec.query is not None
        while True:
            if start >= self.config.max_results:
                result.notes.append(f"stopped at {start} results (the limit per fetch)")
                log.warning("%s: %s", self.spec.name, result.notes[-1])
                return
            params: dict[str, str | int] = {
                "search_query": self.spec.query,
                "start": start,
                "max_results": min(self.config.arxiv_page_size, self.config.max_results - start),
                "sortBy": sort_by,
                "sortOrder": "descending",
            }
            page = await self.client.request(url, self._parse, params=params)
            total = page.total
            if page.entries == 0:
                if total is not None and start < total:
                    if empty_tries < self.config.empty_page_retries:
                        empty_tries += 1
                        log.info(
                            "%s: arXiv answered zero entries at %d of %d; asking again",
                            self.spec.name, start, total,
                        )  # fmt: skip
                        continue
                    result.notes.append(f"arXiv kept answering zero entries at {start} of {total}")
                    log.warning("%s: %s", self.spec.name, result.notes[-1])
                    return
                result.complete = True
                return
            empty_tries = 0
            fresh = [p for p in page.papers if not _before(p, self.since, by_update)]
            reached = len(fresh) < len(page.papers)
            unseen = [p for p in fresh if p.arxiv_id not in seen]
            seen.update(p.arxiv_id for p in unseen if p.arxiv_id)
            if not by_update:
                result.cursor = newest(result.cursor, *(p.published for p in unseen))
            if unseen:
                result.read += len(unseen)
                result.pages += 1
                yield FetchPage(self.spec.name, result.pages - 1, unseen)
            start += page.entries
            if reached or (total is not None and start >= total):
                result.complete = True
                return


def _before(paper: FetchedPaper, since: datetime, by_update: bool) -> bool:
    moment = (paper.updated or paper.published) if by_update else paper.published
    return moment is not None and moment < since


__all__ = ["ArxivFetch", "FetchError"]
