"""Storing fetched pages (issue 10): enrichment and write-lock time per 1,000 papers.

    .venv/bin/python -m bench.fetch_store

Stores 1,000 synthetic OpenReview-like papers into a new database (all new), then the
same 1,000 again (all known: each one matched and merged into itself, nothing written).
Enrichment runs outside the write transaction; "store" is the time the lock is held.
"""

from __future__ import annotations

import logging
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from db import open_db
from digests.ingest.fetched import prepare_page, store_page
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
            prepared, _ = prepare_page(page, now)
            enriched = time.perf_counter()
            summary = store_page(db, prepared, now)
            stored = time.perf_counter()
            print(
                f"1,000 {label} papers: enrich {enriched - started:.2f} s, "
                f"store (write lock) {stored - enriched:.2f} s; "
                f"{summary.added} added, {summary.merged} merged, {summary.skipped} unchanged"
            )


if __name__ == "__main__":
    main()
