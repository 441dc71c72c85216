"""Log output: plain or JSON lines, libraries kept quiet, no tokens."""

from __future__ import annotations

import json
import logging

import pytest

from bot.logs import configure


def test_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure("info", as_json=True)
    logging.getLogger("bot.scheduler").info("scheduler: %d channel(s) scheduled", 3)
    logging.getLogger("slack_sdk").info("chatter that stays out")
    [line] = capsys.readouterr().err.strip().splitlines()
    entry = json.loads(line)
    assert entry["level"] == "info" and entry["logger"] == "bot.scheduler"
    assert entry["message"] == "scheduler: 3 channel(s) scheduled"
    assert entry["time"].endswith("+00:00")


def test_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure("warning")
    logging.getLogger("bot.delivery").warning(
        "delivery to %s paused: %s", "slack:T1/C1", "channel_not_found"
    )
    logging.getLogger("bot.delivery").info("not shown at warning")
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "WARNING bot.delivery: delivery to slack:T1/C1 paused: channel_not_found" in err


@pytest.fixture(autouse=True)
def restore_logging():  # type: ignore[no-untyped-def]
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
