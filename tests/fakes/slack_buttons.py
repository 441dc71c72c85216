"""Signed Slack button clicks through the HTTP endpoint and the fake Web API."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.services import Services
from bot.slack import actions as slack_actions
from bot.slack.client import make_client
from db import open_db
from db.channels import add_subscription
from digests.digest import Digest, build_digest, ensure_channel
from digests.render import slack as slack_render
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    HttpClient,
    make_services,
    signed_headers,
    start_http,
)
from tests.fakes.waiting import eventually

TEAM, CHANNEL_ID = "T0001", "C0001"


CHANNEL = f"slack:{TEAM}/{CHANNEL_ID}"


def record_digest(services: Services, channel: str = CHANNEL, topic: str = "offline-rl") -> Digest:
    db = open_db(services.db_path)
    ensure_channel(db, channel, services.settings, NOW)
    add_subscription(db, channel, topic, None, "test", NOW.isoformat())
    digest = build_digest(db, channel, NOW, catalog=services.catalog, settings=services.settings)
    assert digest.recorded and digest.digest_id is not None and len(digest.items) >= 2
    return digest


async def post_digest(fake: FakeSlack, digest: Digest, channel_id: str = CHANNEL_ID) -> str:
    """The digest's first message, posted with the real client; its ts."""
    message = slack_render.digest_messages(digest)[0]
    client = make_client(BOT_TOKEN, fake.api_url)
    posted = await client.chat_postMessage(channel=channel_id, **message.payload())
    return str(posted["ts"])


def item_blocks(fake: FakeSlack, ts: str, channel_id: str = CHANNEL_ID) -> list[dict[str, Any]]:
    blocks = fake.messages[(channel_id, ts)]["blocks"]
    return [b for b in blocks if b["type"] == "actions"]


def click_payload(
    fake: FakeSlack,
    ts: str,
    action_id: str,
    item: int = 0,
    *,
    user: str = "U0001",
    channel_id: str = CHANNEL_ID,
    value: str | None = None,
    response: str = "click",
) -> dict[str, Any]:
    """A `block_actions` payload as Slack sends it for a click on the message's item."""
    message = fake.messages[(channel_id, ts)]
    block = item_blocks(fake, ts, channel_id)[item]
    button = next(e for e in block["elements"] if e["action_id"] == action_id)
    action = {
        "action_id": action_id,
        "block_id": block["block_id"],
        "text": button["text"],
        "type": "button",
        "action_ts": "1764480000.123456",
    }
    if "url" in button:
        action["url"] = button["url"]
    else:
        action["value"] = button["value"] if value is None else value
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": channel_id,
            "is_ephemeral": False,
        },
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": TEAM, "domain": "lab"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel_id, "name": "papers"},
        "message": {
            "type": "message",
            "subtype": "bot_message",
            "user": "UBOT",
            "bot_id": "B0001",
            "ts": ts,
            "text": message["text"],
            "blocks": message["blocks"],
        },
        "state": {"values": {}},
        "response_url": fake.response_url(response),
        "actions": [action],
    }


def form(payload: dict[str, Any] | str) -> str:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return urlencode({"payload": text})


async def click(http: HttpClient, payload: dict[str, Any] | str) -> int:
    body = form(payload)
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    return response.status


def paper_of(block: dict[str, Any]) -> str:
    return str(slack_render.item_paper(block["block_id"]))


def votes(services: Services) -> list[tuple[str, str, int]]:
    db = open_db(services.db_path)
    return [
        (str(r["paper_id"]), str(r["user"]), int(r["vote"]))
        for r in db.query('select paper_id, "user", vote from feedback order by id')
    ]


def updates(fake: FakeSlack) -> list[dict[str, Any]]:
    return fake.posted("chat.update")


@pytest.fixture
async def env(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack):  # type: ignore[no-untyped-def]
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    http = await start_http(services, fake_slack)
    digest = record_digest(services)
    ts = await post_digest(fake_slack, digest)
    yield services, http, digest, ts
    await http.close()


Env = tuple[Services, HttpClient, Digest, str]


async def settle(http: HttpClient) -> None:
    """Wait for the clicks acknowledged so far to finish (the endpoint's background work)."""
    assert await eventually(lambda: not http.endpoint._followups)


def hold_apply(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every click's `apply_action`, in its thread, until the returned event is set."""
    release = threading.Event()
    real = slack_actions.apply_action

    def held(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(slack_actions, "apply_action", held)
    return release


def ephemeral_click(
    fake: FakeSlack, blocks: list[dict[str, Any]], action_id: str, *, with_message: bool
) -> tuple[dict[str, Any], str]:
    """A click on an item's button in an ephemeral message (a command's reply), as Slack
    sends it: the container says is_ephemeral and, in Slack's payloads for ephemeral
    messages, there is no `message` (`with_message` covers a payload that has one)."""
    block = next(b for b in blocks if b["type"] == "actions")
    button = next(e for e in block["elements"] if e["action_id"] == action_id)
    ts = "1764480001.000200"
    payload = {
        "type": "block_actions",
        "user": {"id": "U0001", "username": "u0001", "team_id": TEAM},
        "api_app_id": "A0001",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": CHANNEL_ID,
            "is_ephemeral": True,
        },
        "team": {"id": TEAM, "domain": "lab"},
        "channel": {"id": CHANNEL_ID, "name": "papers"},
        "response_url": fake.response_url("eph"),
        "actions": [
            {
                "action_id": action_id,
                "block_id": block["block_id"],
                "value": button["value"],
                "type": "button",
                "action_ts": "1764480002.000300",
            }
        ],
    }
    if with_message:
        payload["message"] = {"type": "message", "ts": ts, "text": "digest", "blocks": blocks}
    return payload, paper_of(block)
