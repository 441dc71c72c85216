"""The gateway connection: a failed attempt is one warning line, retried until it connects;
no warnings about voice libraries Paperboy does not use."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import discord
import pytest
import yarl
from aiohttp import web
from discord.gateway import DiscordWebSocket

from bot.discordbot.client import PaperboyClient
from bot.runner import DiscordComponent
from digests.topics import Catalog
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import logged_in, make_services
from tests.fakes.server import serve
from tests.fakes.waiting import eventually

HELLO = {"op": 10, "d": {"heartbeat_interval": 45000}, "s": None, "t": None}
IDENTIFY = 2


@dataclass
class FakeGateway:
    """A gateway that refuses the websocket upgrade (503) `refusals` times, then accepts
    it, says HELLO and records the ops the client sends."""

    refusals: int
    attempts: int = 0
    ops: list[int] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.attempts += 1
        if self.attempts <= self.refusals:
            return web.Response(status=503, text="gateway unavailable")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps(HELLO))
        async for message in ws:
            self.ops.append(json.loads(message.data)["op"])
        return ws


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def use_gateway(monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(f"ws://127.0.0.1:{port}/"))


def discord_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(("discord", "bot"))]


def assert_one_line_each(records: list[logging.LogRecord]) -> None:
    for record in records:
        assert record.exc_info is None and not record.exc_text, record.getMessage()
        assert "\n" not in record.getMessage()
        assert "Traceback" not in record.getMessage()


@pytest.fixture
async def fake_gateway() -> AsyncIterator[tuple[FakeGateway, int]]:
    gateway = FakeGateway(refusals=3)
    app = web.Application()
    app.router.add_get("/", gateway.handle)
    runner, port = await serve(app)
    yield gateway, port
    await runner.cleanup()


async def test_refused_attempts_are_one_line_each_until_it_connects(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_discord: FakeDiscord,
    fake_gateway: tuple[FakeGateway, int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gateway, port = fake_gateway
    use_gateway(monkeypatch, port)
    caplog.set_level(logging.DEBUG, logger="bot")
    caplog.set_level(logging.WARNING, logger="discord")
    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    client = await logged_in(services, fake_discord, reconnect_seconds=0.01)
    task = asyncio.create_task(client.connect(reconnect=True))
    try:
        # discord.py's own loop gave up after the first refusal (its socket was None).
        assert await eventually(lambda: IDENTIFY in gateway.ops, 4.0)
    finally:
        await client.close()
        await asyncio.wait_for(task, 4.0)
    records = discord_lines(caplog)
    assert_one_line_each(records)
    failures = [r.getMessage() for r in records if "gateway connection failed" in r.getMessage()]
    assert gateway.attempts == 4
    assert len(failures) == 3
    assert failures[0].startswith(
        "discord: gateway connection failed (WSServerHandshakeError: 503, "
        f"message='Invalid response status', url='ws://127.0.0.1:{port}/?"
    )
    assert failures[0].endswith("); trying again in 0.01 s")
    assert [r.levelname for r in records] == ["WARNING"] * 3
    assert failures[1].endswith("trying again in 0.02 s")
    assert failures[2].endswith("trying again in 0.04 s")


async def test_an_unreachable_gateway_logs_one_line_per_attempt(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_discord: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = closed_port()
    use_gateway(monkeypatch, port)
    caplog.set_level(logging.WARNING, logger="discord")
    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    client = await logged_in(services, fake_discord, reconnect_seconds=0.01)
    task = asyncio.create_task(client.connect(reconnect=True))
    try:
        assert await eventually(lambda: len(caplog.records) >= 3, 4.0)
        assert not task.done()  # still trying
    finally:
        await client.close()
        await asyncio.wait_for(task, 4.0)
    records = discord_lines(caplog)
    assert_one_line_each(records)
    assert all(r.name == "bot.discordbot.client" for r in records)
    assert records[0].getMessage() == (
        "discord: gateway connection failed (ClientConnectorError: Cannot connect to host "
        f"127.0.0.1:{port} ssl:default [Connect call failed ('127.0.0.1', {port})]); "
        "trying again in 0.01 s"
    )


async def test_run_logs_one_line_and_stops_at_once_while_waiting(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_discord: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As `paperboy run` starts it: the first failure waits 5 s, and a stop does not."""
    use_gateway(monkeypatch, closed_port())
    caplog.set_level(logging.WARNING, logger="discord")
    component = DiscordComponent(make_services(tmp_path, seed_paths, catalog, fake_discord))
    await component.start()
    assert await eventually(lambda: caplog.records, 4.0)
    started = time.monotonic()
    await component.stop()
    assert time.monotonic() - started < 2.0
    records = discord_lines(caplog)
    assert_one_line_each(records)
    assert len(records) == 1
    assert records[0].getMessage().endswith("; trying again in 5 s")


async def test_a_close_discord_will_not_resume_is_one_error_line(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_discord: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def refuse_token(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps(HELLO))
        await ws.receive()  # IDENTIFY
        await ws.close(code=4004, message=b"Authentication failed.")
        return ws

    app = web.Application()
    app.router.add_get("/", refuse_token)
    runner, port = await serve(app)
    use_gateway(monkeypatch, port)
    caplog.set_level(logging.WARNING, logger="discord")
    caplog.set_level(logging.WARNING, logger="bot")
    component = DiscordComponent(make_services(tmp_path, seed_paths, catalog, fake_discord))
    try:
        await component.start()
        assert await eventually(lambda: caplog.records, 4.0)
        await component.stop()
    finally:
        await runner.cleanup()
    records = discord_lines(caplog)
    assert_one_line_each(records)
    assert [(r.levelname, r.getMessage()) for r in records] == [
        (
            "ERROR",
            "discord: disconnected for good (ConnectionClosed: Shard ID None WebSocket "
            "closed with 4004); restart to reconnect",
        )
    ]


async def test_no_warnings_about_voice_libraries(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_discord: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As in a fresh process without PyNaCl and davey (discord.py warns once per process).
    monkeypatch.setattr(discord.VoiceClient, "warn_nacl", True)
    monkeypatch.setattr(discord.VoiceClient, "warn_dave", True)
    caplog.set_level(logging.DEBUG, logger="discord")
    PaperboyClient(make_services(tmp_path, seed_paths, catalog, fake_discord))
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in messages if "voice will NOT be supported" in m]
    # Other discord.py warnings still reach the log.
    logging.getLogger("discord.client").warning("some other warning")
    assert caplog.records[-1].getMessage() == "some other warning"
