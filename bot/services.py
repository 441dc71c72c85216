"""What the runtime's parts share: settings, the catalog, the clock, and database access:
`Services.db()` gives each thread (command handlers run in worker threads) its own
connection to the same file; WAL and a busy timeout let them share."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from config.settings import Settings
from db import open_db, transactions
from db.connection import Target
from db.store import Store
from digests.commands import Context
from digests.topics import Catalog

log = logging.getLogger(__name__)

T = TypeVar("T")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Services:
    db_path: Target
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

    def db(self) -> Store:
        """This thread's connection (opened, and migrated, on first use)."""
        connection = getattr(self._local, "db", None)
        if connection is None:
            connection = self._local.db = open_db(self.db_path)
        return connection

    def context(self, channel: str, user: str, user_key: str | None = None) -> Context:
        """A command's context; `user_key` is the user's stable key (`digests.actions.
        user_key`), which saved papers and `--me` need, `user` the name replies show."""
        return Context(
            self.db(), channel, user, self.clock(), self.settings, self.catalog, user_key
        )

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


_Work = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class ChangeLost(RuntimeError):
    """A change that ran, but whose transaction another change's failure rolled back."""


class ChangeWriter(Executor):
    """An executor for commands that write: one thread, and group commit.

    The work submitted while a batch runs waits, then runs as the next batch: one
    `BEGIN IMMEDIATE`, each piece of work in a savepoint of its own (its failure undoes
    its own writes only, and fails its own future), then one COMMIT, so one fsync for the
    whole batch instead of one per command. Futures are settled only after that COMMIT:
    nobody is told "done" about a write that could still be lost. A failed COMMIT fails
    every future of the batch (and stores none of it). A failure that ends the whole
    transaction (SQLite rolls back on a full disk or an I/O error) fails the changes
    before it in that transaction too (`ChangeLost`); the rest run in a new one. A bug in
    the writer itself fails its batch's futures and the thread goes on with the next.

    `connect()` gives the database of the calling thread (`Services.db`): the work reaches
    the same connection through the same call, as it runs in this executor's thread.
    """

    def __init__(
        self, connect: Callable[[], Store], *, max_batch: int = 64, name: str = "writer"
    ) -> None:
        self._connect = connect
        self.max_batch = max_batch
        self._name = name
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._shut = False
        self.batches = 0  # transactions committed, for tests and the benchmark

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future[T] = Future()
            self._queue.put((future, fn, args, kwargs))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            thread = self._thread
        if cancel_futures:
            while True:
                try:
                    work = self._queue.get_nowait()
                except queue.Empty:
                    break
                if work is not None:
                    work[0].cancel()
        self._queue.put(None)
        if wait and thread is not None:
            thread.join()

    def _work(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            batch = [work]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            try:
                self._run(batch)
            except BaseException as exc:  # a bug: the thread must live on for the next ones
                log.exception("the change writer failed on a batch of %d", len(batch))
                with contextlib.suppress(Exception):
                    transactions.rollback(self._connect())
                for future, *_ in batch:
                    if not future.done():
                        with contextlib.suppress(InvalidStateError):
                            future.set_exception(exc)
            if stop:
                return

    def _run(self, batch: list[_Work]) -> None:
        live = [work for work in batch if work[0].set_running_or_notify_cancel()]
        if not live:
            return
        settled: list[tuple[Future[Any], bool, Any]] = []  # known outcomes, in order
        pending: list[tuple[Future[Any], Any]] = []  # done, but only once the COMMIT is
        try:
            db = self._connect()
            for future, fn, args, kwargs in live:
                if not transactions.in_transaction(db):  # the first, or the one before ended it
                    transactions.begin_immediate(db)
                transactions.savepoint(db, "change")
                try:
                    value = fn(*args, **kwargs)
                except BaseException as exc:  # settled below, after the commit
                    if transactions.in_transaction(db):
                        transactions.undo(db, "change")
                    elif pending:
                        # SQLite rolled the whole transaction back (a full disk, an I/O
                        # error, a trigger's RAISE(ROLLBACK)): the changes before this one
                        # went with it, so they are not done either.
                        log.warning("a failed change undid %d others: %s", len(pending), exc)
                        lost = ChangeLost(f"undone by another change's failure: {exc}")
                        settled += [(done, False, lost) for done, _ in pending]
                        pending.clear()
                    settled.append((future, False, exc))
                    continue
                if transactions.in_transaction(db):
                    transactions.release(db, "change")
                    pending.append((future, value))
                else:  # it committed the transaction itself, and the changes before it
                    settled += [(done, True, result) for done, result in pending]
                    settled.append((future, True, value))
                    pending.clear()
            if transactions.in_transaction(db):
                transactions.commit(db)
        except BaseException as exc:  # BEGIN or COMMIT failed: nothing uncommitted stays
            log.warning("a batch of %d changes failed: %s", len(live), exc)
            with contextlib.suppress(Exception):
                transactions.rollback(self._connect())
            known = {id(future) for future, _, _ in settled}
            settled += [(work[0], False, exc) for work in live if id(work[0]) not in known]
            pending.clear()
        else:
            self.batches += 1
        for future, ok, value in [*settled, *((future, True, value) for future, value in pending)]:
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
