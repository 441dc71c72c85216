"""bot/cluster.py: members that heartbeat into one database and hold the clock one at a
time; another takes it over once the holder's lease runs out, on a fake clock."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cluster import Member
from db import open_db, processes
from db.errors import Unavailable
from db.store import Params, Result, Row, Store
from tests.fakes import postgres
from tests.fakes.clock import FakeTime

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
STALE = timedelta(seconds=30)


class Switch:
    """What the test's database does: answers, fails (`down`) or hangs (`hung`) until
    `resume` is set."""

    def __init__(self) -> None:
        self.down = False
        self.hung = False
        self.resume = threading.Event()

    def check(self) -> None:
        if self.hung:
            self.resume.wait(10)
        if self.down:
            raise Unavailable("connection refused")


class SwitchedStore(Store):
    """A Store whose statements the test's switch can fail or hang."""

    def __init__(self, inner: Store, switch: Switch) -> None:
        super().__init__(inner.conn)
        self.switch = switch

    def execute(self, sql: str, params: Params = ()) -> Result:
        self.switch.check()
        return super().execute(sql, params)

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        self.switch.check()
        return super().query(sql, params)


class World:
    """Members on one database, a fake time shared by all (`at` seconds since T0), and
    the gains and losses of the clock they report, in order."""

    def __init__(self, connect: Callable[[], Store]) -> None:
        self.time = FakeTime()
        self.start = self.time.now
        self.switch = Switch()
        self.raw_connect = connect
        self.events: list[tuple[str, str, float]] = []
        self.connects = 0
        # Fake seconds each statement of the members' takes, as a slow database would.
        self.statement_takes = 0.0

    @property
    def at(self) -> float:
        return self.time.now - self.start

    def move_to(self, seconds: float) -> None:
        self.time.now = self.start + seconds

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.at)

    def connect(self) -> Store:
        self.connects += 1
        return SwitchedStore(self.raw_connect(), self.switch)

    def database_now(self, store: Store) -> datetime:
        self.time.now += self.statement_takes
        return self.now()

    def member(self, name: str, **options: Any) -> Member:
        async def gain() -> None:
            self.events.append((name, "gain", self.at))

        async def lose() -> None:
            self.events.append((name, "lose", self.at))

        settings: dict[str, Any] = {
            "on_gain": gain,
            "on_lose": lose,
            "host": f"host-{name}",
            "pid": 100,
            "process_id": name,
            "clock": self.database_now,
            "monotonic": self.time.monotonic,
            "sleep": self.time.sleep,
        }
        return Member(self.connect, **(settings | options))


@pytest.fixture
def sqlite_connect(tmp_path: Path) -> Callable[[], Store]:
    """Each call opens a new connection to one SQLite file, as each process does."""
    open_db(tmp_path / "cluster.db").close()
    return lambda: Store(open_db(tmp_path / "cluster.db").conn)


@pytest.fixture(params=["sqlite", "postgresql"])
def connect(
    request: pytest.FixtureRequest, sqlite_connect: Callable[[], Store]
) -> Iterator[Callable[[], Store]]:
    """New connections to one fresh database: a SQLite file, or PostgreSQL."""
    if request.param == "sqlite":
        yield sqlite_connect
        return
    server: postgres.Server = request.getfixturevalue("postgres_server")
    name = server.fresh_database()
    try:
        yield lambda: Store.connect(server.url(name))
    finally:
        server.drop(name)


@pytest.fixture
def world(sqlite_connect: Callable[[], Store]) -> World:
    return World(sqlite_connect)


async def beat_at(world: World, seconds: float, *members: Member) -> None:
    world.move_to(seconds)
    for member in members:
        await member.beat()


async def test_another_member_takes_the_clock_once_the_silent_holders_lease_ran_out(
    connect: Callable[[], Store],
) -> None:
    world = World(connect)
    a, b = world.member("a"), world.member("b")
    await beat_at(world, 0, a, b)
    await beat_at(world, 10, a, b)
    assert (a.holds_clock, b.holds_clock) == (True, False)

    # a is killed: it beats no more. Its lease, renewed at 10 s, runs until 40 s.
    for seconds in (20, 30, 39.9):
        await beat_at(world, seconds, b)
        assert not b.holds_clock
    await beat_at(world, 40, b)
    assert b.holds_clock
    assert world.events == [("a", "gain", 0), ("b", "gain", 40)]
    store = connect()
    later = world.now() + timedelta(seconds=1)  # a has been silent for over 30 s by then
    assert [row["id"] for row in processes.live(store, later, STALE)] == ["b"]
    assert [row["id"] for row in processes.gone(store, later, STALE)] == ["a"]
    assert processes.holder(store, "clock", later) == "b"

    # Should a come back (it was only cut off), it finds the clock taken and lets it go.
    await beat_at(world, 41, a)
    assert not a.holds_clock
    assert world.events[-1] == ("a", "lose", 41)
    assert processes.holder(store, "clock", world.now()) == "b"
    store.close()
    for member in (a, b):
        await member.stop()


