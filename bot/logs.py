"""Logging set-up: plain lines, or JSON lines (`--log-json`) for log collectors.

Two filters sit on the handler, so they hold for every logger, Paperboy's and libraries':
- `RepeatFilter`: a line logged more than `burst` times within `interval` seconds is
  suppressed for the rest of that interval, then summed up in one line
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
import threading
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
    r"|x(?:ox[a-z]|app)-[\w-]+"  # Slack tokens: xoxb-, xoxp-, xoxe-, xoxc-, xapp-...
)


def redact(text: str) -> str:
    """`text` without URL credentials and Slack tokens."""
    return _SECRETS.sub("(hidden)", text)


class RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = _message(record)
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")
MAX_TEMPLATES = 200  # distinct lines tracked per interval; more share one overflow count
OVERFLOW = "(lines of too many other kinds)"


def _shape(record: logging.LogRecord) -> str:
    """What makes two records repeats of one line: the formatted message's first line (so
    deliveries to different channels, or failures of different digests, stay distinct),
    with numbers blanked when the message came pre-formatted (no arguments): libraries
    (asyncio's "Exception in callback ... when=1833.17") log text that differs only in
    numbers."""
    message = _message(record)[:200].partition("\n")[0]
    return message if record.args else _NUMBERS.sub("#", message)


def _message(record: logging.LogRecord) -> str:
    """The formatted message; a filter must not raise where a bad format string would
    (logging reports that in `emit`, after the filters)."""
    try:
        return record.getMessage()
    except Exception:
        return str(record.msg)


@dataclass
class _Window:
    start: float
    name: str  # the first record's logger, level, place and line, for the summary
    levelno: int
    pathname: str
    lineno: int
    text: str
    count: int = 1
    suppressed: int = 0


class RepeatFilter(logging.Filter):
    """At most `burst` records of one line (logger, level and `_shape`) in each `interval`;
    the summary of what was suppressed is logged with the first record after the interval
    ends (through `emit`). At most `MAX_TEMPLATES` lines are told apart per interval;
    beyond that a logger's other lines at a level are counted as one. Safe to call from
    any thread (logging runs filters outside the handler's lock)."""

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
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "summary", False):
            return True
        shape = _shape(record)
        with self._lock:
            now = self.clock()
            ended = self._sweep(now) if now >= self._next_sweep else []
            keep = self._count(record, shape, now)
        # Outside the lock: emitting runs the handler (and this filter) again.
        if self.emit is not None:
            for window in ended:
                self.emit(self._summary(window))
        return keep

    def _count(self, record: logging.LogRecord, shape: str, now: float) -> bool:
        key = (record.name, record.levelno, shape)
        window = self._windows.get(key)
        if window is None and len(self._windows) >= MAX_TEMPLATES:
            key = (record.name, record.levelno, OVERFLOW)
            window = self._windows.get(key)
            shape = OVERFLOW
        if window is None:
            self._windows[key] = _Window(
                now, record.name, record.levelno, record.pathname, record.lineno, shape[:120]
            )
            return True
        window.count += 1
        if window.count <= self.burst:
            return True
        window.suppressed += 1
        return False

    def _sweep(self, now: float) -> list[_Window]:
        """End the windows older than `interval`; the ones that suppressed something."""
        self._next_sweep = now + min(self.interval, 1.0)
        ended = []
        for key, window in list(self._windows.items()):
            if now - window.start >= self.interval:
                del self._windows[key]
                if window.suppressed:
                    ended.append(window)
        return ended

    def _summary(self, window: _Window) -> logging.LogRecord:
        record = logging.LogRecord(
            window.name,
            window.levelno,
            window.pathname,
            window.lineno,
            "suppressed %d similar lines in %.0f s: %s",
            (window.suppressed, self.interval, window.text),
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
