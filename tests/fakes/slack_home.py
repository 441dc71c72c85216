"""The Slack App Home: signed events and clicks, and what the fake Web API published."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_sdk.models.blocks import Block

from bot.services import Services
from bot.slack import home
from db import home as home_store
from db import open_db
from db.channels import add_subscription
from db.digests import insert_digest
from db.saved import save
from digests.digest import ensure_channel
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    HttpClient,
    make_services,
    signed_headers,
    start_http,
)

TEAM = "T0001"


ME = "U0001"


OTHER = "U0002"


MINE = f"slack:{TEAM}/@{ME}"


THEIRS = f"slack:{TEAM}/@{OTHER}"


AT = stamp(NOW)


def home_opened(user: str = ME, tab: str = "home", team: str = TEAM) -> dict[str, Any]:
    """An Events API callback as Slack sends it when a user opens the app's Home tab."""
    return {
        "token": "legacy-verification-token",
        "team_id": team,
        "api_app_id": "A0001",
        "event": {
            "type": "app_home_opened",
            "user": user,
            "channel": "D0001",
            "tab": tab,
            "event_ts": "1764493200.000100",
        },
        "type": "event_callback",
        "event_id": "Ev0001HOME",
        "event_time": 1764493200,
        "authorizations": [{"team_id": team, "user_id": "UBOT", "is_bot": True}],
    }


def home_opened_envelope(user: str = ME, envelope_id: str = "") -> dict[str, Any]:
    """`home_opened` as Socket Mode delivers it: an events_api envelope (a fresh id
    unless given)."""
    return {
        "envelope_id": envelope_id or str(uuid.uuid4()),
        "type": "events_api",
        "accepts_response_payload": False,
        "retry_attempt": 0,
        "retry_reason": "",
        "payload": home_opened(user),
    }


def home_click(action_id: str, value: str, user: str = ME) -> dict[str, Any]:
    """A block_actions payload for a button on the Home view (no response_url: a view)."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": "alice", "name": "alice", "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "legacy-verification-token",
        "container": {"type": "view", "view_id": "V00000001"},
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": TEAM, "domain": "lab"},
        "view": {"id": "V00000001", "type": "home", "blocks": []},
        "actions": [
            {
                "action_id": action_id,
                "block_id": "b1",
                "value": value,
                "type": "button",
                "action_ts": "1764493300.000200",
                "text": {"type": "plain_text", "text": "Unsave"},
            }
        ],
    }


def json_headers(body: str) -> dict[str, str]:
    return {**signed_headers(body), "Content-Type": "application/json"}


async def post_event(http: HttpClient, event: dict[str, Any]) -> int:
    body = json.dumps(event)
    response = await http.post("/slack/events", data=body, headers=json_headers(body))
    return response.status


async def post_click(http: HttpClient, payload: dict[str, Any]) -> int:
    body = urlencode({"payload": json.dumps(payload)})
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    return response.status


def publishes(fake: FakeSlack) -> list[dict[str, Any]]:
    return fake.posted("views.publish")


def view_of(call: dict[str, Any]) -> dict[str, Any]:
    view = call["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert isinstance(view, dict)
    for block in view["blocks"]:
        Block.parse(block).validate_json()  # type: ignore[union-attr]
    return view


def unsave_values(view: dict[str, Any]) -> list[str]:
    return [
        block["accessory"]["value"]
        for block in view["blocks"]
        if block.get("accessory", {}).get("action_id") == home.HOME_UNSAVE
    ]


def set_up(services: Services) -> dict[str, Any]:
    """My topic, a channel I changed, two saved papers, my last digest; and another
    user's saved paper and topic."""
    db = open_db(services.db_path)
    papers = [str(row["id"]) for row in db.query("select id from papers order by id limit 4")]
    ensure_channel(db, MINE, services.settings, NOW)
    mine = add_subscription(db, MINE, "rlhf", None, "@alice", AT)["id"]
    ensure_channel(db, THEIRS, services.settings, NOW)
    theirs = add_subscription(db, THEIRS, "offline-rl", None, "@bob", AT)["id"]
    ensure_channel(db, "slack:T0001/C0001", services.settings, NOW)
    add_subscription(db, "slack:T0001/C0001", "offline-rl", None, "@alice", AT)
    home_store.record_manager(db, "slack:T0001/C0001", f"slack:{TEAM}/{ME}", AT)
    save(db, f"slack:{TEAM}/{ME}", papers[0], "2026-11-29T10:00:00Z")
    save(db, f"slack:{TEAM}/{ME}", papers[1], AT)
    save(db, f"slack:{TEAM}/{OTHER}", papers[2], AT)
    items = [{"paper_id": papers[3], "topics": ["rlhf"], "score": 5.0}]
    insert_digest(db, MINE, "2026-W49", AT, ["rlhf"], items)
    title = str(db.sqlite.table("papers").get(papers[3])["title"])
    return {"papers": papers, "mine": mine, "theirs": theirs, "digest_title": title}


@pytest.fixture
async def http(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack):  # type: ignore[no-untyped-def]
    client = await start_http(make_services(tmp_path, seed_paths, catalog, fake_slack), fake_slack)
    yield client
    await client.close()
