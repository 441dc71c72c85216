"""A store made by the previous release (tests/db/data/previous-release.sql, made by
make_previous_release.py there) opened with today's code: the migrations keep every row,
its papers, channels, digests, votes and saved papers still work, and a second open
changes nothing."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlite_utils.migrations import Migrations

from config.settings import Settings
from db import connection, open_db
from db.channels import active_subscriptions
from db.feedback import counts
from db.lite import Database
from db.migrations import migrations
from db.saved import saved_papers
from db.store import Store
from digests.digest import build_digest
from digests.ingest import ingest_files
from digests.lookup import find, show
from digests.topics import Catalog
from tests.fakes.search_store import forget, write_papers

DUMP = Path(__file__).parent / "data" / "previous-release.sql"
# Tables a migration may append to; every other table keeps exactly its rows.
LOGS = {"_sqlite_migrations", "search_changes"}

Rows = dict[str, Counter[tuple[object, ...]]]


def load(path: Path) -> Path:
    """The dump loaded into a new database file at `path`, as the previous release left it."""
    conn = sqlite3.connect(path)
    conn.executescript(DUMP.read_text(encoding="utf-8"))
    conn.close()
    return path


def tables(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Each ordinary table and its columns; the FTS5 tables' own storage is left out (a
    migration may rebuild an index), but lookups below check the index answers."""
    virtual = [
        name
        for (name,) in conn.execute(
            "select name from sqlite_master where sql like 'CREATE VIRTUAL TABLE%'"
        )
    ]
    names = [
        name
        for (name,) in conn.execute(
            "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' "
            "and sql not like 'CREATE VIRTUAL TABLE%' order by name"
        )
        if not any(name.startswith(f"{v}_") for v in virtual)
    ]
    return {
        name: [row[1] for row in conn.execute(f'pragma table_info("{name}")')] for name in names
    }


def rows(path: Path, columns: dict[str, list[str]]) -> Rows:
    """Every row of each table in `columns`, those columns only, as the file holds them."""
    conn = sqlite3.connect(path)
    try:
        found = tables(conn)
        result = {}
        for name, wanted in columns.items():
            assert name in found, f"table {name} of the previous release is gone"
            gone = [column for column in wanted if column not in found[name]]
            assert not gone, f"columns {gone} of table {name} are gone"
            listed = ", ".join(f'"{column}"' for column in wanted)
            result[name] = Counter(conn.execute(f'select {listed} from "{name}"'))
        return result
    finally:
        conn.close()


def assert_rows_kept(old: Rows, new: Rows) -> None:
    """Every row of `old` is in `new`, unchanged, and no table but a log has more."""
    for name, before in old.items():
        lost = before - new[name]
        assert not lost, (
            f"table {name}: {sum(lost.values())} rows lost or changed, e.g. {next(iter(lost))}"
        )
        if name not in LOGS:
            assert sum(new[name].values()) == sum(before.values()), f"table {name} has new rows"


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return load(tmp_path / "paperboy.db")


