"""A Slack channel subscribed and its digest sent through the fake Web API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.send import send_digest
from bot.services import Services
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from db import open_db
from db.channels import add_subscription
from digests.digest import ensure_channel
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import FakeTime
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    make_services,
)

CHANNEL = "slack:T0001/C0001"


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


def poster_for(fake: FakeSlack, clock: FakeTime) -> SlackPoster:
    client = make_client(BOT_TOKEN, fake.api_url, sleep=clock.sleep)
    return SlackPoster(client, monotonic=clock.monotonic, sleep=clock.sleep)


@pytest.fixture
def services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> Services:
    return make_services(tmp_path, seed_paths, catalog, fake_slack)


async def send(services: Services, fake: FakeSlack, clock: FakeTime, settings: Any = None) -> Any:
    """Build, queue and deliver this week's digest for CHANNEL through the fake API."""
    return await send_to(services, fake, clock, CHANNEL, settings)


async def send_to(
    services: Services, fake: FakeSlack, clock: FakeTime, channel: str, settings: Any = None
) -> Any:
    return await send_digest(
        open_db(services.db_path),
        poster_for(fake, clock),
        channel,
        NOW,
        catalog=services.catalog,
        settings=settings or services.settings,
    )


def follow(services: Services, *topics: str, channel: str = CHANNEL) -> None:
    db = open_db(services.db_path)
    ensure_channel(db, channel, services.settings, NOW)
    for topic in topics:
        add_subscription(db, channel, topic, None, "test", NOW.isoformat())
