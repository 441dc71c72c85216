"""Review of the digest at scale (issue 11): caches that must never serve stale text, and
the scorer for many topics against the reference `score` on generated text."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from bench.digest import naive_items
from config.settings import Settings
from db import open_db
from digests.digest import build_digest
from digests.ingest import ingest_files
from digests.matching import PaperText
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW
from tests.test_digest_scale import follow, picks

OFFLINE = "Offline reinforcement learning from logged data, offline RL. " * 3


def test_a_text_is_not_taken_from_another_paper_with_the_same_id_and_stamp() -> None:
    """Two databases in one process (a copy, a test, the bench) hold one id with one
    `updated_at` and other text; and two merges in one ingest keep the ingest's stamp."""
    paper = {"id": "p1", "updated_at": "2026-11-30T08:00:00Z", "title": "Graphs"}
    first = PaperText.of({**paper, "abstract": "Graph neural networks.", "keywords": []})
    second = PaperText.of({**paper, "abstract": OFFLINE, "keywords": ["offline RL"]})
    assert "graph" in first.abstract and "offline" not in first.abstract
    assert "offline" in second.abstract and "offline rl" in second.keywords
    # ... and the cache still serves the unchanged text
    assert PaperText.of({**paper, "abstract": OFFLINE, "keywords": ["offline RL"]}) is second


def merge_in_place(db: Database, paper_id: str, abstract: str) -> None:
    """A merge as an ingest running with one clock makes it: new text, same updated_at
    (the paper's stamp is that of an earlier merge in the same run)."""
    db.execute(
        "update papers set abstract = ?, abstract_text = ? where id = ?",
        [abstract, abstract, paper_id],
    )


def test_a_kept_window_sees_a_merge_that_kept_the_papers_stamp(
    tmp_path: Path, seed_paths: list[Any], catalog: Catalog, settings: Settings
) -> None:
    db = open_db(tmp_path / "papers.db")
    ingest_files(db, seed_paths, now=NOW - timedelta(days=60))
    ids = [str(row["id"]) for row in db.query("select id from papers order by id")]
    db.execute(
        "update papers set added_at = ?, updated_at = ?",
        [stamp(NOW - timedelta(days=2)), stamp(NOW - timedelta(days=2))],
    )
    settings = replace(settings, digest_size=99)
    for channel in ("local:a", "local:b"):
        follow(db, settings, channel, "offline-rl")
    first = build_digest(db, "local:a", NOW, catalog=catalog, settings=settings)
    outside = next(i for i in ids if i not in {p for p, _ in picks(first)})
    merge_in_place(db, outside, OFFLINE)
    expected = naive_items(db, "local:b", NOW, catalog, settings)
    assert outside in {p for p, _ in expected}
    assert picks(build_digest(db, "local:b", NOW, catalog=catalog, settings=settings)) == expected
