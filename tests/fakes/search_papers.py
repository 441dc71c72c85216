"""A store of real papers that `find` once ranked wrongly: DPO behind AlphaDPO, IQL and
IDQL, several by Sergey Levine, and diffusion policies to leave out."""

from __future__ import annotations

import json
from pathlib import Path

from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW

PAPERS = Path(__file__).with_name("search_papers.jsonl")
BY_LEVINE = {"2110.06169", "2304.10573", "2006.04779", "2005.01643"}  # arXiv ids


def search_store(db: Store, *more: Path) -> Store:
    """`db` with the papers of search_papers.jsonl, and the files `more`."""
    ingest_files(db, [PAPERS, *more], now=NOW)
    return db


def arxiv_ids(results: list[dict[str, object]]) -> list[str]:
    """The arXiv ids of `find` results, in order (by title; "" for another paper)."""
    lines = PAPERS.read_text(encoding="utf-8").splitlines()
    ids = {paper["title"]: paper["id"] for paper in map(json.loads, lines)}
    return [ids.get(str(result["title"]), "") for result in results]
