"""Many `/papers` commands at once through the Slack HTTP endpoint.

Lookups run in their own threads, changes in a `ChangeWriter` of their own that commits
the changes queued meanwhile together; a command that queues may still be answered in its
acknowledgement. No timings: events hold handlers where a test needs them held.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.services import ChangeWriter
from bot.slack import app as slack_app
from bot.slack import endpoint as slack_endpoint
from bot.slack.app import WORKING
from db import open_db
from db.channels import active_subscriptions
from db.errors import Conflict
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    HttpClient,
    make_services,
    signed_headers,
    slash_body,
    start_http,
)
from tests.fakes.waiting import eventually

CHANNEL = "slack:T0001/C0001"


@pytest.fixture
async def client(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> AsyncIterator[HttpClient]:
    started = await start_http(make_services(tmp_path, seed_paths, catalog, fake_slack), fake_slack)
    yield started
    await started.close()


def hold_commands(
    monkeypatch: pytest.MonkeyPatch, held: Callable[[str], bool] = lambda text: True
) -> tuple[threading.Event, list[str]]:
    """Commands whose text `held` accepts wait for the returned event; others run at once.
    The list records the held commands that started."""
    release, started = threading.Event(), []
    real_handle = slack_app.handle

    def holding(text: str, ctx: Any) -> Any:
        if held(text):
            started.append(text)
            release.wait(30)
        return real_handle(text, ctx)

    monkeypatch.setattr(slack_app, "handle", holding)
    return release, started


@pytest.fixture
def held_finds(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`find` commands wait for the returned event; other commands run at once. The list
    records the finds that started."""
    release, started = hold_commands(monkeypatch, lambda text: text.startswith("find"))
    yield release, started
    release.set()


async def post(client: HttpClient, text: str, name: str, fake: FakeSlack) -> Any:
    body = slash_body(text, fake.response_url(name))
    response = await client.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 200
    return await response.json()


