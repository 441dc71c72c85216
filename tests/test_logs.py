"""Log output: plain or JSON lines, libraries kept quiet, no tokens."""

from __future__ import annotations

import json
import logging

import pytest

from bot.logs import RepeatFilter, configure, redact


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


def test_a_flood_of_one_line_is_collapsed(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 9 item 7: 'Too many open files' from an accept loop once wrote 117 MB of log."""
    configure("info")
    handler = logging.getLogger().handlers[0]
    [repeats] = [f for f in handler.filters if isinstance(f, RepeatFilter)]
    now = [1000.0]
    repeats.clock = lambda: now[0]
    noisy = logging.getLogger("asyncio")
    for _ in range(10_000):
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            noisy.error(
                "socket.accept() out of system resource\nsocket: %r", "<socket>", exc_info=True
            )
        logging.getLogger("bot.other").warning("unrelated %d", 1)
    now[0] += 61
    logging.getLogger("bot.other").info("a minute later")
    lines = capsys.readouterr().err.splitlines()
    accept = [line for line in lines if "ERROR asyncio: socket.accept()" in line]
    assert len(accept) == 5
    assert sum("bot.other: unrelated" in line for line in lines) == 5
    summaries = [line for line in lines if "suppressed 9995 similar lines in 60 s" in line]
    assert len(summaries) == 2
    assert "ERROR asyncio: suppressed 9995 similar lines in 60 s: socket.accept()" in summaries[0]
    assert lines[-1].endswith("a minute later")
    assert len(lines) < 200  # five tracebacks, two summaries, not 10,000 of each


def test_repeats_are_counted_per_template_and_window() -> None:
    now = [0.0]
    shown: list[logging.LogRecord] = []
    repeats = RepeatFilter(burst=2, interval=10, clock=lambda: now[0])
    repeats.emit = shown.append
    logger = logging.getLogger("bot.test")

    def record(msg: str, *args: object) -> logging.LogRecord:
        return logger.makeRecord("bot.test", logging.WARNING, "f", 1, msg, args, None)

    kept = [repeats.filter(record("refused %s", n)) for n in range(5)]
    assert kept == [True, True, False, False, False]
    assert repeats.filter(record("another %s", 1))
    now[0] = 11
    assert repeats.filter(record("refused %s", 9))  # a new window
    [summary] = shown
    assert summary.getMessage() == "suppressed 3 similar lines in 10 s: refused %s"


def test_credentials_in_urls_and_tokens_are_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 9 item 22: slack_sdk logs its request URL at debug level."""
    configure("debug")
    logging.getLogger("slack_sdk.web").debug(
        "Sending a request - url: POST %s, headers: %s",
        "https://paperboy:hunter2@proxy.example/api/auth.test",
        {"Authorization": "Bearer xoxb-1234-5678-secret"},
    )
    try:
        raise ValueError("cannot reach https://xoxb-999-token@host/api/")
    except ValueError:
        logging.getLogger("bot.runner").exception("start-up failed")
    err = capsys.readouterr().err
    assert "hunter2" not in err and "paperboy:" not in err
    assert "xoxb-1234" not in err and "xoxb-999" not in err
    assert "https://(hidden)@proxy.example/api/auth.test" in err
    assert "ValueError: cannot reach https://(hidden)@host/api/" in err
    assert redact("http://127.0.0.1:3000/slack/events") == "http://127.0.0.1:3000/slack/events"


def test_preformatted_lines_that_differ_in_numbers_are_one_template() -> None:
    """asyncio logged 20,000 "Exception in callback ..._start_serving(...) when=1833.17..."
    lines, each formatted already, after an accept loop ran out of file descriptors."""
    repeats = RepeatFilter(burst=5, interval=60, clock=lambda: 0.0)
    logger = logging.getLogger("asyncio")
    kept = [
        repeats.filter(
            logger.makeRecord(
                "asyncio",
                logging.ERROR,
                "f",
                1,
                f"Exception in callback _start_serving(<x at 0x7f{n:x}>)\nhandle: when={n}.5",
                None,
                None,
            )
        )
        for n in range(1000)
    ]
    assert sum(kept) == 5
