"""db/processes.py: process rows kept alive by heartbeats, and leases one holder at a time
takes, renews and loses at expiry, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from db import open_db, processes
from db.store import Store
from tests.fakes import postgres

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)
STALE = timedelta(seconds=30)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_registered_process_is_live_until_its_heartbeat_is_stale(store: Store) -> None:
    processes.register(store, "p1", "host-a", 101, "all", at(0))
    processes.register(store, "p2", "host-b", 202, "worker", at(0))
    assert processes.heartbeat(store, "p2", at(25))

    live = processes.live(store, at(35), STALE)
    assert [(row["id"], row["host"], row["pid"], row["role"]) for row in live] == [
        ("p2", "host-b", 202, "worker")
    ]
    assert live[0]["heartbeat_at"] == at(25)
    assert live[0]["started_at"] == at(0)
    assert live[0]["stopped_at"] is None
    assert [row["id"] for row in processes.gone(store, at(35), STALE)] == ["p1"]
    # At exactly stale_after since its last beat a process still counts as live.
    assert [row["id"] for row in processes.live(store, at(30), STALE)] == ["p1", "p2"]
    assert processes.gone(store, at(30), STALE) == []


def test_a_stopped_process_is_gone_at_once_and_its_heartbeat_says_register_again(
    store: Store,
) -> None:
    processes.register(store, "p1", "host-a", 101, "web", at(0))
    processes.stop(store, "p1", at(5))

    assert processes.live(store, at(5), STALE) == []
    (row,) = processes.gone(store, at(5), STALE)
    assert row["stopped_at"] == at(5)
    assert not processes.heartbeat(store, "p1", at(10))
    processes.register(store, "p1", "host-a", 101, "web", at(10))
    assert processes.heartbeat(store, "p1", at(12))
    assert [row["id"] for row in processes.live(store, at(12), STALE)] == ["p1"]
    assert processes.live(store, at(12), STALE)[0]["started_at"] == at(0)


def test_the_heartbeat_of_a_removed_row_is_false(store: Store) -> None:
    assert not processes.heartbeat(store, "never", at(0))
    processes.register(store, "p1", "host-a", 101, "all", at(0))
    assert processes.forget_gone(store, timedelta(seconds=60), at(61)) == 1
    assert not processes.heartbeat(store, "p1", at(62))


def test_forget_gone_keeps_live_and_recently_gone_processes(store: Store) -> None:
    processes.register(store, "old", "h", 1, "all", at(0))
    processes.register(store, "stopped", "h", 2, "all", at(0))
    processes.register(store, "live", "h", 3, "all", at(0))
    processes.stop(store, "stopped", at(50))
    processes.heartbeat(store, "live", at(95))

    assert processes.forget_gone(store, timedelta(seconds=60), at(100)) == 1
    assert sorted(row["id"] for row in processes.gone(store, at(100), STALE)) == ["stopped"]
    assert [row["id"] for row in processes.live(store, at(100), STALE)] == ["live"]


def test_register_refuses_an_unknown_role_and_naive_times(store: Store) -> None:
    with pytest.raises(ValueError, match="role"):
        processes.register(store, "p1", "h", 1, "leader", at(0))
    with pytest.raises(ValueError, match="timezone"):
        processes.register(store, "p1", "h", 1, "all", datetime(2026, 12, 2, 9, 0))
    assert processes.live(store, at(0), STALE) == []


def test_a_lease_is_held_by_one_until_it_expires_then_another_takes_it(store: Store) -> None:
    assert processes.holder(store, "clock", at(0)) is None
    assert processes.acquire(store, "clock", "a", at(0), TTL)
    assert not processes.acquire(store, "clock", "b", at(1), TTL)
    assert processes.holder(store, "clock", at(29.999)) == "a"
    assert not processes.acquire(store, "clock", "b", at(29.999), TTL)

    assert processes.holder(store, "clock", at(30)) is None
    assert processes.acquire(store, "clock", "b", at(30), TTL)
    assert processes.holder(store, "clock", at(31)) == "b"
    # The one it expired on cannot renew it any more: it must take it afresh, when free.
    assert not processes.acquire(store, "clock", "a", at(31), TTL)


def test_renewing_a_lease_keeps_it_past_its_first_expiry(store: Store) -> None:
    assert processes.acquire(store, "clock", "a", at(0), TTL)
    assert processes.acquire(store, "clock", "a", at(20), TTL)
    assert not processes.acquire(store, "clock", "b", at(45), TTL)
    assert processes.holder(store, "clock", at(49.9)) == "a"
    assert processes.acquire(store, "clock", "b", at(50), TTL)


def test_leases_of_other_names_are_apart(store: Store) -> None:
    assert processes.acquire(store, "clock", "a", at(0), TTL)
    assert processes.acquire(store, "other", "b", at(0), TTL)
    assert processes.holder(store, "other", at(1)) == "b"


def test_release_frees_only_the_holders_lease(store: Store) -> None:
    assert processes.acquire(store, "clock", "a", at(0), TTL)
    assert not processes.release(store, "clock", "b")
    assert processes.holder(store, "clock", at(1)) == "a"
    assert processes.release(store, "clock", "a")
    assert processes.holder(store, "clock", at(1)) is None
    assert processes.acquire(store, "clock", "b", at(2), TTL)


def test_database_now_is_the_servers_utc_time(store: Store) -> None:
    before = datetime.now(UTC)
    now = processes.database_now(store)
    after = datetime.now(UTC)
    assert now.tzinfo is not None
    # The server's clock is this machine's: its time lies between the two reads (SQLite
    # gives milliseconds, so allow one for the rounding).
    assert before - timedelta(milliseconds=1) <= now <= after + timedelta(milliseconds=1)


Connect = Callable[[], Store]


@pytest.fixture(params=["sqlite", "postgresql"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Connect]:
    """Opens a new connection to one freshly migrated database (a SQLite file, or
    PostgreSQL) each call: each racing thread opens (and closes) its own, as processes do;
    those opened in the test's own thread are closed at its end."""
    opened: list[Store] = []
    main = threading.get_ident()

    def keep(store: Store) -> Store:
        if threading.get_ident() == main:
            opened.append(store)
        return store

    if request.param == "sqlite":

        def new() -> Store:
            return keep(Store(open_db(tmp_path / "p.db").conn))

        new().close()  # creates and migrates the file before the threads start
    else:
        server: postgres.Server = request.getfixturevalue("postgres_server")
        name = server.fresh_database()

        def new() -> Store:
            return keep(Store.connect(server.url(name)))

    try:
        yield new
    finally:
        for store in opened:
            store.close()
        if request.param == "postgresql":
            server.drop(name)


