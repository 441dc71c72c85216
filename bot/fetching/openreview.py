"""Fetching an OpenReview venue from API v2, page by page.

`OpenReviewFetch(spec, session, config)` is an async iterable of `FetchPage`s, requests
`config.openreview_delay` apart until `offset` reaches the answer's `count`; an empty page
before that is asked again (`config.empty_page_retries`), then the fetch is incomplete. The
whole venue is read every time; `result.cursor` (newest modification) is informational.
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
from digests.sources.openreview import OpenReviewPage, parse_openreview_page
from digests.sources.spec import SourceSpec

log = logging.getLogger(__name__)


class OpenReviewFetch(SourceFetch):
    """One fetch of an OpenReview venue (see the module doc)."""

    kind = "openreview"
    label = "an OpenReview source"

    def __init__(
        self,
        spec: SourceSpec,
        session: aiohttp.ClientSession,
        config: FetchConfig,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        pacer: Pacer | None = None,
    ) -> None:
        super().__init__(
            spec,
            session,
            config,
            delay=config.openreview_delay,
            sleep=sleep,
            clock=clock,
            pacer=pacer,
        )

    def _parse(self, answer: Answer) -> OpenReviewPage:
        return parse_openreview_page(
            answer.body, source=self.spec.name, site=self.config.openreview_site
        )

    async def _pages(self) -> AsyncIterator[FetchPage]:
        result = FetchResult(self.spec.name)
        url = self.config.openreview_url.rstrip("/") + "/notes"
        offset, empty_tries = 0, 0
        while True:
            if offset >= self.config.max_results:
                result.notes.append(f"stopped at {offset} notes (the limit per fetch)")
                log.warning("%s: %s", self.spec.name, result.notes[-1])
                break
            params: dict[str, str | int] = {
                "content.venueid": self.spec.value,
                "limit": self.config.openreview_page_size,
                "offset": offset,
            }
            page = await self.client.request(url, self._parse, params=params)
            if page.notes == 0:
                if offset < page.count and empty_tries < self.config.empty_page_retries:
                    empty_tries += 1
                    continue
                if offset < page.count:
                    result.notes.append(
                        f"OpenReview kept answering no notes at {offset} of {page.count}"
                    )
                    log.warning("%s: %s", self.spec.name, result.notes[-1])
                else:
                    result.complete = True
                break
            empty_tries = 0
            result.cursor = newest(result.cursor, *(p.updated or p.published for p in page.papers))
            if page.papers:
                result.read += len(page.papers)
                result.pages += 1
                yield FetchPage(self.spec.name, result.pages - 1, page.papers)
            offset += page.notes
            if offset >= page.count:
                result.complete = True
                break
        result.requests = self.client.requests
        self.result = result
