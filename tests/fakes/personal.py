"""Personal digests through the fake Slack and Discord: a clock, services, the --me forms."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.services import Services
from db.channels import active_subscriptions
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import Clock
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    make_services,
    signed_headers,
    slash_body,
)

DISCORD_USER = "500000000000000000"  # the member of tests.fakes.discord_interactions.interaction


DISCORD_ME = f"discord:@{DISCORD_USER}"


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack, clock: Clock
) -> Services:
    """Slack settings on the fake; papers stored 30 days before NOW, and a first digest
    that looks back 60 days, so the first digest finds them new (as tests/bot/test_scheduler.py)."""
    return make_services(
        tmp_path,
        seed_paths,
        catalog,
        fake_slack,
        stored_at=NOW - timedelta(days=30),
        clock=clock,
        PAPERBOY_SLACK_MANAGERS="admins",
        PAPERBOY_FIRST_DIGEST_DAYS="60",
    )


def topics_of(services: Services, channel: str) -> list[str]:
    return [row["topic_id"] for row in active_subscriptions(services.db(), channel)]


async def post(
    http: Any, fake: FakeSlack, text: str, user: str = "U0001", *, channel: str = "C0001"
) -> dict[str, Any]:
    """`/papers TEXT` by `user` in Slack channel `channel`, over the HTTP endpoint: the
    acknowledgement's JSON."""
    body = slash_body(text, fake.response_url(), user=user, channel=channel)
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 200
    answer: dict[str, Any] = json.loads(await response.text())
    return answer


def with_me(payload: dict[str, Any]) -> dict[str, Any]:
    """The interaction with the boolean option `me: True` (type 5, as Discord sends it)."""
    payload["data"]["options"][0]["options"].append({"name": "me", "type": 5, "value": True})
    return payload
