"""Log output: plain or JSON lines, libraries kept quiet, no tokens."""

from __future__ import annotations

import gc
import json
import logging
import sys
import threading
import weakref
from typing import Any

import pytest

from bot.logs import MAX_TEMPLATES, RepeatFilter, configure, redact


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


def record(
    msg: str,
    *args: object,
    name: str = "bot.test",
    level: int = logging.WARNING,
    exc_info: Any = None,
) -> logging.LogRecord:
    return logging.getLogger(name).makeRecord(name, level, "f", 1, msg, args or None, exc_info)


@pytest.fixture(autouse=True)
def restore_logging():  # type: ignore[no-untyped-def]
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_a_flood_of_one_line_is_collapsed(capsys: pytest.CaptureFixture[str]) -> None:
    """'Too many open files' from an accept loop, uncollapsed, can write 117 MB of log."""
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


def test_repeats_are_counted_per_line_and_window() -> None:
    now = [0.0]
    shown: list[logging.LogRecord] = []
    repeats = RepeatFilter(burst=2, interval=10, clock=lambda: now[0])
    repeats.emit = shown.append
    kept = [repeats.filter(record("refused %s", "10.0.0.1")) for _ in range(5)]
    assert kept == [True, True, False, False, False]
    assert repeats.filter(record("refused %s", "10.0.0.2"))  # another line
    now[0] = 11
    assert repeats.filter(record("refused %s", "10.0.0.1"))  # a new window
    [summary] = shown
    assert summary.getMessage() == "suppressed 3 similar lines in 10 s: refused 10.0.0.1"


def test_lines_of_one_template_with_different_values_all_show() -> None:
    """Keyed by the unformatted template, the filter would let 5 "delivered to %s ..."
    lines a minute through, so a Monday 09:00 with 6 channels of 2 parts would lose 7 of 12
    delivery lines, and a 6th channel's failed build would go unlogged."""
    repeats = RepeatFilter(burst=5, interval=60, clock=lambda: 0.0)
    kept = [
        repeats.filter(
            record(
                "delivered to %s: digest %s (%s), part %d of %d",
                *(f"discord:123/{channel}", channel, "2026-W48", part, 2),
                name="bot.delivery",
                level=logging.INFO,
            )
        )
        for channel in range(6)
        for part in (1, 2)
    ]
    assert all(kept)


def test_distinct_lines_are_bounded_too() -> None:
    """Lines that differ every time (say a peer address) are told apart up to a bound,
    then counted together: the filter's memory and the log stay bounded."""
    repeats = RepeatFilter(burst=5, interval=60, clock=lambda: 0.0)
    kept = [
        repeats.filter(record(f"peer {word} refused"))
        for word in (
            f"{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}{chr(97 + n // 676)}" for n in range(2000)
        )
    ]
    assert sum(kept) == MAX_TEMPLATES + 5


def test_two_threads_ending_windows_at_once_do_not_raise() -> None:
    """logging runs filters outside the handler's lock. A thread that sweeps while another
    is still sweeping (its summary blocked on a slow stderr) must not delete a window the
    first one then deletes again: a KeyError, raised into whatever code was logging."""
    now = [0.0]
    repeats = RepeatFilter(burst=1, interval=60, clock=lambda: now[0])
    errors: list[BaseException] = []
    shown: list[str] = []

    def other_thread() -> None:
        try:
            repeats.filter(record("c"))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    def emit(summary: logging.LogRecord) -> None:
        shown.append(summary.getMessage())
        if len(shown) == 1:  # the first summary is slow: another thread logs meanwhile
            now[0] = 63
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join(20)

    repeats.emit = emit
    for msg in ("a", "a", "b", "b"):
        repeats.filter(record(msg))
    now[0] = 61
    assert repeats.filter(record("d"))
    assert errors == []
    assert sorted(shown) == [
        "suppressed 1 similar lines in 60 s: a",
        "suppressed 1 similar lines in 60 s: b",
    ]


def test_a_suppressed_traceback_is_not_kept_alive() -> None:
    """The filter kept each line's first record, traceback and all, for a minute: every
    local of every frame in it (a request body, say) stayed in memory."""
    repeats = RepeatFilter(burst=1, interval=60, clock=lambda: 0.0)
    alive: list[weakref.ref[object]] = []

    class Body:
        pass

    def fail() -> None:
        body = Body()
        alive.append(weakref.ref(body))
        raise ValueError("bad body")

    try:
        fail()
    except ValueError:
        failed = record("request failed", level=logging.ERROR, exc_info=sys.exc_info())
    repeats.filter(failed)
    del failed
    gc.collect()
    assert alive[0]() is None


def test_a_bad_format_string_does_not_raise_from_the_filters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """logging reports a bad format string in emit (a "--- Logging error ---" note); the
    filters run before that and must not raise TypeError into the caller."""
    configure("info")
    logging.getLogger("bot.test").warning("%d papers", "many")  # must not raise
    logging.getLogger("bot.test").warning("still logging")
    assert "still logging" in capsys.readouterr().err


def test_credentials_in_urls_and_tokens_are_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    """slack_sdk logs its request URL at debug level: credentials and tokens are hidden."""
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


@pytest.mark.parametrize(
    "token",
    ["xoxe.xoxp-1-MjAyNi0xMS0yOQ", "xoxe-1-My0xLTIwMjY", "xoxc-1234-5678", "xoxs-9-8-7"],
)
def test_every_kind_of_slack_token_is_hidden(token: str) -> None:
    """Refresh (xoxe), client (xoxc) and legacy (xoxs) tokens, and a token glued to a word
    (`SLACK_TOKEN_xoxb-...` in a dumped environment), are hidden too."""
    secret = token.rsplit(".", 1)[-1]
    assert secret not in redact(f"token={token}")
    assert secret not in redact(f"SLACK_TOKEN_{token}")


def test_preformatted_lines_that_differ_in_numbers_are_one_template() -> None:
    """asyncio logged 20,000 "Exception in callback ..._start_serving(...) when=1833.17..."
    lines, each formatted already, after an accept loop ran out of file descriptors."""
    repeats = RepeatFilter(burst=5, interval=60, clock=lambda: 0.0)
    kept = [
        repeats.filter(
            record(
                f"Exception in callback _start_serving(<x at 0x7f{n:x}>)\nhandle: when={n}.5",
                name="asyncio",
                level=logging.ERROR,
            )
        )
        for n in range(1000)
    ]
    assert sum(kept) == 5
