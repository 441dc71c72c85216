"""A store file on disk for the lookup-index tests."""

from __future__ import annotations

from pathlib import Path

from db import text_index
from db.search import search_papers
from db.store import Store
from tests.conftest import SAMPLES

SEEDS = [SAMPLES / "icml2025.txt", SAMPLES / "iclr2025.txt"]


def write_papers(folder: Path, *papers: tuple[str, str, str]) -> Path:
    """A JSONL file of (id, title, abstract) papers."""
    import json

    path = folder / f"papers-{papers[0][0]}.jsonl"
    lines = [
        json.dumps({"id": i, "title": t, "abstract": a, "venue": "X", "year": 2026})
        for i, t, a in papers
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def titles(db: Store, query: str, limit: int = 10) -> list[str]:
    return [hit.paper["title"] for hit in search_papers(db, query, limit)]


def forget(db: Store) -> None:
    """What a new process sees: no index open in memory."""
    text_index._open.clear()
    text_index._memory.pop(db, None)


def db_path(db: Store) -> Path:
    return Path(str(db.execute("pragma database_list").fetchone()[2]))
