"""What the three fetchers share: checking the source's kind, the polite client (one
per fetch, spaced through the shared `Pacer`), and iteration over `_pages()`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import ClassVar

import aiohttp

from bot.fetching.client import Clock, Pacer, PoliteClient, Sleep
from bot.fetching.config import FetchConfig
from bot.fetching.pages import FetchPage, FetchResult
from digests.sources.spec import SourceSpec

log = logging.getLogger(__name__)


class SourceFetch:
    """One fetch of one source: an async iterable of `FetchPage`s whose `result` is set
    once the pages are exhausted. Subclasses set `kind` and `label` and write `_pages()`."""

    kind: ClassVar[str]
    label: ClassVar[str]  # "an arXiv source", for the error of a wrong spec

    def __init__(
        self,
        spec: SourceSpec,
        session: aiohttp.ClientSession,
        config: FetchConfig,
        *,
        delay: float,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        pacer: Pacer | None = None,
    ) -> None:
        if spec.kind != self.kind:
            raise ValueError(f"not {self.label}: {spec.name}")
        self.spec = spec
        self.config = config
        self.client = PoliteClient(
            session, config, source=spec.name, delay=delay, sleep=sleep, clock=clock, pacer=pacer
        )
        self.result: FetchResult | None = None

    def __aiter__(self) -> AsyncIterator[FetchPage]:
        return self._pages()

    def _pages(self) -> AsyncIterator[FetchPage]:
        raise NotImplementedError
