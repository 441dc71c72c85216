"""Storing fetched pages: enrichment and write-lock time per 1,000 papers.

    .venv/bin/python -m bench.fetch_store

Stores 1,000 synthetic OpenReview-like papers into a new database (all new), then the
same 1,000 again (all known, as when a venue is read again: the fetcher skips content it
stored already, `known_unchanged`, before enrichment). Enrichment runs outside the write
transaction; "store" is the time the write lock is held.
"""

from __future__ import annotations

import logging
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from db import open_db
from digests.ingest.fetched import known_unchanged, prepare_page, store_page
from digests.sources.records import FetchedPaper

log = logging.getLogger(__name__)

WORDS = [
    "offline",
    "reinforcement",
    "learning",
    "policy",
    "diffusion",
    "model",
    "agent",
    "reward",
    "value",
    "function",
    "transformer",
    "language",
    "vision",
    "robot",
    "planning",
]


def papers(count: int, now: datetime) -> list[FetchedPaper]:
    rng = random.Random(1)
    return [
        FetchedPaper(
            source="openreview:X",
            title=f"{rng.choice(WORDS).title()}Net: " + " ".join(rng.choices(WORDS, k=8)),
            abstract=" ".join(rng.choices(WORDS, k=180)) + f" We propose Method{i}.",
            authors=[f"Author {rng.randint(1, 5000)}" for _ in range(4)],
            openreview_id=f"n{i}",
            venue="ICLR 2025 Poster",
            year=2025,
            tldr="Short tldr.",
            published=now - timedelta(days=30),
        )
        for i in range(count)
    ]


def main() -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    page = papers(1000, now)
    with tempfile.TemporaryDirectory() as folder:
        db = open_db(Path(folder) / "bench.db")
        for label in ("new", "known"):
            started = time.perf_counter()
            fresh = [paper for paper in page if not known_unchanged(db, paper)]
            prepared, _ = prepare_page(fresh, now)
            enriched = time.perf_counter()
            summary = store_page(db, prepared, now)
            stored = time.perf_counter()
            print(
                f"1,000 {label} papers: check and enrich {enriched - started:.2f} s, "
                f"store (write lock) {stored - enriched:.2f} s; "
                f"{summary.added} added, {summary.merged} merged, "
                f"{len(page) - len(fresh)} skipped unread"
            )


if __name__ == "__main__":
    main()