async def test_a_second_lookup_is_answered_while_the_first_is_blocked(
    client: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, started = hold_commands(monkeypatch, lambda text: text == "find policy")
    try:
        client.endpoint.ack_budget = 0.01  # the held one is "Working on it…" at once
        assert (await post(client, "find policy", "r1", fake_slack))["text"] == WORKING
        assert await eventually(lambda: started == ["find policy"])
        client.endpoint.ack_budget = 30
        second = await asyncio.wait_for(post(client, "find offline", "r2", fake_slack), 20)
        assert "Top" in second["text"] and not release.is_set()
    finally:
        release.set()
    assert await eventually(lambda: len(fake_slack.responses) == 1)


async def test_a_change_is_answered_while_every_lookup_thread_is_blocked(
    client: HttpClient, fake_slack: FakeSlack, held_finds: Any
) -> None:
    """Changes queued behind slow lookups in one pool: with both threads on lookups,
    `/papers subscribe` waited for them."""
    release, started = held_finds
    client.endpoint.ack_budget = 0.01
    for n in range(3):  # two take both lookup threads, one queues
        assert (await post(client, f"find policy {n}", f"r{n}", fake_slack))["text"] == WORKING
    assert await eventually(lambda: len(started) == 2)
    client.endpoint.ack_budget = 30
    answer = await asyncio.wait_for(post(client, "subscribe offline-rl", "rs", fake_slack), 20)
    assert "subscribed this channel" in answer["text"]
    assert not release.is_set() and len(started) == 2
    db = open_db(client.services.db_path)
    assert [row["topic_id"] for row in active_subscriptions(db, CHANNEL)] == ["offline-rl"]


async def test_a_queued_command_ready_within_the_wait_is_answered_in_the_ack(
    client: HttpClient, fake_slack: FakeSlack, held_finds: Any
) -> None:
    """A command that has to queue is not always "Working on it…" at once, its answer a
    second HTTP exchange through response_url: when the threads free up at once, the
    acknowledgement carries the answer."""
    release, started = held_finds
    client.endpoint.ack_budget = 60
    client.endpoint.queued_wait = 60  # longer than this test: only the answer ends the wait
    held = [asyncio.ensure_future(post(client, f"find policy {n}", f"r{n}", fake_slack))
            for n in (1, 2)]  # fmt: skip
    assert await eventually(lambda: len(started) == 2)
    queued = asyncio.ensure_future(post(client, "topics", "r3", fake_slack))
    assert await eventually(lambda: client.endpoint._busy[False] == 3)
    release.set()
    answer = await asyncio.wait_for(queued, 20)
    assert answer["text"] != WORKING and "topics" in answer["text"]
    for response in await asyncio.gather(*held):
        assert "Top" in response["text"]
    assert fake_slack.responses == []


# The group commit itself, on a plain table.


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "w.db"
    db = open_db(path)
    db.execute("create table t (n integer primary key)")
    db.conn.commit()
    return path


def rows(path: Path) -> list[int]:
    return [row[0] for row in open_db(path).execute("select n from t order by n").fetchall()]


def refuse_13(store: Path) -> None:
    """A trigger on `t` whose RAISE(ROLLBACK) ends the whole transaction that inserts 13."""
    db = open_db(store)
    db.execute(
        "create trigger no13 before insert on t when new.n = 13 "
        "begin select raise(rollback, 'thirteen'); end"
    )
    db.conn.commit()


def per_thread(store: Path) -> Any:
    """Each thread's own connection, as `Services.db` gives them."""
    local = threading.local()

    def connect() -> Any:
        if not hasattr(local, "db"):
            local.db = open_db(store)
        return local.db

    return connect


def test_changes_queued_meanwhile_are_committed_together(store: Path) -> None:
    connect = per_thread(store)
    writer = ChangeWriter(connect)
    gate = threading.Event()
    entered = threading.Event()

    def insert(n: int, wait: bool = False) -> int:
        if wait:
            entered.set()
            gate.wait(30)
        connect().execute("insert into t (n) values (?)", [n])
        if n == 3:
            raise ValueError("this one fails")
        return n

    try:
        first = writer.submit(insert, 1, True)
        assert entered.wait(30)
        rest = [writer.submit(insert, n) for n in (2, 3, 4)]
        assert rows(store) == []  # nothing is visible, or answered, before its commit
        gate.set()
        assert first.result(30) == 1
        assert [rest[0].result(30), rest[2].result(30)] == [2, 4]
        with pytest.raises(ValueError):
            rest[1].result(30)
        assert writer.batches == 2  # 1 alone, then 2, 3 and 4 in one transaction
        assert rows(store) == [1, 2, 4]  # 3's own insert was undone, not its neighbours'
    finally:
        gate.set()
        writer.shutdown()


def hold_writer(writer: ChangeWriter) -> tuple[threading.Event, Any]:
    """Submit a change that runs until the returned event is set, and wait until it runs:
    what is submitted meanwhile queues. Returns (the event, the held change's future)."""
    gate, entered = threading.Event(), threading.Event()

    def hold() -> str:
        entered.set()
        gate.wait(30)
        return "held"

    first = writer.submit(hold)
    assert entered.wait(30)
    return gate, first


def held_batch(writer: ChangeWriter, *work: Any) -> list[Any]:
    """Submit `work` (functions) so that they run as one batch: behind a held first one."""
    gate, first = hold_writer(writer)
    futures = [writer.submit(fn) for fn in work]
    gate.set()
    assert first.result(30) == "held"
    return futures


def test_a_failed_commit_fails_every_change_of_its_batch(store: Path) -> None:
    db = open_db(store)
    db.execute("create table parent (id integer primary key)")
    db.execute("create table child (p integer references parent(id) deferrable initially deferred)")
    db.conn.commit()
    connect = per_thread(store)
    writer = ChangeWriter(connect)

    def good() -> str:
        connect().execute("insert into t (n) values (7)")
        return "ok"

    def orphan() -> str:  # a deferred constraint: only the COMMIT finds it broken
        connect().execute("insert into child (p) values (99)")
        return "ok too"

    for future in held_batch(writer, good, orphan):
        with pytest.raises(Conflict):
            future.result(30)
    writer.shutdown()
    assert rows(store) == []


def test_a_writer_shut_down_cancels_what_is_queued(store: Path) -> None:
    connect = per_thread(store)
    writer = ChangeWriter(connect)
    gate, first = hold_writer(writer)
    queued = writer.submit(lambda: connect().execute("insert into t (n) values (1)"))
    writer.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert first.result(30) == "held" and queued.cancelled()
    with pytest.raises(RuntimeError):
        writer.submit(lambda: None)
    writer.shutdown()
    assert rows(store) == []


def outcome(future: Any) -> Any:
    try:
        return future.result(30)
    except Exception as exc:
        return type(exc).__name__


def test_a_failure_that_rolls_back_the_whole_transaction_fails_the_changes_before_it(
    store: Path,
) -> None:
    """SQLite ends the whole transaction on some failures (a full disk, an I/O error, a
    trigger's RAISE(ROLLBACK)). The changes of the batch before it must not be told "done"
    and lost, nor the ones after it run in a deferred transaction of their own."""
    refuse_13(store)
    connect = per_thread(store)
    writer = ChangeWriter(connect)
    probes: list[str] = []

    def insert(n: int) -> Any:
        def work() -> int:
            if n == 2:  # does the writer hold the write lock before writing (IMMEDIATE)?
                other = sqlite3.connect(store, timeout=0)
                try:
                    other.execute("begin immediate")
                    probes.append("free")
                    other.rollback()
                except sqlite3.OperationalError:
                    probes.append("held")
                finally:
                    other.close()
            connect().execute("insert into t (n) values (?)", [n])
            return n

        return work

    try:
        futures = held_batch(writer, insert(1), insert(13), insert(2))
        assert [outcome(future) for future in futures] == ["ChangeLost", "Conflict", 2]
        assert probes == ["held"]
        assert rows(store) == [2]
    finally:
        writer.shutdown()


def test_a_change_that_commits_by_itself_is_done_with_those_before_it(store: Path) -> None:
    refuse_13(store)
    connect = per_thread(store)
    writer = ChangeWriter(connect)

    def insert(n: int, commit: bool = False) -> Any:
        def work() -> int:
            connect().execute("insert into t (n) values (?)", [n])
            if commit:
                connect().conn.commit()
            return n

        return work

    try:
        futures = held_batch(writer, insert(1), insert(5, commit=True), insert(13))
        assert [outcome(future) for future in futures] == [1, 5, "Conflict"]
        assert rows(store) == [1, 5]
    finally:
        writer.shutdown()


def test_a_writer_that_fails_on_a_batch_answers_it_and_runs_the_next(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected failure in the writer's own code ended its thread: that batch's askers,
    and everyone's changes after them, waited for ever."""
    connect = per_thread(store)
    writer = ChangeWriter(connect)
    real_run, calls = writer._run, []

    def run_failing_once(batch: Any) -> None:
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("a bug in the writer")
        real_run(batch)

    monkeypatch.setattr(writer, "_run", run_failing_once)
    try:
        first = writer.submit(lambda: connect().execute("insert into t (n) values (1)"))
        with pytest.raises(RuntimeError, match="a bug in the writer"):
            first.result(30)

        def second() -> int:
            connect().execute("insert into t (n) values (2)")
            return 2

        assert writer.submit(second).result(30) == 2
        assert rows(store) == [2]
    finally:
        writer.shutdown()


async def test_a_stop_tells_queued_changes_they_did_not_run(
    client: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change queued in the writer when the stop begins is cancelled and its asker told
    so (not run during the stop, nor "done"); the one running finishes and is answered."""
    release, started = hold_commands(monkeypatch)
    try:
        client.endpoint.ack_budget = client.endpoint.queued_wait = 0.01
        assert (await post(client, "subscribe offline-rl", "r1", fake_slack))["text"] == WORKING
        assert await eventually(lambda: started == ["subscribe offline-rl"])
        assert (await post(client, "subscribe rlhf", "r2", fake_slack))["text"] == WORKING
        closing = asyncio.ensure_future(client.endpoint.close(grace=20))
        assert await eventually(lambda: fake_slack.responses)  # the queued one, told at once
        assert fake_slack.responses[0]["text"] == slack_endpoint.STOPPED
    finally:
        release.set()
    await asyncio.wait_for(closing, 30)
    assert started == ["subscribe offline-rl"]
    assert len(fake_slack.responses) == 2
    assert "subscribed this channel" in fake_slack.responses[1]["text"]
    db = open_db(client.services.db_path)
    assert [row["topic_id"] for row in active_subscriptions(db, CHANNEL)] == ["offline-rl"]


async def test_a_change_still_in_its_permission_check_at_a_stop_is_told_it_did_not_run(
    client: HttpClient,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The check (users.info, for PAPERBOY_SLACK_MANAGERS=admins) awaits Slack; a stop
    meanwhile shuts the writer down, and the change must not then meet a closed executor
    (its asker told "something went wrong on my side", an ERROR traceback in the log)."""
    checking, release = asyncio.Event(), asyncio.Event()

    async def slow_check(*args: Any) -> bool:
        checking.set()
        await release.wait()
        return True

    monkeypatch.setattr(slack_app, "may_change", slow_check)
    client.endpoint.ack_budget = 0.01
    assert (await post(client, "subscribe offline-rl", "r1", fake_slack))["text"] == WORKING
    await asyncio.wait_for(checking.wait(), 20)
    closing = asyncio.ensure_future(client.endpoint.close(grace=20))
    assert await eventually(lambda: client.endpoint._closing)
    release.set()
    await asyncio.wait_for(closing, 30)
    assert [answer["text"] for answer in fake_slack.responses] == [slack_endpoint.STOPPED]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    db = open_db(client.services.db_path)
    assert active_subscriptions(db, CHANNEL) == []


async def test_a_command_cut_off_before_its_ack_by_the_stop_is_still_answered(
    client: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`paperboy run` stops the HTTP server first (2 s for requests in flight) and then the
    endpoint. With PAPERBOY_SLACK_ACK_SECONDS up to 2.5 a command can still be waiting for
    its acknowledgement when the server cuts its request off: its answer (here a change that
    is stored) must not go nowhere, the asker seeing Slack's failure for a change made."""
    release, started = hold_commands(monkeypatch)
    client.endpoint.ack_budget = 60  # still waiting for its acknowledgement at the stop
    asking = asyncio.ensure_future(post(client, "subscribe offline-rl", "r1", fake_slack))
    try:
        assert await eventually(lambda: started == ["subscribe offline-rl"])
        await client.server.stop(grace=0.01)  # cuts the request off
        closing = asyncio.ensure_future(client.endpoint.close(grace=20))
    finally:
        release.set()
    await asyncio.wait_for(closing, 30)
    with contextlib.suppress(Exception):
        await asking  # the connection was closed: no acknowledgement
    assert [answer["text"] for answer in fake_slack.responses] == [
        "@alice subscribed this channel to Offline RL (`offline-rl`)."
    ]
    db = open_db(client.services.db_path)
    assert [row["topic_id"] for row in active_subscriptions(db, CHANNEL)] == ["offline-rl"]
