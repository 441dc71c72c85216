"""Credentials in SLACK_API_URL are never logged (slack_sdk logs its URL at debug level),
and start-up refuses them in one line naming the variable, secret hidden, not with
"unexpected failure (ValueError…)" (aiohttp refuses URL credentials next to the token's
Authorization header)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from config.settings import SettingsError, load_settings
from tests.fakes.slack_requests import BOT_TOKEN, SIGNING_SECRET

SECRET_URL = "https://paperboy:hunter2-secret@slack-proxy.example/api/"


@pytest.mark.parametrize("args", [["run", "--slack-http"], ["--log-level", "debug", "run"]])
def test_start_up_refuses_url_credentials_in_one_line(tmp_path: Path, args: list[str]) -> None:
    env = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_APP_TOKEN": "xapp-1-A0001-test-app-token",
        "SLACK_API_URL": SECRET_URL,
        "PAPERBOY_DB": str(tmp_path / "r.db"),
    }
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2
    assert "hunter2" not in result.output and "paperboy:" not in result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert line.startswith(
        "error: SLACK_API_URL='https://(hidden)@slack-proxy.example/api/' is not valid: "
        "must not contain a user name or password"
    )
    assert "unexpected" not in result.output and "Traceback" not in result.output


def test_both_api_urls_refuse_credentials() -> None:
    for variable in ("SLACK_API_URL", "DISCORD_API_URL"):
        with pytest.raises(SettingsError) as caught:
            load_settings({variable: "http://token-only@127.0.0.1:9/api"}, dotenv=None)
        assert "token-only" not in str(caught.value)
    assert load_settings({"SLACK_API_URL": "http://127.0.0.1:9/api"}, dotenv=None)
