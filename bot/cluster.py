"""Several `paperboy run` processes as peers: each is a `Member` that registers, heartbeats,
and holds the clock (runs the scheduler) only while the database's lease says it does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future
from datetime import datetime, timedelta
from typing import Any, TypeVar

from db import processes
from db.errors import StorageError
from db.store import Store

log = logging.getLogger(__name__)

T = TypeVar("T")
Callback = Callable[[], Awaitable[None]]

CLOCK = processes.CLOCK
INTERVAL = 10.0
TTL = 30.0
# A process silent for one lease's ttl is taken for dead: its clock is free by then too.
STALE_AFTER = timedelta(seconds=TTL)
# How long the clock's holder keeps gone processes' rows, so `status` can show them.
FORGET_AFTER = timedelta(days=1)


class ClockExpired(TimeoutError):
    """The beat's database call did not answer before the held clock's lease ran out."""


class OneThread(Executor):
    """Runs what is submitted one at a time, in order, in one daemon thread: a SQLite
    connection may be used only in the thread that opened it, and a database call that
    hangs must not hold up the interpreter's exit (a thread pool's threads are joined)."""

    def __init__(self, name: str = "cluster") -> None:
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._work.put((future, lambda: fn(*args, **kwargs)))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._work.put(None)
        if wait:
            self._thread.join()

    def _loop(self) -> None:
        while (item := self._work.get()) is not None:
            future, work = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to the waiter
                future.set_exception(exc)


class Member:
    """This process among its peers. `beat()` (every `interval` seconds in `run()`) stamps
    its heartbeat and takes or renews the lease `lease` for `ttl` seconds; `holds_clock`
    says whether it holds it, and `on_gain`/`on_lose` are awaited when that changes.

    Every database call runs in `executor` (by default a daemon thread of its own), on a
    Store that `connect()` opens there, and opens again after a failure. A failed beat is
    logged as one line and counted in `failures`; once `ttl` has passed since the last
    renewal began, by `monotonic`, the member lets the clock go (`on_lose`) even if the
    database cannot say so, before any other member can take it. `clock(store)` is the
    time stamped (by default the database server's, one clock for all machines).
    `takes_clock=False` (a web-only process) heartbeats but never takes the clock."""

    def __init__(
        self,
        connect: Callable[[], Store],
        *,
        role: str = "all",
        on_gain: Callback | None = None,
        on_lose: Callback | None = None,
        takes_clock: bool = True,
        interval: float = INTERVAL,
        ttl: float = TTL,
        lease: str = CLOCK,
        host: str | None = None,
        pid: int | None = None,
        process_id: str | None = None,
        clock: Callable[[Store], datetime] = processes.database_now,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        executor: Executor | None = None,
        forget_after: timedelta = FORGET_AFTER,
    ) -> None:
        if role not in processes.ROLES:
            raise ValueError(f"role must be one of {', '.join(processes.ROLES)}, not {role!r}")
        if not 0 < interval < ttl:
            raise ValueError("the heartbeat interval must be positive and shorter than the ttl")
        self.connect = connect
        self.role = role
        self.on_gain = on_gain
        self.on_lose = on_lose
        self.takes_clock = takes_clock
        self.interval = interval
        self.ttl = ttl
        self.lease = lease
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is None else pid
        self.id = process_id or f"{self.host}:{self.pid}:{secrets.token_hex(4)}"
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        self.forget_after = forget_after
        self._owns_executor = executor is None
        self.executor: Executor = executor or OneThread(f"cluster-{self.id}")
        self.holds_clock = False
        self.failures = 0
        self.beats = 0
        self._store: Store | None = None
        self._registered = False
        self._renewed = 0.0  # `monotonic` when the last successful renewal began
        self._pending: tuple[asyncio.Future[bool], float] | None = None
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._stopped = False

    @property
    def clock_deadline(self) -> float | None:
        """When (by `monotonic`) the held clock is let go unless renewed; None if not held."""
        return self._renewed + self.ttl if self.holds_clock else None

    async def run(self) -> None:
        """Beat every `interval` seconds until `stop()`; a beat's failure never ends it."""
        while not self._stopping.is_set():
            try:
                await self.beat()
            except Exception:  # a bug in a beat must not stop the heartbeat
                self.failures += 1
                log.exception("cluster: heartbeat of %s failed", self.id)
            await self._pause(self.interval)

    async def beat(self) -> None:
        """One heartbeat: register (again) if needed, stamp the heartbeat, take or renew
        the clock's lease, and gain or lose the clock accordingly."""
        async with self._lock:
            if self._stopped:
                return
            # Paused or cut off past the deadline: another may hold the clock by now.
            if self.holds_clock and self.monotonic() >= self._renewed + self.ttl:
                await self._let_go()
            try:
                acquired, began = await self._call_once()
            except (StorageError, TimeoutError) as exc:
                self.failures += 1
                log.warning(
                    "cluster: heartbeat of %s failed (%d so far): %s",
                    self.id,
                    self.failures,
                    str(exc) or type(exc).__name__,
                )
                # The call outlasted the deadline (one begun past it let the clock go before).
                if self.holds_clock and isinstance(exc, ClockExpired):
                    await self._let_go()
                return
            self.beats += 1
            if acquired:
                self._renewed = began
                if not self.holds_clock:
                    await self._gain()
            elif self.holds_clock:
                log.warning("cluster: %s lost the clock to another process", self.id)
                await self._lose()

    async def stop(self) -> None:
        """End `run()`, let the clock go (`on_lose` first, then the lease, so the next
        holder starts only once this one's scheduler stopped), and mark the row stopped."""
        self._stopping.set()
        async with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self.holds_clock:
                await self._lose()
            try:
                await self._in_executor(self._stop_work)
            except (StorageError, TimeoutError) as exc:
                log.warning(
                    "cluster: %s could not mark itself stopped: %s",
                    self.id,
                    str(exc) or type(exc).__name__,
                )
            except Exception:  # stopping goes on: the row goes stale, the lease expires
                log.exception("cluster: %s could not mark itself stopped", self.id)
            finally:
                if self._owns_executor:
                    self.executor.shutdown(wait=False)

    async def _call_once(self) -> tuple[bool, float]:
        """Whether this member holds the lease, and when (by `monotonic`) the call that
        says so began. A call still running from an earlier beat is waited for again
        rather than queued behind: a hung database makes each beat fail by its timeout."""
        if self._pending is None or self._pending[0].done():
            began = self.monotonic()
            future = asyncio.wrap_future(self.executor.submit(self._beat_work))
            # Its outcome is read here, or dropped after a timeout: never "not retrieved".
            future.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._pending = future, began
        future, began = self._pending
        left = self._renewed + self.ttl - self.monotonic() if self.holds_clock else self.interval
        try:
            return await asyncio.wait_for(asyncio.shield(future), min(self.interval, left)), began
        except TimeoutError:
            if left <= self.interval:
                raise ClockExpired(
                    "the database did not answer before the clock's lease ran out"
                ) from None
            raise TimeoutError(f"the database did not answer within {self.interval:g} s") from None

    def _beat_work(self) -> bool:
        """In the executor: the beat's statements; whether this member holds the lease."""
        try:
            store = self._store = self._store or self.connect()
            now = self.clock(store)
            if not (self._registered and processes.heartbeat(store, self.id, now)):
                if self._registered:
                    log.info("cluster: %s was taken for gone; registering again", self.id)
                processes.register(store, self.id, self.host, self.pid, self.role, now)
                self._registered = True
            if not self.takes_clock:
                return False
            ttl = timedelta(seconds=self.ttl)
            held = processes.acquire(store, self.lease, self.id, now, ttl)
            if held:
                processes.forget_gone(store, self.forget_after, now)
            return held
        except StorageError:
            self._drop_store()
            raise

    def _stop_work(self) -> None:
        try:
            store = self._store = self._store or self.connect()
            processes.release(store, self.lease, self.id)
            if self._registered:
                processes.stop(store, self.id, self.clock(store))
        finally:
            self._drop_store()

    def _release_work(self) -> None:
        if self._store is not None:
            processes.release(self._store, self.lease, self.id)

    def _drop_store(self) -> None:
        # A new connection next time: a PostgreSQL connection that failed may be broken.
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()

    async def _in_executor(self, work: Callable[[], T]) -> T:
        future = self.executor.submit(work)
        return await asyncio.wait_for(asyncio.wrap_future(future), self.interval)

    async def _gain(self) -> None:
        self.holds_clock = True
        log.info("cluster: %s holds the clock", self.id)
        if self.on_gain is None:
            return
        try:
            await self.on_gain()
        except Exception:
            # Holding the clock without running it would stall every schedule: hand it on.
            log.exception("cluster: starting the clock failed on %s; letting it go", self.id)
            self.holds_clock = False
            try:
                await self._in_executor(self._release_work)
            except (StorageError, TimeoutError) as exc:
                log.warning(
                    "cluster: %s could not release the clock: %s",
                    self.id,
                    str(exc) or type(exc).__name__,
                )

    async def _lose(self) -> None:
        self.holds_clock = False
        if self.on_lose is None:
            return
        try:
            await self.on_lose()
        except Exception:
            log.exception("cluster: stopping the clock failed on %s", self.id)

    async def _let_go(self) -> None:
        log.warning("cluster: %s let the clock go: not renewed for %.0f s", self.id, self.ttl)
        await self._lose()

    async def _pause(self, seconds: float) -> None:
        """`sleep(seconds)`, cut short by `stop()`."""
        waits = [
            asyncio.ensure_future(self.sleep(seconds)),
            asyncio.ensure_future(self._stopping.wait()),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
