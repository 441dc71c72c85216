"""Many channels due at once through the scheduler."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.scheduler import DigestScheduler
from bot.services import Services
from config.settings import load_settings
from db import open_db
from digests.commands import handle
from digests.ingest import ingest_files
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import Clock

DUE = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)  # Monday 09:00: every channel is due


TOPICS = [
    "robotics",
    "offline-rl",
    "diffusion-models",
    "graph-neural-networks",
    "meta-learning",
    "computer-vision",
    '"diffusion policy"',
    '"graph neural networks"',
    '"contrastive learning"',
]


CHANNELS = [f"local:team{i:02d}" for i in range(50)]


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def services(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock) -> Services:
    """50 weekly channels due Monday 09:00, with 1 to 3 topics each (catalog and free
    text, shared and not), a few with the backlog on, over the seed papers."""
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW - timedelta(days=30))
    settings = load_settings(
        {"PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox"), "PAPERBOY_FIRST_DIGEST_DAYS": "60"},
        dotenv=None,
    )
    services = Services(db_path, settings, catalog, clock=clock)
    for index, channel in enumerate(CHANNELS):
        for offset in range(1 + index % 3):
            command(services, channel, f"subscribe {TOPICS[(index + 4 * offset) % len(TOPICS)]}")
        command(services, channel, "schedule monday 09:00 UTC")
        if index % 7 == 0:
            command(services, channel, "backlog on")
    return services


def command(services: Services, channel: str, text: str) -> None:
    reply = handle(text, services.context(channel, "tester"))
    assert not reply.error, reply.text


async def fire_all(scheduler: DigestScheduler) -> None:
    """As APScheduler does at 09:00: every due channel's job started at once."""
    await asyncio.gather(*(scheduler._fire(channel) for channel in CHANNELS))
