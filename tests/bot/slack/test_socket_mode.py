"""Socket Mode: apps.connections.open gives a loopback websocket that sends a slash command."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

from bot.slack.app import create_app
from bot.slack.client import make_client
from db import open_db
from db.channels import active_subscriptions
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import APP_TOKEN, BOT_TOKEN, make_services, slash_body
from tests.fakes.waiting import eventually


async def test_a_slash_command_over_socket_mode(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    app = create_app(services, make_client(BOT_TOKEN, fake_slack.api_url), signing_secret=None)
    handler = AsyncSocketModeHandler(app, APP_TOKEN)
    await handler.connect_async()
    try:
        payload = dict(parse_qsl(slash_body("subscribe rlhf", fake_slack.response_url())))
        await fake_slack.send_envelope(
            {
                "envelope_id": "57d6a792-4d35-4d0b-b6aa-3361493e1caf",
                "type": "slash_commands",
                "accepts_response_payload": True,
                "payload": payload,
            }
        )
        await eventually(lambda: fake_slack.socket_acks)
        [ack] = fake_slack.socket_acks
        assert ack["envelope_id"] == "57d6a792-4d35-4d0b-b6aa-3361493e1caf"
        assert ack["payload"]["response_type"] == "in_channel"
        assert "@alice subscribed this channel to RLHF" in ack["payload"]["text"]
        rows = active_subscriptions(open_db(services.db_path), "slack:T0001/C0001")
        assert [row["topic_id"] for row in rows] == ["rlhf"]
        [opened] = [call for call in fake_slack.calls if call.method == "apps.connections.open"]
        assert opened.token == APP_TOKEN
    finally:
        await handler.close_async()
