"""`paperboy run` with Slack: start-up checks, HTTP mode on a real port, clean stop."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.runner import SlackComponent, run
from config.settings import SettingsError
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    APP_TOKEN,
    BOT_TOKEN,
    make_services,
    signed_headers,
    slash_body,
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_missing_settings_stop_start_up_with_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "PAPERBOY_DB": str(tmp_path / "r.db")}
    result = runner.invoke(main, ["run"], env=env)
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: SLACK_APP_TOKEN is not set: Socket Mode needs an app-level token (xapp-...); "
        "or run with --slack-http and SLACK_SIGNING_SECRET"
    ]
    assert "Traceback" not in result.output
    http = runner.invoke(main, ["run", "--slack-http"], env=env)
    assert http.exit_code == 2 and "SLACK_SIGNING_SECRET is not set" in http.output
    bad = runner.invoke(main, ["run"], env={**env, "SLACK_BOT_TOKEN": "xoxp-user-token-secret"})
    assert bad.exit_code == 2
    assert "SLACK_BOT_TOKEN=(hidden) is not valid" in bad.output
    assert "xoxp-user-token-secret" not in bad.output


async def test_a_refused_token_is_named_not_printed(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack, SLACK_APP_TOKEN=APP_TOKEN)
    fake_slack.queue("auth.test", {"ok": False, "error": "invalid_auth"})
    with pytest.raises(SettingsError) as caught:
        await SlackComponent(services).start()
    assert str(caught.value) == "SLACK_BOT_TOKEN was refused by Slack (invalid_auth)"
    assert BOT_TOKEN not in str(caught.value)


async def test_http_mode_serves_signed_requests_until_stopped(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    port = free_port()
    stop = asyncio.Event()
    task = asyncio.create_task(run([SlackComponent(services, http=True, port=port)], stop))
    body = slash_body("topics", fake_slack.response_url())
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            try:
                response = await session.post(
                    f"http://127.0.0.1:{port}/slack/events", data=body, headers=signed_headers(body)
                )
                break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        assert response.status == 200
        assert "topics" in (await response.json())["text"]
        forged = await session.post(
            f"http://127.0.0.1:{port}/slack/events",
            data=body,
            headers=signed_headers(body, "1" * 32),
        )
        assert forged.status == 401
    stop.set()
    await asyncio.wait_for(task, 10)


async def test_socket_mode_component_connects_and_stops(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack, SLACK_APP_TOKEN=APP_TOKEN)
    services.settings = replace(services.settings, slack_signing_secret=None)
    component = SlackComponent(services)
    line = await component.start()
    assert line == "slack: Socket Mode connected as @paperboy in team T0001"
    await component.stop()
