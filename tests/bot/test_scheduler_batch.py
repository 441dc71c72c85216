"""The channels due together are built together: one `build_digests` call for
the channels firing at the same minute, each digest as it would be built alone, and one
channel's failure fails no other. No test times anything: calls are counted."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import bot.scheduler as scheduler_module
import digests.digest as digest_module
from bot.local import LocalPoster
from bot.scheduler import DigestScheduler
from bot.services import Services
from db import open_db
from db.digests import failures
from db.errors import Busy
from digests.digest import build_digest
from tests.fakes.clock import Clock
from tests.fakes.scheduler_batch import CHANNELS, DUE, clock, fire_all, services  # noqa: F401
from tests.fakes.waiting import eventually


def local_lines(services: Services, channel: str) -> list[dict[str, Any]]:
    path = services.settings.local_dir / f"{channel.split(':')[1]}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def spy_builds(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The channels of each `build_digests` call the scheduler makes."""
    calls: list[list[str]] = []
    real = scheduler_module.build_digests

    def counted(db: Any, channels: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(list(channels))
        return real(db, calls[-1], *args, **kwargs)

    monkeypatch.setattr(scheduler_module, "build_digests", counted)
    return calls


def recorded(db_path: Path, week: str) -> dict[str, Any]:
    """Each channel's recorded digest of `week`: built_at, since, and its items."""
    db = open_db(db_path)
    found = {}
    for row in db.query("select * from digests where week = ? order by channel", [week]):
        items = [
            (item["paper_id"], item["rank"], item["topics"], item["score"], item["from_archive"])
            for item in db.query(
                "select * from digest_items where digest_id = ? order by rank", [row["id"]]
            )
        ]
        found[row["channel"]] = (row["built_at"], row["since"], row["topics"], items)
    return found


async def test_fifty_channels_due_together_are_built_by_one_call_as_one_at_a_time(
    services: Services, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.now = DUE
    alone = tmp_path / "alone.db"  # the same database, for building one channel at a time
    services.db().execute("pragma wal_checkpoint(truncate)")
    shutil.copy(services.db_path, alone)
    calls = spy_builds(monkeypatch)
    reads: list[str] = []
    real_read = digest_module._Window.read

    def read(*args: Any, **kwargs: Any) -> Any:
        reads.append("window")
        return real_read(*args, **kwargs)

    monkeypatch.setattr(digest_module._Window, "read", read)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    await fire_all(scheduler)

    assert [sorted(channels) for channels in calls] == [CHANNELS]  # one call, all fifty
    assert reads == ["window"]  # the new papers read once, for all of them
    for channel in CHANNELS:
        [line] = local_lines(services, channel)  # each queued and delivered, once
        assert "week of 7 Dec 2026" in line["text"]

    db = open_db(alone)
    for channel in CHANNELS:  # the scheduler's path before: one channel at a time
        build_digest(db, channel, DUE, catalog=services.catalog, settings=services.settings)
    batched, one_by_one = recorded(services.db_path, "2026-W50"), recorded(alone, "2026-W50")
    assert sorted(batched) == CHANNELS
    assert batched == one_by_one
    assert sum(len(items) for *_, items in batched.values()) > 50  # not empty digests


async def test_one_channel_whose_build_fails_is_retried_alone(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its failure stops `build_digests` (no digest of its chunk is recorded): the others
    are built all the same, and only it is recorded as failed, and retried."""
    clock.now = DUE
    broken = CHANNELS[10]
    calls = spy_builds(monkeypatch)
    real_select = digest_module._select

    def select(db: Any, channel: str, *args: Any, **kwargs: Any) -> Any:
        if channel == broken:
            raise KeyError("venue")  # say, a paper that breaks this channel's digest
        return real_select(db, channel, *args, **kwargs)

    monkeypatch.setattr(digest_module, "_select", select)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    results = await asyncio.gather(*(scheduler.run_digest(channel) for channel in CHANNELS))

    states = {result.channel: result.state for result in results if result}
    assert states == {channel: "retrying" if channel == broken else "done" for channel in CHANNELS}
    for channel in CHANNELS:
        assert len(local_lines(services, channel)) == (0 if channel == broken else 1)
    [failure] = failures(services.db())
    assert failure["channel"] == broken and "KeyError" in failure["last_error"]
    # the batch, then one at a time (in the order they came) up to the culprit, then the
    # rest together again
    first, *singles, rest = calls
    assert len(first) == 50 and {len(channels) for channels in singles} == {1}
    assert singles[-1] == [broken] and len(rest) == 50 - len(singles)

    monkeypatch.setattr(digest_module, "_select", real_select)  # fixed
    clock.now = datetime.fromisoformat(failure["next_attempt_at"])
    assert scheduler.retry_failed_builds() == [broken]
    assert await eventually(lambda: local_lines(services, broken))
    await scheduler.stop()
    [line] = local_lines(services, broken)
    assert "week of 7 Dec 2026" in line["text"]
    assert failures(services.db()) == []
    for channel in CHANNELS:  # nothing twice
        assert len(local_lines(services, channel)) == 1


async def test_one_channel_whose_messages_fail_is_retried_alone(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.now = DUE
    broken = CHANNELS[3]
    calls = spy_builds(monkeypatch)
    real = scheduler_module.platform_messages

    def messages(digest: Any, *args: Any) -> Any:
        if digest.channel == broken:
            raise ValueError("unrenderable")
        return real(digest, *args)

    monkeypatch.setattr(scheduler_module, "platform_messages", messages)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    results = await asyncio.gather(*(scheduler.run_digest(channel) for channel in CHANNELS))
    assert len(calls) == 1
    states = {result.channel: result.state for result in results if result}
    assert states == {channel: "retrying" if channel == broken else "done" for channel in CHANNELS}
    [failure] = failures(services.db())
    assert failure["channel"] == broken and "unrenderable" in failure["last_error"]


async def test_a_database_failure_of_the_batch_fails_each_channel_for_a_retry(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A locked database fails the batch and the channel tried alone after it: no
    channel's doing, so every channel is recorded as failed (each retried with backoff,
    together again), not tried one by one, each waiting out the lock."""

    clock.now = DUE
    calls: list[int] = []

    def locked(db: Any, channels: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(list(channels)))
        raise Busy("database is locked")

    monkeypatch.setattr(scheduler_module, "build_digests", locked)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    results = await asyncio.gather(*(scheduler.run_digest(channel) for channel in CHANNELS))
    assert calls == [50, 1]
    assert {result.state for result in results if result} == {"retrying"}
    assert sorted(row["channel"] for row in failures(services.db())) == CHANNELS

    monkeypatch.undo()  # the lock is gone: the retries go, together
    calls_after = spy_builds(monkeypatch)
    clock.now += timedelta(seconds=31)
    assert sorted(scheduler.retry_failed_builds()) == CHANNELS
    assert await eventually(lambda: all(local_lines(services, c) for c in CHANNELS))
    await scheduler.stop()
    assert len(calls_after) < 5
    assert failures(services.db()) == []
    for channel in CHANNELS:
        assert len(local_lines(services, channel)) == 1


async def test_a_channel_whose_queueing_fails_leaves_nothing_queued_and_fails_alone(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digests are queued many to a transaction: one channel's failure rolls back its
    own messages only, and the others' are committed."""
    clock.now = DUE
    broken = CHANNELS[7]
    real = scheduler_module.queue_digest

    def queue(db: Any, digest: Any, *args: Any) -> Any:
        queued = real(db, digest, *args)
        if digest.channel == broken:
            raise RuntimeError("after its insert")
        return queued

    monkeypatch.setattr(scheduler_module, "queue_digest", queue)
    scheduler = DigestScheduler(services, {}, configured={"local"})  # nothing sent
    results = await asyncio.gather(*(scheduler.run_digest(channel) for channel in CHANNELS))
    states = {result.channel: result.state for result in results if result}
    assert states[broken] == "retrying"
    assert {states[channel] for channel in CHANNELS if channel != broken} == {"nothing"}
    queued = {row["channel"] for row in services.db().query("select distinct channel from outbox")}
    assert queued == set(CHANNELS) - {broken}
    [failure] = failures(services.db())
    assert failure["channel"] == broken