def race(connect: Connect, rounds: int, now: datetime) -> dict[str, list[int]]:
    """Holders a and b, each on its own connection in its own thread, try to acquire the
    lease clock-N at the same moment, for N in range(rounds); the rounds each won."""
    barrier = threading.Barrier(2, timeout=30)
    won: dict[str, list[int]] = {"a": [], "b": []}
    failed: list[BaseException] = []

    def run(holder: str) -> None:
        try:
            store = connect()
            try:
                for number in range(rounds):
                    barrier.wait()
                    if processes.acquire(store, f"clock-{number}", holder, now, TTL):
                        won[holder].append(number)
            finally:
                store.close()
        except BaseException as exc:  # handed to the test
            failed.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(holder,)) for holder in won]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failed, failed
    assert not any(thread.is_alive() for thread in threads)
    return won


def test_two_holders_racing_for_a_free_lease_never_both_get_it(connect: Connect) -> None:
    won = race(connect, 40, at(0))

    assert sorted(won["a"] + won["b"]) == list(range(40))
    store = connect()
    for number in range(40):
        expected = "a" if number in won["a"] else "b"
        assert processes.holder(store, f"clock-{number}", at(1)) == expected


def test_an_expired_lease_goes_to_exactly_one_of_two_racing_takers(connect: Connect) -> None:
    store = connect()
    for number in range(20):
        assert processes.acquire(store, f"clock-{number}", "dead", at(0), TTL)

    won = race(connect, 20, at(31))

    assert sorted(won["a"] + won["b"]) == list(range(20))