async def test_a_holder_that_keeps_beating_keeps_the_clock(world: World) -> None:
    a, b = world.member("a"), world.member("b")
    for seconds in range(0, 200, 10):
        await beat_at(world, seconds, a, b)
    assert world.events == [("a", "gain", 0)]
    assert (a.beats, b.beats, a.failures, b.failures) == (20, 20, 0, 0)


async def test_a_failed_beat_is_logged_and_counted_and_the_clock_let_go_after_its_ttl(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = world.member("a"), world.member("b")
    await beat_at(world, 0, a)
    world.switch.down = True
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bot.cluster"):
        await beat_at(world, 10, a)
        await beat_at(world, 29.9, a)
    assert a.failures == 2
    assert world.connects == 2  # the connection that failed at 10 s was dropped for a new one
    assert a.holds_clock  # its lease still runs until 30 s: nobody else can take it yet
    assert [record.getMessage() for record in caplog.records] == [
        "cluster: heartbeat of a failed (1 so far): connection refused",
        "cluster: heartbeat of a failed (2 so far): connection refused",
    ]

    await beat_at(world, 30, a)
    assert not a.holds_clock
    assert world.events == [("a", "gain", 0), ("a", "lose", 30)]
    world.switch.down = False
    await beat_at(world, 30, b)
    await beat_at(world, 31, a)
    assert (a.holds_clock, b.holds_clock) == (False, True)
    assert a.failures == 3


async def test_the_clock_is_let_go_by_when_its_renewal_began_not_when_it_ended(
    world: World,
) -> None:
    a = world.member("a")
    world.statement_takes = 5.0  # the renewal ends at 5 s, the lease runs until 35 s
    await beat_at(world, 0, a)
    assert a.holds_clock
    assert a.clock_deadline == world.time.monotonic() - 5.0 + 30.0
    world.statement_takes = 0.0
    world.switch.down = True
    await beat_at(world, 29.0, a)  # a second before: the call gets a real second to answer
    assert a.holds_clock
    await beat_at(world, 30, a)
    assert world.events == [("a", "gain", 5), ("a", "lose", 30)]


async def test_the_clock_holder_forgets_processes_gone_for_a_day(
    world: World, sqlite_connect: Callable[[], Store]
) -> None:
    store = sqlite_connect()
    a, b = world.member("a"), world.member("b")
    await beat_at(world, 0, a)
    processes.register(store, "old", "h", 1, "all", T0 - timedelta(days=1, seconds=1))
    processes.register(store, "recent", "h", 2, "all", T0 - timedelta(hours=23))
    await beat_at(world, 1, b)
    assert len(processes.gone(store, world.now(), STALE)) == 2  # only the holder forgets

    await beat_at(world, 10, a)
    assert [row["id"] for row in processes.gone(store, world.now(), STALE)] == ["recent"]


async def test_a_holder_whose_lease_another_took_loses_the_clock_at_its_next_beat(
    world: World, sqlite_connect: Callable[[], Store]
) -> None:
    a, b = world.member("a"), world.member("b")
    await beat_at(world, 0, a)
    # The lease went by other means than expiry (an operator's delete), and b took it.
    assert processes.release(sqlite_connect(), "clock", "a")
    await beat_at(world, 1, b)
    await beat_at(world, 10, a)
    assert world.events == [("a", "gain", 0), ("b", "gain", 1), ("a", "lose", 10)]
    assert (a.holds_clock, b.holds_clock) == (False, True)


async def test_a_holder_that_beats_after_its_deadline_stops_its_clock_before_taking_it_again(
    world: World,
) -> None:
    a = world.member("a")
    await beat_at(world, 0, a)
    await beat_at(world, 45, a)  # the process was paused (SIGSTOP) for 45 s
    assert world.events == [("a", "gain", 0), ("a", "lose", 45), ("a", "gain", 45)]
    assert a.holds_clock


async def test_a_member_whose_row_was_removed_registers_again(
    world: World, sqlite_connect: Callable[[], Store]
) -> None:
    a = world.member("a", role="worker")
    await beat_at(world, 0, a)
    store = sqlite_connect()
    assert processes.forget_gone(store, timedelta(seconds=1), T0 + timedelta(seconds=5)) == 1
    await beat_at(world, 10, a)
    (row,) = processes.live(store, world.now(), STALE)
    assert (row["id"], row["host"], row["pid"], row["role"]) == ("a", "host-a", 100, "worker")
    assert row["heartbeat_at"] == world.now()
    assert a.holds_clock


async def test_a_stopped_member_hands_the_clock_on_at_once(
    world: World, sqlite_connect: Callable[[], Store]
) -> None:
    store = sqlite_connect()
    held_while_stopping: list[str | None] = []

    async def lose() -> None:
        held_while_stopping.append(processes.holder(store, "clock", world.now()))
        world.events.append(("a", "lose", world.at))

    a, b = world.member("a", on_lose=lose), world.member("b")
    await beat_at(world, 0, a, b)
    world.move_to(1)
    await a.stop()
    assert held_while_stopping == ["a"]  # its scheduler stops before the lease is free
    assert not a.holds_clock
    await beat_at(world, 2, a, b)  # a stopped member beats no more

    assert world.events == [("a", "gain", 0), ("a", "lose", 1), ("b", "gain", 2)]
    (row,) = processes.gone(store, world.now(), STALE)
    assert (row["id"], row["stopped_at"]) == ("a", T0 + timedelta(seconds=1))
    assert a.beats == 1


async def test_a_member_that_takes_no_clock_only_heartbeats(
    world: World, sqlite_connect: Callable[[], Store]
) -> None:
    web = world.member("web", role="web", takes_clock=False)
    for seconds in (0, 10, 20, 100):
        await beat_at(world, seconds, web)
    assert not web.holds_clock
    assert world.events == []
    store = sqlite_connect()
    assert [row["role"] for row in processes.live(store, world.now(), STALE)] == ["web"]
    assert processes.holder(store, "clock", world.now()) is None


async def test_a_clock_that_fails_to_start_is_let_go_for_another_to_take(
    world: World, sqlite_connect: Callable[[], Store], caplog: pytest.LogCaptureFixture
) -> None:
    starts: list[float] = []

    async def broken() -> None:
        starts.append(world.at)
        raise RuntimeError("scheduler would not start")

    a, b = world.member("a", on_gain=broken), world.member("b")
    with caplog.at_level(logging.ERROR, logger="bot.cluster"):
        await beat_at(world, 0, a)
    assert not a.holds_clock
    assert "starting the clock failed on a" in caplog.text
    store = sqlite_connect()
    assert processes.holder(store, "clock", world.now()) is None
    await beat_at(world, 1, b)
    assert b.holds_clock
    assert starts == [0]


async def test_run_beats_every_interval_until_stopped_even_while_the_database_fails(
    world: World,
) -> None:
    a = world.member("a", interval=5.0)
    world.switch.down = True
    task = asyncio.create_task(a.run())
    for _ in range(5000):
        if world.at >= 100 or task.done():
            break
        await asyncio.sleep(0.001)
    assert not task.done()
    await a.stop()
    await asyncio.wait_for(task, 5)

    assert a.failures >= 20
    assert a.beats == 0
    assert set(world.time.sleeps) == {5.0}
    assert task.exception() is None


async def test_a_database_call_that_hangs_lets_the_clock_go_by_its_deadline(
    sqlite_connect: Callable[[], Store],
) -> None:
    # Real time, short: the fake clock cannot make a blocked thread answer late.
    world = World(sqlite_connect)
    lost = asyncio.Event()
    loop = asyncio.get_running_loop()
    lost_at: list[float] = []

    async def lose() -> None:
        lost_at.append(loop.time())
        lost.set()

    calls: list[float] = []

    def counted(store: Store) -> datetime:
        calls.append(loop.time())
        return processes.database_now(store)

    a = world.member(
        "a",
        interval=0.4,
        ttl=1.0,
        on_lose=lose,
        clock=counted,
        monotonic=loop.time,
        sleep=asyncio.sleep,
    )
    await a.beat()
    assert a.holds_clock
    deadline = a.clock_deadline
    assert deadline is not None
    world.switch.hung = True
    task = asyncio.create_task(a.run())
    try:
        await asyncio.wait_for(lost.wait(), 5)
        # The beats' calls time out at 0.4 s, then at the deadline (1 s), not at 1.2 s.
        assert deadline <= lost_at[0] < deadline + 0.15
        assert not a.holds_clock
        assert a.failures == 2
    finally:
        world.switch.hung = False
        world.switch.resume.set()
        await a.stop()
        await asyncio.wait_for(task, 5)
    # The first beat's call, the one that hung, and stop's: the beats while it hung queued
    # none (each would have run once the database answered again).
    assert len(calls) == 3


async def test_run_goes_on_after_a_beat_that_fails_for_a_bug(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> Store:
        raise RuntimeError("a bug")

    a = world.member("a")
    a.connect = broken
    task = asyncio.create_task(a.run())
    with caplog.at_level(logging.ERROR, logger="bot.cluster"):
        for _ in range(2000):
            if world.at >= 30 or task.done():
                break
            await asyncio.sleep(0.001)
    assert not task.done()
    await a.stop()
    await asyncio.wait_for(task, 5)
    assert a.failures >= 3
    assert "RuntimeError: a bug" in caplog.text  # a bug keeps its traceback


def test_a_member_refuses_an_unknown_role_or_an_interval_past_its_ttl(world: World) -> None:
    with pytest.raises(ValueError, match="role"):
        world.member("a", role="leader")
    with pytest.raises(ValueError, match="interval"):
        world.member("a", interval=30.0, ttl=30.0)
