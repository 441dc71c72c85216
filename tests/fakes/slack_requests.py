"""Slash-command requests signed exactly as Slack signs them."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_sdk.models.blocks import Block

from bot.services import Services
from bot.slack.app import create_app
from bot.slack.client import make_client
from bot.slack.endpoint import SlackEndpoint
from bot.slack.http import HttpServer, Limits
from config.settings import load_settings
from db import open_db
from digests.ingest import ingest_files
from digests.render import limits
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack

SIGNING_SECRET = "8f742231b10e8888abcd99aaabbb85a5"
BOT_TOKEN = "xoxb-1234567890-test-token"
APP_TOKEN = "xapp-1-A0001-test-app-token"


def slash_body(
    text: str,
    response_url: str,
    *,
    user: str = "U0001",
    channel: str = "C0001",
    team: str = "T0001",
) -> str:
    return urlencode(
        {
            "token": "legacy-verification-token",
            "team_id": team,
            "team_domain": "lab",
            "channel_id": channel,
            "channel_name": "papers",
            "user_id": user,
            "user_name": "alice" if user == "U0001" else user.lower(),
            "command": "/papers",
            "text": text,
            "api_app_id": "A0001",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        }
    )


def signed_headers(
    body: str, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    """`v0=` + HMAC-SHA256 of `v0:{timestamp}:{body}`, as Slack sends it."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": f"v0={digest}",
    }


def make_services(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake: FakeSlack,
    *,
    stored_at: datetime = NOW,
    clock: Callable[[], datetime] = lambda: NOW,
    **env: str,
) -> Services:
    """Services with Slack on `fake`, the seed papers stored at `stored_at`, settings
    `env` on top of the Slack ones."""
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=stored_at)
    settings = load_settings(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": fake.api_url,
            **env,
        },
        dotenv=None,
    )
    return Services(db_path, settings, catalog, clock=clock)


class HttpClient:
    """Paperboy's Slack HTTP endpoint on a loopback port, and a session to call it."""

    def __init__(self, server: HttpServer, endpoint: SlackEndpoint):
        self.server = server
        self.endpoint = endpoint
        self.session = aiohttp.ClientSession()
        self.services: Services = endpoint.services

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.port}{path}"

    async def post(
        self, path: str, *, data: str | bytes, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        response = await self.session.post(self.url(path), data=data, headers=headers)
        await response.read()
        return response

    async def close(self) -> None:
        await self.session.close()
        await self.server.stop()
        await self.endpoint.close()


async def start_http(
    services: Services, fake: FakeSlack, ack_budget: float = 2.0, limits: Limits | None = None
) -> HttpClient:
    endpoint = SlackEndpoint(
        services,
        make_client(BOT_TOKEN, fake.api_url),
        signing_secret=SIGNING_SECRET,
        ack_budget=ack_budget,
    )
    server = HttpServer(endpoint, limits or Limits(), host="127.0.0.1")
    await server.start()
    return HttpClient(server, endpoint)


@contextlib.asynccontextmanager
async def socket_mode(services: Services, fake: FakeSlack) -> AsyncIterator[AsyncSocketModeHandler]:
    """Paperboy's Socket Mode app, connected to the fake's websocket (send it envelopes
    with `fake.send_envelope`); closed on the way out."""
    app = create_app(services, make_client(BOT_TOKEN, fake.api_url), signing_secret=None)
    handler = AsyncSocketModeHandler(app, APP_TOKEN)
    await handler.connect_async()
    try:
        yield handler
    finally:
        await handler.close_async()


def assert_valid_blocks(blocks: list[dict[str, Any]]) -> None:
    assert limits.slack_problems({"blocks": blocks}) == []
    for block in blocks:
        Block.parse(block).validate_json()  # type: ignore[union-attr]
