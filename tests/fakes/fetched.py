"""Fetched papers (arXiv, OpenReview) stored the way the fetcher stores them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.fetching import FetchConfig
from bot.fetching.store import SourceFetcher
from db import open_db
from db import sources as source_store
from db.store import Store
from digests.ingest.fetched import prepare_page, store_page
from digests.sources.records import FetchedPaper
from digests.timestamps import stamp
from tests.fakes.arxiv_api import Entry
from tests.fakes.fetch_time import FakeTime

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


V1 = (
    "We propose MaxEntDP, an offline reinforcement learning method that regularises the "
    "policy with a maximum-entropy diffusion prior. On D4RL locomotion tasks it beats "
    "conservative Q-learning."
)


OR_ABSTRACT = V1.replace("beats", "outperforms")


TITLE = "MaxEntDP: Maximum-Entropy Diffusion Priors for Offline Reinforcement Learning"


def arxiv_paper(version: int, abstract: str, **extra: object) -> FetchedPaper:
    fields: dict[str, object] = {
        "source": "arxiv:cs.LG",
        "title": TITLE,
        "abstract": abstract,
        "authors": ["Ada Lovelace", "Bob Smith"],
        "affiliations": [["Analytical Engines Ltd"], []],
        "categories": ["cs.LG", "cs.AI"],
        "primary_category": "cs.LG",
        "published": NOW - timedelta(days=2),
        "updated": NOW - timedelta(days=2 - version + 1),
        "url": "https://arxiv.org/abs/2511.01234",
        "pdf_url": f"https://arxiv.org/pdf/2511.01234v{version}",
        "arxiv_id": "2511.01234",
        "arxiv_version": version,
        "comment": "12 pages",
    }
    fields.update(extra)
    return FetchedPaper(**fields)  # type: ignore[arg-type]


def openreview_paper() -> FetchedPaper:
    return FetchedPaper(
        source="openreview:ICLR.cc/2025/Conference",
        title="MaxEntDP: maximum-entropy diffusion priors for offline reinforcement learning.",
        abstract=OR_ABSTRACT,
        authors=["Ada Lovelace"],
        keywords=["offline RL", "diffusion"],
        published=NOW - timedelta(days=3),
        url="https://openreview.net/forum?id=abcXYZ",
        pdf_url="https://openreview.net/pdf/abcXYZ.pdf",
        venue="ICLR 2025 Poster",
        year=2025,
        tldr="A diffusion prior makes offline RL policies both safe and diverse.",
        openreview_id="abcXYZ",
        openreview_forum="abcXYZ",
    )


def store(db: Store, *found: FetchedPaper, now: datetime = NOW) -> tuple[int, int]:
    prepared, _ = prepare_page(list(found), now)
    summary = store_page(db, prepared, now)
    return summary.added, summary.merged


def entries(count: int) -> list[Entry]:
    return [
        Entry(
            arxiv_id=f"2511.{i:05d}",
            title=f"Paper number {i} about offline reinforcement learning",
            abstract=f"Abstract {i}: we study offline reinforcement learning, method {i}.",
            published=NOW - timedelta(hours=3 * i + 1),
        )
        for i in range(count)
    ]


def add(db: Store, name: str) -> None:
    from digests.sources.spec import parse_source

    spec = parse_source(name)
    source_store.add_source(
        db, {"name": spec.name, "kind": spec.kind, "value": spec.value, "added_at": stamp(NOW)}
    )


async def fetch(path: Path, config: FetchConfig, *names: str, clock: datetime = NOW) -> list:  # type: ignore[type-arg]
    time_ = FakeTime()
    fetcher = SourceFetcher(
        lambda: open_db(path), config, clock=lambda: clock, sleep=time_.sleep,
        monotonic=time_.clock,
    )  # fmt: skip
    return await fetcher.fetch(list(names) or None)
