"""A fetch from the fake arXiv on a fake clock."""

from __future__ import annotations

from datetime import datetime

import pytest

from bot.fetching import (
    ArxivFetch,
    FetchConfig,
    collect,
    open_session,
)
from digests.sources.spec import parse_source
from tests.fakes.fetch_time import FakeTime

SPEC = parse_source("arxiv:cs.LG")


@pytest.fixture
def time_() -> FakeTime:
    return FakeTime()


async def run(config: FetchConfig, time_: FakeTime, since: datetime, spec=SPEC):  # type: ignore[no-untyped-def]
    async with open_session(config) as session:
        fetch = ArxivFetch(spec, session, config, since=since, sleep=time_.sleep, clock=time_.clock)
        return await collect(fetch)