@pytest.fixture
def old_columns(store: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(store)
    try:
        return tables(conn)
    finally:
        conn.close()


@pytest.fixture
def upgraded(store: Path) -> Iterator[Store]:
    db = open_db(store, create=False)
    yield db
    forget(db)
    db.close()


def built_at(db: Store, channel: str) -> datetime:
    """When the previous release built `channel`'s digest."""
    row = db.execute("select max(built_at) from digests where channel = ?", [channel]).fetchone()
    return datetime.fromisoformat(row[0])


def test_todays_migrations_begin_with_those_of_the_previous_release(store: Path) -> None:
    """Append-only: none of the migrations the old store had is renamed, removed or moved."""
    conn = sqlite3.connect(store)
    applied = [name for (name,) in conn.execute("select name from _sqlite_migrations order by id")]
    conn.close()
    assert "m014_subscription_history" in applied
    assert [m.name for m in migrations._migrations][: len(applied)] == applied


def test_every_row_of_the_previous_release_is_kept(
    store: Path, old_columns: dict[str, list[str]]
) -> None:
    old = rows(store, old_columns)
    assert sum(old["papers"].values()) == 40
    for name in ("channels", "subscriptions", "digests", "digest_items", "outbox", "feedback"):
        assert old[name], name  # the dump really has rows there
    assert old["saved"] and old["sources"] and old["paper_aliases"] and old["ingests"]
    db = open_db(store, create=False)
    assert not migrations.pending(db.sqlite)
    db.close()
    assert_rows_kept(old, rows(store, old_columns))


def test_a_migration_that_loses_a_row_is_caught(
    store: Path, old_columns: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a migration deleting one saved paper is reported."""
    lossy = Migrations("paperboy")
    for migration in migrations._migrations:
        lossy(name=migration.name)(migration.fn)

    @lossy(name="m999_lossy")
    def _lose(db: Database) -> None:
        db.execute("delete from saved where \"user\" = 'local:carol'")

    monkeypatch.setattr(connection, "migrations", lossy)
    old = rows(store, old_columns)
    open_db(store, create=False).close()
    with pytest.raises(AssertionError, match="table saved: 1 rows lost"):
        assert_rows_kept(old, rows(store, old_columns))


def test_lookups_find_the_old_papers(upgraded: Store) -> None:
    tidal = "Tidal Offline Reinforcement Learning for Harbour Cranes"
    assert find(upgraded, "TidalQ")[0]["title"] == tidal
    assert find(upgraded, "alpha dpo")[0]["title"].startswith("AlphaDPO")
    by_arxiv = show(upgraded, "arXiv:2611.01234")
    assert by_arxiv is not None and by_arxiv["title"] == "SoloPO"
    by_openreview = show(upgraded, "Xy12AbCdEf")
    assert by_openreview is not None and by_openreview["title"] == tidal


def test_authors_a_later_record_brings_are_found(upgraded: Store, tmp_path: Path) -> None:
    """Today's migrations make a change of authors reach the search index (the previous
    release's trigger did not watch them), so a paper it stored is found by its authors
    once a later record names them."""
    tidal = "Tidal Offline Reinforcement Learning for Harbour Cranes"
    assert find(upgraded, "TidalQ")[0]["title"] == tidal  # the index, built and current
    assert find(upgraded, "Bram Okonkwo") == []
    (abstract,) = upgraded.execute(
        "select abstract from papers where title = ?", [tidal]
    ).fetchone()
    later = tmp_path / "later.jsonl"
    later.write_text(
        json.dumps({"title": tidal, "abstract": abstract, "authors": ["Bram Okonkwo"]}) + "\n",
        encoding="utf-8",
    )
    ingest_files(upgraded, [later], now=built_at(upgraded, "local:lab") + timedelta(days=1))
    assert [paper["title"] for paper in find(upgraded, "Bram Okonkwo")] == [tidal]


def test_subscriptions_votes_and_saved_papers_are_the_same(upgraded: Store, run) -> None:  # type: ignore[no-untyped-def]
    lab = [
        (row["topic_id"], row["custom_text"]) for row in active_subscriptions(upgraded, "local:lab")
    ]
    assert lab == [
        ("offline-rl", None),
        (
            "custom:diffusion-policies-for-robot-manipulation",
            "diffusion policies for robot manipulation",
        ),
    ]
    reading = [row["topic_id"] for row in active_subscriptions(upgraded, "local:reading")]
    assert reading == ["llm-reasoning-agents"]
    assert len(saved_papers(upgraded, "local:alice")) == 1
    voted = [
        row[0]
        for row in upgraded.execute("select paper_id from feedback where channel = 'local:lab'")
    ]
    assert sorted(counts(upgraded, "local:lab", voted).values()) == [(0, 1), (1, 0)]
    db_file = str(connection.database_file(upgraded))
    listed = run("--db", db_file, "chat", "--channel", "local:lab", "list")
    assert listed.exit_code == 0
    assert "#1 offline-rl Offline RL" in listed.output
    assert '#2 "diffusion policies for robot manipulation"' in listed.output
    assert "Mondays at 09:00 (Europe/Berlin)" in listed.output


NEW_PAPERS = [
    (
        "new-offline",
        "Pessimistic value learning for offline reinforcement learning",
        "Offline reinforcement learning learns a policy from a fixed dataset without "
        "interaction. We propose a conservative Q-learning method that penalises "
        "out-of-distribution actions and handles distribution shift on D4RL benchmarks.",
    ),
    (
        "new-agents",
        "Planning with large language model agents",
        "Large language model agents solve multi-step tasks by reasoning. We propose a "
        "chain-of-thought planner for LLM agents with tool use that improves reasoning on "
        "math and web-agent benchmarks.",
    ),
]


def test_digests_of_the_old_channels_build(
    upgraded: Store, catalog: Catalog, settings: Settings, tmp_path: Path
) -> None:
    """The digest the previous release recorded is this period's still; the next ones
    bring a paper stored since, and repeat none the previous release sent."""
    week = built_at(upgraded, "local:lab")
    recorded = build_digest(
        upgraded, "local:lab", week + timedelta(hours=1), catalog=catalog, settings=settings
    )
    assert recorded.digest_id == 1 and recorded.week == "2026-W49"
    assert sorted(item.paper["id"] for item in recorded.items) == sorted(sent(upgraded, 1))

    ingest_files(upgraded, [write_papers(tmp_path, *NEW_PAPERS)], now=week + timedelta(hours=2))
    for channel, digest_id, later, title in [
        ("local:lab", 1, week + timedelta(days=7), NEW_PAPERS[0][1]),
        (
            "local:reading",
            2,
            built_at(upgraded, "local:reading") + timedelta(days=1),
            NEW_PAPERS[1][1],
        ),
    ]:
        digest = build_digest(upgraded, channel, later, catalog=catalog, settings=settings)
        assert digest.recorded and digest.digest_id not in (None, 1, 2)
        assert title in [item.paper["title"] for item in digest.items], channel
        assert not {item.paper["id"] for item in digest.items} & set(sent(upgraded, digest_id))


def sent(db: Store, digest_id: int) -> list[str]:
    """The papers of the digest `digest_id`."""
    query = "select paper_id from digest_items where digest_id = ?"
    return [row[0] for row in db.execute(query, [digest_id])]


def test_a_second_open_changes_nothing(store: Path) -> None:
    open_db(store, create=False).close()
    first = dump(store)
    db = open_db(store, create=False)
    assert not migrations.pending(db.sqlite)
    db.close()
    assert dump(store) == first
