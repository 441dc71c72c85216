"""Logging set-up: plain lines, or JSON lines (`--log-json`) for log collectors.

Two filters sit on the handler, so they hold for every logger, Paperboy's and libraries':
- `RepeatFilter`: a message template logged more than `burst` times within `interval`
  seconds is suppressed for the rest of that interval, then summed up in one line
  ("suppressed K similar lines"); a flood (say "Too many open files" from an accept loop)
  costs a few lines, not gigabytes.
- `RedactFilter`: credentials in URLs (`https://user:pass@host`) and Slack tokens are
  replaced with `(hidden)` in messages and tracebacks.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

log = logging.getLogger(__name__)

QUIET_LIBRARIES = ("aiohttp", "slack_sdk", "slack_bolt", "discord", "apscheduler", "asyncio")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


_SECRETS = re.compile(
    r"(?<=://)[^/\s@:]*:[^/\s@]*(?=@)"  # user:password@ in a URL
    r"|(?<=://)[^/\s@:]+(?=@)"  # a bare user (often a token) in a URL
    r"|\bx(?:ox[abpe]|app)-[\w-]+"  # Slack tokens
)


def redact(text: str) -> str:
    """`text` without URL credentials and Slack tokens."""
    return _SECRETS.sub("(hidden)", text)


class RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


def _shape(message: str) -> str:
    """A message's first line with numbers blanked: libraries (asyncio's "Exception in
    callback ... when=1833.17") log pre-formatted text that differs only in numbers."""
    return _NUMBERS.sub("#", message.split("\n", 1)[0][:200])


@dataclass
class _Window:
    start: float
    sample: logging.LogRecord
    count: int = 1
    suppressed: int = 0


class RepeatFilter(logging.Filter):
    """At most `burst` records per message template (logger, level, the unformatted
    message's first line, numbers blanked) in each `interval`; the summary of what was
    suppressed is logged with the first record after the interval ends (through `emit`)."""

    def __init__(
        self,
        burst: int = 5,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.burst = burst
        self.interval = interval
        self.clock = clock
        self.emit: Callable[[logging.LogRecord], object] | None = None
        self._windows: dict[tuple[str, int, str], _Window] = {}
        self._next_sweep = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "summary", False):
            return True
        now = self.clock()
        if now >= self._next_sweep:
            self._sweep(now)
        key = (record.name, record.levelno, _shape(str(record.msg)))
        window = self._windows.get(key)
        if window is None:
            self._windows[key] = _Window(now, record)
            return True
        window.count += 1
        if window.count <= self.burst:
            return True
        window.suppressed += 1
        return False

    def _sweep(self, now: float) -> None:
        """End the windows older than `interval`, logging what each suppressed."""
        self._next_sweep = now + min(self.interval, 1.0)
        for key, window in list(self._windows.items()):
            if now - window.start < self.interval:
                continue
            del self._windows[key]
            if window.suppressed and self.emit is not None:
                self.emit(self._summary(window))

    def _summary(self, window: _Window) -> logging.LogRecord:
        sample = window.sample
        record = logging.LogRecord(
            sample.name,
            sample.levelno,
            sample.pathname,
            sample.lineno,
            "suppressed %d similar lines in %.0f s: %s",
            (window.suppressed, self.interval, str(sample.msg).splitlines()[0][:120]),
            None,
        )
        record.summary = True
        return record


def configure(level: str, as_json: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    repeats = RepeatFilter()
    repeats.emit = handler.handle
    handler.addFilter(repeats)
    handler.addFilter(RedactFilter())  # after RepeatFilter: it formats only what is kept
    handler.setFormatter(
        JsonFormatter()
        if as_json
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Library chatter stays at warning unless debugging.
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
