"""`find` for a query that names a catalog topic ranks with the topic's model (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlite_utils import Database

from db.search import search_papers
from digests.ingest import ingest_files
from digests.lookup import catalog_topic, find
from tests.conftest import NOW

# Offline RL by the topic's own phrases ("batch reinforcement learning", "logged data",
# "conservative q-learning"), with the query's words once only.
ON_TOPIC = {
    "title": "Conservative Q-learning from logged data",
    "abstract": (
        "Batch reinforcement learning learns a policy from logged data without environment "
        "interaction. Conservative Q-learning lower-bounds values on pre-collected data; "
        "we test it in an offline benchmark."
    ),
}
# The query's words, many times, but not offline RL: online agents.
WORDY = {
    "title": "RL agents: RL for online RL games",
    "abstract": (
        "RL agents play online games. Our RL agent beats earlier RL agents, and RL "
        "training is online and fast. RL RL RL."
    ),
}


def _store(tmp_path: Path, fresh_db: Database, papers: list[dict[str, str]]) -> Database:
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(paper) + "\n" for paper in papers), encoding="utf-8")
    ingest_files(fresh_db, [path], now=NOW)
    return fresh_db


def test_a_query_naming_a_catalog_topic_ranks_by_the_topic(
    tmp_path: Path, fresh_db: Database
) -> None:
    db = _store(tmp_path, fresh_db, [ON_TOPIC, WORDY])
    on_topic, wordy = ON_TOPIC["title"], WORDY["title"]
    for query in ("offline RL", "offline-rl", "Offline rl"):
        # The words alone put the paper that repeats them first ...
        assert [hit.paper["title"] for hit in search_papers(db, query, 10)] == [wordy, on_topic]
        # ... the topic's name ranks by the topic.
        assert catalog_topic(query) is not None
        assert [r["title"] for r in find(db, query, 10)] == [on_topic, wordy], query


def test_other_queries_are_not_routed() -> None:
    assert catalog_topic("diffusion policy") is None
    assert catalog_topic("AlphaDPO") is None
    assert catalog_topic("") is None
    assert catalog_topic("continual learning and catastrophic forgetting") is not None
