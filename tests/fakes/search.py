"""Waiting for the lookup index to catch up."""

from __future__ import annotations

from db.search import search_papers
from db.store import Store


def settle(db: Store) -> None:
    """Index `db`, then look up once more: its index is now remembered as current."""
    search_papers(db, "LoMAP", 1)  # builds the index (the watermark file moves)
    search_papers(db, "LoMAP", 1)  # the full check once more, then remembered
