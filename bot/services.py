"""What the runtime's parts share: settings, the catalog, the clock, and database access.

SQLite connections belong to the thread that opened them, and command handlers run
in worker threads (so a slow query never blocks the event loop). `Services.db()` hands
each thread its own connection to the same file; WAL and a busy timeout let them share.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from config.settings import Settings
from db import open_db
from digests.commands import Context
from digests.topics import Catalog

log = logging.getLogger(__name__)

T = TypeVar("T")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Services:
    db_path: Path
    settings: Settings
    catalog: Catalog
    clock: Callable[[], datetime] = utcnow
    # Called with a channel after a command changed its topics or schedule.
    listeners: list[Callable[[str], None]] = field(default_factory=list, repr=False)
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def changed(self, channel: str) -> None:
        for listener in self.listeners:
            try:
                listener(channel)
            except Exception:  # a listener's failure must not fail the user's command
                log.exception("change listener failed for %s", channel)

    def db(self) -> Database:
        """This thread's connection (opened, and migrated, on first use)."""
        connection = getattr(self._local, "db", None)
        if connection is None:
            connection = self._local.db = open_db(self.db_path)
        return connection

    def context(self, channel: str, user: str) -> Context:
        return Context(self.db(), channel, user, self.clock(), self.settings, self.catalog)

    async def in_thread(self, func: Callable[..., T], *args: object) -> T:
        """Run blocking work (SQLite, scoring) off the event loop."""
        return await asyncio.to_thread(func, *args)

    async def in_background_thread(self, func: Callable[..., T], *args: object) -> T:
        """Run long blocking work (an inbox ingest, a digest build) in a daemon thread of
        its own: see `in_daemon_thread`."""
        return await in_daemon_thread(func, *args)


async def in_daemon_thread(func: Callable[..., T], *args: object) -> T:
    """Run blocking work in a daemon thread of its own: unlike `asyncio.to_thread`'s pool,
    which the interpreter joins at exit, it never holds up the exit after a stop (a 60 MB
    inbox file takes over a minute; SIGTERM must exit within 10 s). The work must be safe
    to abandon mid-way: SQLite rolls back a transaction that never committed, as after
    kill -9. Cancelling the waiter does not stop the work."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():  # the waiter may have been cancelled meanwhile
            outcome()

    def work() -> None:
        outcome: Callable[[], None]
        try:
            outcome = functools.partial(future.set_result, func(*args))
        except BaseException as exc:  # handed to the waiter, raised there
            outcome = functools.partial(future.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=work, name=getattr(func, "__name__", "work"), daemon=True).start()
    return await future
