"""`find` for a query that names a catalog topic ranks with the topic's model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from config.settings import Settings
from db.search import Hit, search_papers
from db.store import Store
from digests import lookup
from digests.commands import Context, handle
from digests.ingest import ingest_files
from digests.lookup import catalog_topic, find
from digests.matching import Term
from digests.topics import Catalog, Topic
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


def _store(tmp_path: Path, fresh_db: Store, papers: list[dict[str, str]]) -> Store:
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(paper) + "\n" for paper in papers), encoding="utf-8")
    ingest_files(fresh_db, [path], now=NOW)
    return fresh_db


def test_a_query_naming_a_catalog_topic_ranks_by_the_topic(tmp_path: Path, fresh_db: Store) -> None:
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


# A catalog of the caller's own (not the bundled one): its topic "Widget control" is known
# by its terms ("gear torque"), which the query's words do not contain.
WIDGET_ON_TOPIC = {
    "title": "Gear torque estimation for widget control",
    "abstract": "We estimate gear torque from motor current. Gear torque drives the plan.",
}
WIDGET_WORDY = {
    "title": "Widget control, widget control and widget control",
    "abstract": "Widget control for widget control: a widget control survey of widget control.",
}


def _widget_catalog() -> Catalog:
    topic = Topic(
        id="widget-control",
        label="Widget control",
        description="Controlling widgets.",
        terms=(Term.of("gear torque", 3.0),),
    )
    return Catalog(topics=(topic,), threshold=4.05)


def test_find_routes_by_the_callers_catalog(
    tmp_path: Path, fresh_db: Store, settings: Settings
) -> None:
    db = _store(tmp_path, fresh_db, [WIDGET_ON_TOPIC, WIDGET_WORDY])
    catalog = _widget_catalog()
    on_topic, wordy = WIDGET_ON_TOPIC["title"], WIDGET_WORDY["title"]
    assert catalog_topic("widget control") is None  # not a bundled topic
    assert [r["title"] for r in find(db, "widget control", 10)] == [wordy, on_topic]
    assert [r["title"] for r in find(db, "widget control", 10, catalog)] == [on_topic, wordy]
    # A command ranks with its context's catalog (what `paperboy run` loaded).
    reply = handle("find widget control", Context(db, "slack:T1/C1", "@a", NOW, settings, catalog))
    assert [paper["title"] for paper in reply.papers] == [on_topic, wordy]


def test_find_keeps_at_most_limit_on_the_routed_path(tmp_path: Path, fresh_db: Store) -> None:
    db = _store(tmp_path, fresh_db, [ON_TOPIC, WORDY])
    assert catalog_topic("offline RL") is not None
    assert find(db, "offline RL", 1) == find(db, "offline RL", 10)[:1]
    for limit in (0, -1, -5):
        assert find(db, "offline RL", limit) == [], limit


def test_a_routed_find_reads_a_few_times_its_limit(
    tmp_path: Path, fresh_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading and scoring the hits is a routed find's cost: at 100 hits for a command's
    10, `/papers find` p99 at 1M papers goes past the 300 ms goal (docs/dev/relevance.md
    "Routed find"); 30 keeps Set A's top 10 as precise."""
    db = _store(tmp_path, fresh_db, [ON_TOPIC, WORDY])
    asked: list[int] = []

    def spy(db: Store, query: str, limit: int = 10, exclude: Sequence[str] = ()) -> list[Hit]:
        asked.append(limit)
        return search_papers(db, query, limit, exclude)

    monkeypatch.setattr(lookup, "search_papers", spy)
    assert [r["title"] for r in find(db, "offline RL", 10)] == [ON_TOPIC["title"], WORDY["title"]]
    find(db, "offline RL", 50)
    find(db, "conservative", 10)  # not routed: exactly its limit
    assert asked == [30, 50, 10]
