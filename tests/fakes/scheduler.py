"""The scheduler on a fake clock: services, fire times, what the local transport wrote."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.services import Services
from config.settings import load_settings
from db import open_db
from digests.ingest import ingest_files
from digests.schedule import Schedule
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import Clock

UTC_ZONE = ZoneInfo("UTC")


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def services(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock) -> Services:
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW - timedelta(days=30))
    # The papers were stored 30 days before NOW: a first digest looking back 60 days finds
    # them new, as these tests expect.
    settings = load_settings(
        {"PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox"), "PAPERBOY_FIRST_DIGEST_DAYS": "60"},
        dotenv=None,
    )
    return Services(db_path, settings, catalog, clock=clock)


def local_lines(services: Services, name: str) -> list[dict[str, Any]]:
    path = services.settings.local_dir / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def fires(schedule: Schedule, start: datetime, count: int) -> list[datetime]:
    trigger, moment, found = schedule.trigger(), start, []
    previous = None
    for _ in range(count):
        previous = trigger.get_next_fire_time(previous, moment)
        found.append(previous.astimezone(UTC_ZONE))
        moment = previous.astimezone(UTC_ZONE) + timedelta(seconds=1)
    return found
