"""The scheduler and reliable delivery, all on a fake clock: no test waits for a cron."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.delivery import PermanentError, TransientError, deliver_channel
from bot.inbox import InboxResult
from bot.local import LocalPoster
from bot.scheduler import DigestScheduler
from bot.services import Services
from db import open_db
from db.channels import get_channel, set_schedule
from db.errors import Busy
from db.outbox import messages_for_digest
from digests.channels import ChannelRef
from digests.commands import handle
from digests.schedule import Schedule
from tests.conftest import NOW
from tests.fakes.clock import Clock
from tests.fakes.scheduler import clock, fires, local_lines, services  # noqa: F401
from tests.fakes.waiting import eventually


class RecordingPoster:
    """A platform that accepts everything and remembers it, in order."""

    platform = "slack"

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        self.sent.append((str(channel), payload))
        return f"ts{len(self.sent)}"


def command(services: Services, channel: str, text: str) -> None:
    reply = handle(text, Context_for(services, channel))
    assert not reply.error, reply.text


def Context_for(services: Services, channel: str):  # type: ignore[no-untyped-def]
    return services.context(channel, "tester")


# --- fire times ----------------------------------------------------------------------


def test_a_week_of_schedules_across_three_timezones() -> None:
    start = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)  # Monday
    berlin = Schedule("mon", "09:00", "Europe/Berlin")
    new_york = Schedule("wed", "16:30", "America/New_York")
    tokyo = Schedule("sun", "08:00", "Asia/Tokyo")
    assert fires(berlin, start, 2) == [
        datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
        datetime(2026, 12, 7, 8, 0, tzinfo=UTC),
    ]
    assert fires(new_york, start, 1) == [datetime(2026, 12, 2, 21, 30, tzinfo=UTC)]
    assert fires(tokyo, start, 1) == [datetime(2026, 12, 5, 23, 0, tzinfo=UTC)]  # Sunday 08:00 JST
    # day names, never numbers: "mon" is Monday (APScheduler's 0 would be Monday too, crontab's Sunday)
    assert berlin.trigger().fields[4].expressions[0].first == 0


def test_dst_spring_forward_does_not_skip_a_week() -> None:
    # Sunday 02:30 in Berlin does not exist on 29 March 2026 (02:00 -> 03:00).
    schedule = Schedule("sun", "02:30", "Europe/Berlin")
    times = fires(schedule, datetime(2026, 3, 20, tzinfo=UTC), 3)
    assert times == [
        datetime(2026, 3, 22, 1, 30, tzinfo=UTC),  # 02:30 CET
        datetime(2026, 3, 29, 1, 30, tzinfo=UTC),  # 03:30 CEST: that Sunday still fires, once
        datetime(2026, 4, 5, 0, 30, tzinfo=UTC),  # 02:30 CEST
    ]
    from digests.schedule import week_key

    assert [week_key(t, schedule.timezone) for t in times] == ["2026-W12", "2026-W13", "2026-W14"]


def test_dst_fall_back_fires_twice_but_the_week_is_one() -> None:
    # Sunday 02:30 happens twice on 25 October 2026 (03:00 -> 02:00); APScheduler fires in
    # both. The digest is per ISO week, so the second fire finds it built and sent.
    schedule = Schedule("sun", "02:30", "Europe/Berlin")
    times = fires(schedule, datetime(2026, 10, 18, tzinfo=UTC), 4)
    assert times == [
        datetime(2026, 10, 18, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 1, 30, tzinfo=UTC),
    ]
    from digests.schedule import week_key

    weeks = [week_key(t, schedule.timezone) for t in times]
    assert weeks == ["2026-W42", "2026-W43", "2026-W43", "2026-W44"]


async def test_the_repeated_autumn_hour_posts_once(services: Services, clock: Clock) -> None:
    command(services, "slack:T1/C1", "subscribe robotics")
    set_schedule(
        services.db(), "slack:T1/C1", "sun", "02:30", "Europe/Berlin", "t", NOW.isoformat()
    )
    poster = RecordingPoster()
    scheduler = DigestScheduler(services, {"slack": poster})
    schedule = Schedule("sun", "02:30", "Europe/Berlin")
    autumn = fires(schedule, datetime(2026, 10, 24, tzinfo=UTC), 2)
    assert autumn[1] - autumn[0] == timedelta(hours=1)  # APScheduler fires in both 02:30s
    services.db().execute(
        "update papers set added_at = ?", [(autumn[0] - timedelta(days=1)).isoformat()]
    )
    for moment in autumn:
        clock.now = moment
        await scheduler.run_digest("slack:T1/C1")
    assert len(poster.sent) == 1


# --- catch-up ----------------------------------------------------------------------------


def monday_nine(services: Services, channel: str) -> None:
    command(services, channel, "subscribe robotics")
    command(services, channel, "schedule monday 09:00 UTC")


async def test_catch_up_after_three_hours_down(services: Services, clock: Clock) -> None:
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    monday_nine(services, "local:lab")
    clock.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # due 09:00, up at 12:00
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    assert await scheduler.catch_up() == ["local:lab"]
    [line] = local_lines(services, "lab")
    assert "Paperboy digest for local:lab, week of 30 Nov 2026" in line["text"]
    # restarted right after: nothing posted again
    again = DigestScheduler(services, {"local": LocalPoster(services.settings.local_dir, clock)})
    clock.now += timedelta(minutes=5)
    assert await again.catch_up() == []
    await again.deliver_due()
    assert len(local_lines(services, "lab")) == 1


async def test_catch_up_compares_moments_not_local_clock_strings(
    services: Services, clock: Clock
) -> None:
    clock.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # 07:00 in New York: before it was due
    command(services, "local:ny", "subscribe robotics")
    command(services, "local:ny", "schedule monday 09:00 America/New_York")
    clock.now = datetime(2026, 11, 30, 17, 0, tzinfo=UTC)  # due 14:00 UTC, up at 17:00
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    assert await scheduler.catch_up() == ["local:ny"]
    [line] = local_lines(services, "ny")
    assert line["sent_at"] == "2026-11-30T17:00:00+00:00"


async def test_a_digest_built_but_never_queued_is_still_posted(
    services: Services, clock: Clock
) -> None:
    from digests.digest import build_digest

    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    monday_nine(services, "local:lab")
    due_at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    build_digest(
        services.db(), "local:lab", due_at, catalog=services.catalog, settings=services.settings
    )
    clock.now = due_at + timedelta(hours=2)  # e.g. printed with `paperboy digest`, or a crash
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    assert await scheduler.catch_up() == ["local:lab"]
    assert len(local_lines(services, "lab")) == 1
    assert await scheduler.catch_up() == []


async def test_no_catch_up_after_three_days_down(
    services: Services, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    monday_nine(services, "local:lab")
    clock.now = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)  # due Monday, up Thursday
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    assert await scheduler.catch_up() == []
    assert local_lines(services, "lab") == []
    assert "missed the digest for local:lab due 2026-11-30T09:00+00:00 (72 h ago" in caplog.text


async def test_nothing_to_catch_up_for_a_new_subscription(services: Services, clock: Clock) -> None:
    clock.now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # subscribed after Monday 09:00
    monday_nine(services, "local:lab")
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    assert await scheduler.catch_up() == []


# --- crashes, storms, pauses -------------------------------------------------------------


class GatedPoster(RecordingPoster):
    """Sends to the channel named `slow` only once `gate` is set."""

    def __init__(self, gate: asyncio.Event, slow: str) -> None:
        super().__init__()
        self.gate, self.slow = gate, slow

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if channel.name == self.slow:
            await self.gate.wait()
        return await super().send(channel, payload, thread_of)


class Killed(BaseException):
    """What the process dying looks like from inside (not an Exception: nothing catches it)."""


class DyingPoster(RecordingPoster):
    def __init__(self, die_at: int, accepted_before_dying: bool) -> None:
        super().__init__()
        self.die_at = die_at
        self.accepted = accepted_before_dying

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if len(self.sent) + 1 == self.die_at:
            if self.accepted:
                self.sent.append((str(channel), payload))  # the platform took it...
            raise Killed  # ... and the process died before recording it
        return await super().send(channel, payload, thread_of)


def four_part_digest(services: Services, channel: str) -> int:
    from bot.delivery import queue_digest
    from digests.digest import build_digest

    db = services.db()
    command(services, channel, "subscribe robotics")
    digest = build_digest(db, channel, NOW, catalog=services.catalog, settings=services.settings)
    parts = [({"text": f"part {n}"}, []) for n in range(1, 5)]
    queue_digest(db, digest, parts, NOW)
    assert digest.digest_id is not None
    return digest.digest_id


def dead_sender() -> str:
    """The claim of a process that has died: a real pid on this host, no longer running."""
    import subprocess

    process = subprocess.Popen(["true"])
    process.wait()
    from bot.delivery import MACHINE

    return f"{MACHINE}:{process.pid}"


@pytest.mark.parametrize("accepted", [False, True])
async def test_a_kill_mid_delivery_loses_nothing(services: Services, accepted: bool) -> None:
    digest_id = four_part_digest(services, "slack:T1/C1")
    dying = DyingPoster(die_at=3, accepted_before_dying=accepted)
    with pytest.raises(Killed):
        await deliver_channel(services.db(), dying, "slack:T1/C1", NOW)
    states = [m["state"] for m in messages_for_digest(services.db(), digest_id)]
    assert states == ["sent", "sent", "sending", "pending"]
    # the process is gone: its claim on message 3 no longer holds
    services.db().execute(
        "update outbox set claimed_by = ? where state = 'sending'", [dead_sender()]
    )
    restarted = RecordingPoster()
    result = await deliver_channel(
        services.db(), restarted, "slack:T1/C1", NOW + timedelta(minutes=1)
    )
    assert result.sent == 2
    received = [p["text"] for _, p in dying.sent + restarted.sent]
    assert received[:2] == ["part 1", "part 2"]
    # every part arrived; only the one in flight at the crash may have arrived twice
    assert sorted(set(received)) == ["part 1", "part 2", "part 3", "part 4"]
    assert received.count("part 3") == (2 if accepted else 1)
    assert all(received.count(part) == 1 for part in ("part 1", "part 2", "part 4"))


async def test_sends_cut_off_by_crashes_count_as_attempts(services: Services) -> None:
    """A send cut off by a crash may have reached the platform: it must count as an
    attempt, so the copies of a message never exceed its attempts, and a message whose
    send keeps killing the process is given up after `max_attempts`, not sent for ever."""
    db = services.db()
    digest_id = four_part_digest(services, "slack:T1/C1")
    copies, max_attempts = 0, 3
    for crash in range(max_attempts):
        dying = DyingPoster(die_at=1, accepted_before_dying=True)
        with pytest.raises(Killed):
            await deliver_channel(
                db, dying, "slack:T1/C1", NOW + timedelta(minutes=crash), max_attempts
            )
        copies += len(dying.sent)
        db.execute("update outbox set claimed_by = ? where state = 'sending'", [dead_sender()])
        [first, *_] = messages_for_digest(db, digest_id)
        assert copies <= first["attempts"] == crash + 1
    after = RecordingPoster()
    result = await deliver_channel(db, after, "slack:T1/C1", NOW + timedelta(hours=1), max_attempts)
    assert result.state == "failed" and after.sent == []
    assert [m["state"] for m in messages_for_digest(db, digest_id)] == ["failed"] * 4


async def test_a_used_up_message_another_sender_took_is_not_given_up_under_it(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.delivery as delivery_module
    from db import outbox

    db = services.db()
    digest_id = four_part_digest(services, "slack:T1/C1")
    db.execute(  # the last attempt's sender died mid-send: its claim is abandoned
        "update outbox set state = 'sending', claimed_by = ?, claimed_until = ?, attempts = 3 "
        "where digest_id = ? and part = 1",
        [dead_sender(), "2026-11-30T09:10:00+00:00", digest_id],
    )
    real_due = outbox.due

    def then_another_takes_it(*args: Any, **kwargs: Any) -> Any:
        rows = real_due(*args, **kwargs)
        assert outbox.claim(db, rows[0], "other:1", "2026-11-30T09:10:00+00:00")
        return rows

    monkeypatch.setattr(delivery_module.outbox, "due", then_another_takes_it)
    result = await deliver_channel(db, RecordingPoster(), "slack:T1/C1", NOW, 3)
    assert result.reason == "sent elsewhere"
    rows = messages_for_digest(db, digest_id)
    assert (rows[0]["state"], rows[0]["claimed_by"]) == ("sending", "other:1")
    assert [row["state"] for row in rows[1:]] == ["pending"] * 3


def test_a_pid_from_another_pid_namespace_is_not_judged_here() -> None:
    """Two containers on one host network share the host name: a claim by pid N in the
    other container is not judged by whether pid N runs here (taken over while the other
    container is still sending it, it would be sent twice)."""
    import socket

    from bot.delivery import SENDER, sender_alive

    dead = dead_sender()
    assert not sender_alive(dead)  # here we can tell
    pid = dead.rpartition(":")[2]
    assert sender_alive(f"{socket.gethostname()}:{pid}")  # the name alone: cannot tell
    assert sender_alive(f"{socket.gethostname()}/pid:[1]:{pid}")  # another namespace
    assert sender_alive(SENDER)


def test_a_claim_from_a_stale_read_fails(services: Services) -> None:
    """A sender whose list of due messages is stale must not take a message that another
    sender tried meanwhile (and scheduled for later)."""
    from db import outbox

    db = services.db()
    four_part_digest(services, "slack:T1/C1")
    [stale, *_] = outbox.due(db, "slack:T1/C1", "2026-11-30T09:00:00+00:00")
    assert outbox.claim(db, stale, "other:1", "2026-11-30T09:10:00+00:00")
    outbox.mark_retry(db, stale["id"], "ratelimited", "2026-11-30T10:00:00+00:00")
    assert not outbox.claim(db, stale, "me:2", "2026-11-30T09:10:00+00:00")


async def test_two_senders_never_send_the_same_message(services: Services) -> None:
    """`paperboy digest --send` while `paperboy run` is sending the same channel."""
    from bot.delivery import CLAIM_SECONDS

    four_part_digest(services, "slack:T1/C1")
    gate = asyncio.Event()

    class Slow(RecordingPoster):
        async def send(
            self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
        ) -> str:
            await gate.wait()
            return await super().send(channel, payload, thread_of)

    first, second = Slow(), RecordingPoster()
    running = asyncio.create_task(deliver_channel(services.db(), first, "slack:T1/C1", NOW))
    assert await eventually(  # the first sender holds message 1
        lambda: (
            services.db()
            .execute("select count(*) from outbox where state = 'sending'")
            .fetchone()[0]
        )
    )
    other = await deliver_channel(services.db(), second, "slack:T1/C1", NOW + timedelta(seconds=5))
    assert other.sent == 0 and second.sent == []
    gate.set()
    assert (await running).sent == 4
    assert [p["text"] for _, p in first.sent] == ["part 1", "part 2", "part 3", "part 4"]
    late = await deliver_channel(
        services.db(), second, "slack:T1/C1", NOW + timedelta(seconds=CLAIM_SECONDS + 60)
    )
    assert late.state == "nothing" and second.sent == []


async def test_an_unexpected_error_is_retried_with_backoff(services: Services) -> None:
    digest_id = four_part_digest(services, "slack:T1/C1")

    class Broken(RecordingPoster):
        async def send(
            self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
        ) -> str:
            raise KeyError("surprise")

    result = await deliver_channel(services.db(), Broken(), "slack:T1/C1", NOW)
    assert result.state == "retrying" and result.reason == "unexpected KeyError"
    [first, *_] = messages_for_digest(services.db(), digest_id)
    assert first["state"] == "pending" and first["attempts"] == 1
    assert datetime.fromisoformat(first["next_attempt_at"]) > NOW


class FlakyPoster(RecordingPoster):
    def __init__(self, failures: int, retry_after: float | None = None) -> None:
        super().__init__()
        self.failures = failures
        self.retry_after = retry_after
        self.attempts = 0

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise TransientError("ratelimited", self.retry_after)
        return await super().send(channel, payload, thread_of)


async def test_a_429_storm_backs_off_then_gives_up(services: Services) -> None:
    digest_id = four_part_digest(services, "slack:T1/C1")
    poster = FlakyPoster(failures=100)
    now = NOW
    waits = []
    for _ in range(services.settings.max_attempts):
        result = await deliver_channel(
            services.db(), poster, "slack:T1/C1", now, services.settings.max_attempts
        )
        [first, *_] = messages_for_digest(services.db(), digest_id)
        if result.state == "failed":
            break
        next_at = datetime.fromisoformat(first["next_attempt_at"])
        waits.append((next_at - now).total_seconds())
        assert await deliver_channel(
            services.db(), poster, "slack:T1/C1", next_at - timedelta(seconds=1)
        ) == result.__class__("slack:T1/C1", state="nothing")
        now = next_at
    assert result.state == "failed"
    assert poster.attempts == services.settings.max_attempts
    # exponential from 30 s, each with jitter between half and all of it
    for attempt, wait in enumerate(waits):
        assert 0.5 * 30 * 2**attempt <= wait <= 30 * 2**attempt
    states = [m["state"] for m in messages_for_digest(services.db(), digest_id)]
    assert states == ["failed"] * 4  # the later parts are given up with part 1


async def test_later_parts_never_go_out_without_the_first(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    """Part 1 given up must not leave part 2 to be posted alone, with no header."""
    digest_id = four_part_digest(services, "slack:T1/C1")
    result = await deliver_channel(services.db(), FlakyPoster(failures=1), "slack:T1/C1", NOW, 1)
    assert result.state == "failed"
    rows = messages_for_digest(services.db(), digest_id)
    assert [m["state"] for m in rows] == ["failed"] * 4
    assert rows[1]["last_error"] == "part 1 of this digest was given up"
    assert "(and the 3 later part(s) of that digest)" in caplog.text
    later = RecordingPoster()
    again = await deliver_channel(services.db(), later, "slack:T1/C1", NOW + timedelta(days=1))
    assert again.state == "nothing" and later.sent == []
    # a part given up in the middle holds back the rest too, never the ones before it
    other = four_part_digest(services, "slack:T1/C2")
    poster = RecordingPoster()
    await deliver_channel(services.db(), poster, "slack:T1/C2", NOW)
    assert len(poster.sent) == 4
    services.db().execute("update outbox set state = 'pending' where digest_id = ?", [other])
    services.db().execute(
        "update outbox set state = 'sent' where digest_id = ? and part = 1", [other]
    )
    await deliver_channel(services.db(), FlakyPoster(failures=1), "slack:T1/C2", NOW, 1)
    states = [m["state"] for m in messages_for_digest(services.db(), other)]
    assert states == ["sent", "failed", "failed", "failed"]


async def test_retry_after_is_honoured(services: Services) -> None:
    digest_id = four_part_digest(services, "slack:T1/C1")
    poster = FlakyPoster(failures=1, retry_after=42)
    result = await deliver_channel(services.db(), poster, "slack:T1/C1", NOW)
    assert result.state == "retrying"
    [first, *_] = messages_for_digest(services.db(), digest_id)
    assert datetime.fromisoformat(first["next_attempt_at"]) == NOW + timedelta(seconds=42)


async def test_a_paused_channel_is_left_alone(services: Services, clock: Clock) -> None:
    four_part_digest(services, "slack:T1/C1")

    class Gone(RecordingPoster):
        async def send(
            self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
        ) -> str:
            raise PermanentError("channel_not_found")

    scheduler = DigestScheduler(services, {"slack": Gone()})
    [result] = await scheduler.deliver_due()
    assert result.state == "paused"
    assert get_channel(services.db(), "slack:T1/C1")["paused"] == 1
    assert await scheduler.deliver_due() == []  # not even tried again
    assert await scheduler.run_digest("slack:T1/C1") is None  # no new digest either


async def test_one_slow_channel_does_not_delay_the_others(services: Services) -> None:
    four_part_digest(services, "slack:T1/SLOW")
    four_part_digest(services, "slack:T1/FAST")
    gate = asyncio.Event()

    poster = GatedPoster(gate, "SLOW")
    scheduler = DigestScheduler(services, {"slack": poster})
    run = asyncio.create_task(scheduler.deliver_due())
    await eventually(lambda: len(poster.sent) == 4)
    assert [c for c, _ in poster.sent] == ["slack:T1/FAST"] * 4  # all of FAST while SLOW waits
    gate.set()
    results = await run
    assert {r.channel: r.sent for r in results} == {"slack:T1/FAST": 4, "slack:T1/SLOW": 4}


# --- schedules change at once; the inbox --------------------------------------------------


async def test_schedule_changes_apply_without_a_restart(services: Services, clock: Clock) -> None:
    monday_nine(services, "local:lab")
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    scheduler.scheduler.start(paused=True)  # jobs live, nothing fires
    scheduler.sync_jobs()
    job = scheduler.scheduler.get_job("digest:local:lab")
    assert str(job.trigger) == "cron[day_of_week='mon', hour='9', minute='0']"
    # a change from another process (the CLI) is picked up by the next sync
    command(services, "local:lab", "schedule friday 17:45 Asia/Tokyo")
    scheduler.sync_jobs()
    job = scheduler.scheduler.get_job("digest:local:lab")
    assert str(job.trigger) == "cron[day_of_week='fri', hour='17', minute='45']"
    assert str(job.trigger.timezone) == "Asia/Tokyo"
    # unsubscribing from the last topic removes the job
    command(services, "local:lab", "unsubscribe robotics")
    scheduler.sync_jobs()
    assert scheduler.scheduler.get_job("digest:local:lab") is None
    scheduler.scheduler.shutdown(wait=False)


async def test_the_inbox_loads_new_files_and_skips_bad_ones(
    services: Services, clock: Clock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "good.tsv").write_text(
        "title\tabstract\nGrasp Everything\tWe propose GraspAll, a robot grasping method.\n"
    )
    (inbox / "bad.csv").write_text("title,url\nno abstract here,x\n")
    services.settings = replace(services.settings, inbox=inbox)
    monday_nine(services, "local:lab")
    clock.now = NOW + timedelta(days=1)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    await scheduler.run_digest("local:lab")
    [line] = local_lines(services, "lab")
    assert "Grasp Everything" in line["text"]  # loaded before the digest was built
    assert "inbox: skipped" in caplog.text and "bad.csv:1: has no 'abstract' column" in caplog.text
    rows = {
        row["path"].split("/")[-1]: row["status"]
        for row in services.db().query("select * from inbox_files")
    }
    assert rows == {"good.tsv": "loaded", "bad.csv": "error"}


async def test_an_inbox_file_modified_just_now_goes_in_this_digest_once_it_is_quiet(
    services: Services, clock: Clock, tmp_path: Path
) -> None:
    """A file still being written is left by the inbox; the digest looks once more after
    the settle time instead of leaving it for the next digest, maybe a week later."""
    import os

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    paper = inbox / "new.tsv"
    paper.write_text(
        "title\tabstract\nGrasp Everything\tWe propose GraspAll, a robot grasping method.\n"
    )
    services.settings = replace(services.settings, inbox=inbox)
    monday_nine(services, "local:lab")
    clock.now = NOW + timedelta(days=1)
    just_now = (clock.now - timedelta(seconds=1)).timestamp()
    os.utime(paper, (just_now, just_now))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # the settle wait, on the fake clock
        waits.append(seconds)
        clock.now += timedelta(seconds=seconds)

    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}, sleep=sleep
    )
    await scheduler.run_digest("local:lab")
    assert waits == [5.0]
    [line] = local_lines(services, "lab")
    assert "Grasp Everything" in line["text"]


# --- the database under load -----------------------------------------------------------------


async def test_200_concurrent_commands_during_a_digest_run(
    services: Services, clock: Clock
) -> None:
    channels = [f"local:team{i}" for i in range(20)]
    for channel in channels:
        command(services, channel, "subscribe robotics")
        command(services, channel, "subscribe rlhf")
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    texts = [
        "find robot",
        "list",
        "status",
        "subscribe offline-rl",
        "unsubscribe offline-rl",
        "topics",
        "digest preview",
    ]

    def one(index: int) -> str:
        reply = handle(
            texts[index % len(texts)], services.context(channels[index % 20], f"user{index}")
        )
        return reply.text

    digests = [asyncio.create_task(scheduler.run_digest(channel)) for channel in channels]
    replies = await asyncio.gather(*(services.in_thread(one, i) for i in range(200)))
    results = await asyncio.gather(*digests)
    assert len(replies) == 200 and not any("locked" in reply for reply in replies)
    assert all(result is not None and result.state == "done" for result in results)
    assert all(len(local_lines(services, channel.split(":")[1])) == 1 for channel in channels)


def test_run_wires_the_scheduler_to_every_started_platform(services: Services) -> None:
    from bot.discordbot.poster import DiscordPoster
    from bot.runner import DiscordComponent, SchedulerComponent, SlackComponent, components
    from bot.slack.client import make_client
    from bot.slack.poster import SlackPoster

    settings = replace(
        services.settings,
        slack_bot_token="xoxb-1234567890-abc",
        slack_app_token="xapp-1-abc-123456789",
        discord_token="x" * 24 + "." + "y" * 6 + "." + "z" * 27,
    )
    services.settings = settings
    parts = components(services, slack_http=False, port=3000)
    assert [part.name for part in parts] == ["slack", "discord", "scheduler"]  # scheduler last
    slack, discord_part, scheduler = parts
    assert isinstance(scheduler, SchedulerComponent) and isinstance(slack, SlackComponent)
    assert isinstance(discord_part, DiscordComponent)
    assert set(scheduler.posters()) == {"local"}  # nothing started yet
    slack.client = make_client("xoxb-1234567890-abc", "http://127.0.0.1:9/api/")
    discord_part.client = object()  # type: ignore[assignment]
    posters = scheduler.posters()
    assert isinstance(posters["slack"], SlackPoster) and isinstance(
        posters["discord"], DiscordPoster
    )
    assert isinstance(posters["local"], LocalPoster)


async def test_the_outbox_loop_never_waits_for_a_stuck_channel(services: Services) -> None:
    four_part_digest(services, "slack:T1/SLOW")
    four_part_digest(services, "slack:T1/FAST")
    gate = asyncio.Event()

    poster = GatedPoster(gate, "SLOW")
    scheduler = DigestScheduler(services, {"slack": poster})
    assert scheduler.start_due_deliveries() == 2  # returns at once
    assert await eventually(lambda: len(poster.sent) == 4)
    assert {c for c, _ in poster.sent} == {"slack:T1/FAST"}
    assert scheduler.start_due_deliveries() == 0  # SLOW is still under way: not started twice
    gate.set()
    await scheduler.stop()
    # the send under way finished; no new one started after the stop: the rest is pending
    assert len(poster.sent) == 5
    pending = services.db().query("select count(*) as n from outbox where state = 'pending'")
    assert next(iter(pending))["n"] == 3


# --- a slow inbox, failed builds -------------------------------------------------------------


async def test_six_channels_firing_together_share_one_slow_inbox_ingest(
    services: Services, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import bot.scheduler as scheduler_module

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "new.tsv").write_text(
        "title\tabstract\nGrasp Everything\tWe propose GraspAll, a robot grasping method.\n"
    )
    services.settings = replace(services.settings, inbox=inbox)
    channels = [f"local:team{i}" for i in range(6)]
    for channel in channels:
        monday_nine(services, channel)
    clock.now = NOW + timedelta(days=1)
    gate, calls = threading.Event(), []
    real = scheduler_module.ingest_inbox

    def slow_ingest(db: Any, folder: Path | None, now: datetime, **_: Any) -> Any:
        calls.append(now)
        gate.wait(20)  # slow: held until every digest has started
        return real(db, folder, now)

    monkeypatch.setattr(scheduler_module, "ingest_inbox", slow_ingest)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    runs = [asyncio.create_task(scheduler.run_digest(channel)) for channel in channels]
    assert await eventually(lambda: calls)
    for _ in range(50):  # every run reaches the inbox step meanwhile
        await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*runs)
    assert len(calls) == 1  # one ingest for the six, not six racing for the write lock
    assert [result.state for result in results if result] == ["done"] * 6
    for channel in channels:
        [line] = local_lines(services, channel.split(":")[1])
        assert "Grasp Everything" in line["text"]


async def test_builds_run_a_few_at_a_time(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each build runs in a daemon thread of its own (so that it never holds up the exit):
    a catch-up of many channels must not start a thread, and a connection, per channel."""
    import threading

    import bot.scheduler as scheduler_module

    channels = [f"local:team{i}" for i in range(12)]
    for channel in channels:
        monday_nine(services, channel)
    clock.now = NOW + timedelta(hours=1)
    real, lock, running, most = scheduler_module.build_digests, threading.Lock(), [0], [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            threading.Event().wait(0.05)  # long enough for the others to pile up
            yield from real(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(scheduler_module, "build_digests", counted)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    results = await asyncio.gather(*(scheduler.run_digest(channel) for channel in channels))
    assert [result.state for result in results if result] == ["done"] * 12
    assert 1 <= most[0] <= scheduler_module.BUILD_THREADS


async def test_a_failed_build_is_retried_with_backoff_and_shown_in_status(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:

    from click.testing import CliRunner

    import bot.scheduler as scheduler_module
    from bot.cli import main
    from db.digests import failures

    monday_nine(services, "local:lab")
    clock.now = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)  # Monday 09:00: due
    real, broken = scheduler_module.build_digests, [True]

    def build_once_broken(*args: Any, **kwargs: Any) -> Any:
        if broken:
            broken.clear()
            raise Busy("database is locked")
        return real(*args, **kwargs)

    monkeypatch.setattr(scheduler_module, "build_digests", build_once_broken)
    poster = LocalPoster(services.settings.local_dir, clock)
    scheduler = DigestScheduler(services, {"local": poster})
    result = await scheduler.run_digest("local:lab")
    assert result is not None and result.state == "retrying"
    assert local_lines(services, "lab") == []
    [failure] = failures(services.db(), "local:lab")
    assert failure["attempts"] == 1 and "database is locked" in failure["last_error"]
    wait = datetime.fromisoformat(failure["next_attempt_at"]) - clock.now
    assert timedelta(seconds=15) <= wait <= timedelta(seconds=30)  # backoff from 30 s, jittered

    status = CliRunner().invoke(main, ["status", "--db", str(services.db_path)])
    assert (
        "Digest build for 2026-12-07 09:00 failed once "
        "(Busy: database is locked); retrying after" in status.output
    )
    assert scheduler.retry_failed_builds() == []  # not before its time
    # a restart: the failure is in the database, so a new scheduler retries it
    clock.now += wait
    restarted = DigestScheduler(services, {"local": poster})
    assert restarted.retry_failed_builds() == ["local:lab"]
    assert await eventually(lambda: local_lines(services, "lab"))
    await restarted.stop()
    [line] = local_lines(services, "lab")
    assert "week of 7 Dec 2026" in line["text"]
    assert failures(services.db(), "local:lab") == []
    status = CliRunner().invoke(main, ["status", "--db", str(services.db_path)])
    assert "failed" not in status.output


async def test_a_failed_build_whose_failure_cannot_be_recorded_is_still_retried(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock that failed the build can fail the write of its failure too: that failure
    must not escape unrecorded, losing the digest until a restart's catch-up."""

    import bot.scheduler as scheduler_module
    from db.digests import failures

    monday_nine(services, "local:lab")
    real_build, real_record = (
        scheduler_module.build_digests,
        scheduler_module.digest_store.record_failure,
    )
    locked = {"build": 1, "record": 1}

    def once_locked(what: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if locked[what]:
                locked[what] -= 1
                raise Busy("database is locked")
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(scheduler_module, "build_digests", once_locked("build", real_build))
    monkeypatch.setattr(
        scheduler_module.digest_store, "record_failure", once_locked("record", real_record)
    )
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    result = await scheduler.run_digest("local:lab")
    assert result is not None and result.state == "retrying"
    assert failures(services.db()) == [] and local_lines(services, "lab") == []
    assert scheduler.retry_failed_builds() == []  # not before its backoff
    [recorded] = failures(services.db())  # written as soon as the database allowed it
    assert recorded["due_at"] == "2026-11-30T09:00:00+00:00" and recorded["attempts"] == 1
    clock.now += timedelta(seconds=31)
    assert scheduler.retry_failed_builds() == ["local:lab"]
    assert await eventually(lambda: local_lines(services, "lab"))
    await scheduler.stop()
    assert failures(services.db()) == []


async def test_a_build_that_fails_with_a_bug_logs_its_traceback_once(
    services: Services,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug (say, a paper that breaks rendering) fails every retry and every week's
    digest; one warning line without a traceback left nothing to fix it from."""
    import bot.scheduler as scheduler_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("venue")

    monkeypatch.setattr(scheduler_module, "build_digests", broken)
    monday_nine(services, "local:lab")
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    for _ in range(2):
        result = await scheduler.run_digest("local:lab")
        assert result is not None and result.state == "retrying"
    failed = [r for r in caplog.records if "failed to build" in r.getMessage()]
    assert [bool(r.exc_info) for r in failed] == [True, False]
    assert "KeyError: 'venue'" in caplog.text


async def test_a_failed_build_overtaken_by_next_weeks_digest_is_dropped(
    services: Services, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    from db.digests import failures, record_failure

    monday_nine(services, "local:lab")
    record_failure(
        services.db(),
        "local:lab",
        "2026-11-30T09:00:00+00:00",
        "Busy: database is locked",
        "2026-11-30T09:01:00+00:00",
        "2026-11-30T09:00:30+00:00",
    )
    clock.now = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)  # the next Monday's is due too
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    assert scheduler.retry_failed_builds() == []
    assert failures(services.db()) == []
    assert "was never built (Busy: database is locked); dropped" in caplog.text


async def test_a_broken_inbox_does_not_fail_every_digest(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inbox that raises (an unreadable folder) failed the build, so every retry, and
    every week's digest, failed the same way: nothing was ever posted again."""
    import bot.scheduler as scheduler_module
    from db.digests import failures

    def unreadable(db: Any, folder: Path | None, now: datetime, **_: Any) -> Any:
        raise PermissionError(13, "Permission denied", "/srv/inbox")

    monkeypatch.setattr(scheduler_module, "ingest_inbox", unreadable)
    monday_nine(services, "local:lab")
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    result = await scheduler.run_digest("local:lab")
    assert result is not None and result.state == "done"
    assert len(local_lines(services, "lab")) == 1
    assert failures(services.db()) == []


async def test_a_retry_that_a_later_digest_overtook_while_it_waited_builds_nothing(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The maintenance job starts a retry of last week's failed build just as this
    week's digest fires; the fire holds the channel, builds this week's digest (taking
    last week's papers) and clears the failure. The retry, next in line, then built
    last week's digest after this week's: a stale second post."""
    import threading

    import bot.scheduler as scheduler_module
    from db.digests import failures, record_failure

    monday_nine(services, "local:lab")
    record_failure(
        services.db(),
        "local:lab",
        "2026-11-30T09:00:00+00:00",
        "Busy: database is locked",
        "2026-11-30T09:01:00+00:00",
        "2026-11-30T09:00:30+00:00",
    )
    gate, entered = threading.Event(), threading.Event()

    def slow_ingest(db: Any, folder: Path | None, now: datetime, **_: Any) -> InboxResult:
        entered.set()
        gate.wait(20)
        return InboxResult()

    monkeypatch.setattr(scheduler_module, "ingest_inbox", slow_ingest)
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    clock.now = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)  # this week's digest fires...
    fire = asyncio.create_task(scheduler.run_digest("local:lab"))
    assert await eventually(entered.is_set)
    # ... while a retry started a moment before (not yet overtaken then) waits its turn
    assert scheduler.retry_failed_builds(now=clock.now - timedelta(seconds=1)) == ["local:lab"]
    gate.set()
    assert (await fire) is not None
    assert await eventually(lambda: not scheduler._running)
    assert failures(services.db()) == []
    texts = [line["text"] for line in local_lines(services, "lab")]
    assert len(texts) == 1 and "week of 7 Dec 2026" in texts[0], texts


async def test_a_busy_database_skips_one_maintenance_step_not_the_rest(
    services: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:

    import bot.scheduler as scheduler_module

    four_part_digest(services, "slack:T1/C1")

    def locked(db: Any, now: str) -> Any:
        raise Busy("database is locked")

    monkeypatch.setattr(scheduler_module.digest_store, "due_failures", locked)
    poster = RecordingPoster()
    scheduler = DigestScheduler(services, {"slack": poster})
    await scheduler._maintenance()  # the retry step fails: deliveries still start
    assert await eventually(lambda: len(poster.sent) == 4)
    await scheduler.stop()
    assert "maintenance: retry_failed_builds skipped this time (database is locked)" in caplog.text
    assert [r for r in caplog.records if r.levelno >= 40] == []


# --- independent channels, prompt stops ------------------------------------------------------


class TroublePoster(RecordingPoster):
    """HANG never answers; LIMIT is rate-limited for an hour; the rest are fine."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[str] = []

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        self.started.append(channel.name)
        if channel.name == "HANG":
            await asyncio.Event().wait()
        if channel.name == "LIMIT":
            raise TransientError("ratelimited", retry_after=3600)
        return await super().send(channel, payload, thread_of)


async def test_catch_up_is_parallel_and_a_stop_cuts_it_short(
    services: Services, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    for name in ("HANG", "LIMIT", "OK1", "OK2"):  # the order a one-by-one catch-up would take
        monday_nine(services, f"slack:T1/{name}")
    clock.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    poster = TroublePoster()
    scheduler = DigestScheduler(services, {"slack": poster})
    line = await asyncio.wait_for(scheduler.start(), 5)  # does not wait for the catch-up
    assert line.startswith("scheduler: 4 channels scheduled")
    assert await eventually(lambda: {c for c, _ in poster.sent} == {"slack:T1/OK1", "slack:T1/OK2"})
    # the four builds run in worker threads, in any order: wait for HANG and LIMIT's sends
    # too (their failure, not their build's speed, is what this test is about)
    assert await eventually(
        lambda: (
            {"HANG", "LIMIT"} <= set(poster.started)
            and scheduler.services.db()
            .execute(
                "select count(*) from outbox where channel = 'slack:T1/LIMIT' "
                "and next_attempt_at is not null"
            )
            .fetchone()[0]
        )
    )
    [limited] = services.db().query("select * from outbox where channel = 'slack:T1/LIMIT'")
    assert limited["next_attempt_at"] == "2026-11-30T13:00:00+00:00"  # Retry-After honoured
    # HANG is still hanging: a stop cuts it off at once, and it stays pending for next time
    assert poster.started.count("HANG") == 1
    await asyncio.wait_for(scheduler.stop(timeout=0.1), 5)
    [hung] = services.db().query("select * from outbox where channel = 'slack:T1/HANG'")
    assert hung["state"] == "pending" and hung["claimed_by"] is None
    # nothing starts after the stop
    assert scheduler.start_due_deliveries() == 0
    assert await scheduler.run_digest("slack:T1/OK1") is None
    assert poster.started.count("HANG") == 1
    assert [r for r in caplog.records if r.levelno >= 40] == []  # no ERROR, no traceback


async def test_a_scheduled_job_cut_off_by_the_stop_logs_no_error(
    services: Services, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """APScheduler logged a cancelled job as 'Error running job' with a traceback."""
    caplog.set_level("INFO")
    clock.now = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    monday_nine(services, "slack:T1/HANG")
    poster = TroublePoster()
    scheduler = DigestScheduler(services, {"slack": poster})
    await scheduler.start()
    clock.now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    scheduler.scheduler.add_job(scheduler._fire, args=["slack:T1/HANG"])  # fires now
    assert await eventually(lambda: poster.started == ["HANG"])
    await scheduler.stop(timeout=0.1)
    await asyncio.sleep(0.05)  # APScheduler's done-callback runs after the task ends
    errors = [r for r in caplog.records if r.levelno >= 30]
    assert errors == [], [r.getMessage() for r in errors]
    assert "digest for slack:T1/HANG: cut off by the stop" in caplog.text


async def test_no_build_starts_after_the_stop(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A digest waiting for the inbox when the stop comes does not start its build anyway
    (in a thread the exit then abandons): no build starts after a stop."""
    import threading

    import bot.scheduler as scheduler_module

    monday_nine(services, "local:lab")
    entered, gate, built = threading.Event(), threading.Event(), []

    def slow_ingest(db: Any, folder: Path | None, now: datetime, **_: Any) -> InboxResult:
        entered.set()
        gate.wait(20)
        return InboxResult()

    monkeypatch.setattr(scheduler_module, "ingest_inbox", slow_ingest)
    monkeypatch.setattr(scheduler_module, "build_digests", lambda *a, **k: built.append(a))
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    running = asyncio.create_task(scheduler.run_digest("local:lab"))
    assert await eventually(entered.is_set)
    scheduler.halt()
    gate.set()
    assert await asyncio.wait_for(running, 20) is None
    assert built == []


async def test_no_inbox_ingest_starts_after_the_stop(
    services: Services, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.scheduler as scheduler_module

    monday_nine(services, "local:lab")
    ingested: list[datetime] = []
    monkeypatch.setattr(
        scheduler_module,
        "ingest_inbox",
        lambda db, f, now, **_: ingested.append(now) or InboxResult(),
    )
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    lock = scheduler._channel_locks.setdefault("local:lab", asyncio.Lock())
    async with lock:  # a catch-up of this channel is under way
        running = asyncio.create_task(scheduler.run_digest("local:lab"))
        await asyncio.sleep(0)  # it waits for the channel
        scheduler.halt()
    assert await asyncio.wait_for(running, 20) is None
    assert ingested == []


async def test_a_send_with_no_answer_times_out_as_transient(services: Services) -> None:
    four_part_digest(services, "slack:T1/HANG")
    result = await asyncio.wait_for(  # without the send timeout: a failure, not a hang
        deliver_channel(services.db(), TroublePoster(), "slack:T1/HANG", NOW, send_timeout=0.05),
        20,
    )
    assert result.state == "retrying" and result.reason == "no answer within 0 s"
    [row, *_] = services.db().query("select * from outbox order by part")
    assert row["state"] == "pending" and row["claimed_by"] is None and row["attempts"] == 1


# --- two processes on one database -----------------------------------------------------------


def test_a_digest_built_meanwhile_elsewhere_is_used_not_an_error(
    services: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The other process records the week's digest between our check and our insert."""
    import digests.digest as digest_module
    from digests.digest import build_digest

    caplog.set_level("INFO")
    command(services, "local:lab", "subscribe robotics")
    other = open_db(services.db_path)  # the other process's connection
    real = digest_module.outbox.claimed_paper_ids
    raced = []

    def other_wins(db: Any, channel: str) -> set[str]:
        if not raced:
            raced.append(channel)
            build_digest(other, channel, NOW, catalog=services.catalog, settings=services.settings)
        return real(db, channel)

    monkeypatch.setattr(digest_module.outbox, "claimed_paper_ids", other_wins)
    mine = build_digest(
        services.db(), "local:lab", NOW, catalog=services.catalog, settings=services.settings
    )
    assert raced == ["local:lab"]
    rows = list(services.db().query("select id from digests where channel = 'local:lab'"))
    assert [row["id"] for row in rows] == [mine.digest_id]
    assert "built meanwhile by another process; using that one" in caplog.text
    assert [r for r in caplog.records if r.levelno >= 30] == []


async def test_two_schedulers_on_one_database_catch_up_quietly(
    services: Services, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    channels = [f"local:team{i}" for i in range(8)]
    for channel in channels:
        monday_nine(services, channel)
    clock.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    schedulers = [
        DigestScheduler(
            Services(services.db_path, services.settings, services.catalog, clock=clock),
            {"local": LocalPoster(services.settings.local_dir, clock)},
        )
        for _ in range(2)
    ]
    first, second = await asyncio.gather(*(s.catch_up() for s in schedulers))
    assert sorted(set(first) | set(second)) == channels  # neither stopped early
    for channel in channels:
        assert len(local_lines(services, channel.split(":")[1])) == 1  # and nothing twice
    assert [r.getMessage() for r in caplog.records if r.levelno >= 30] == []


async def test_each_delivered_message_is_logged(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="bot.delivery")
    digest_id = four_part_digest(services, "slack:T1/C1")
    await deliver_channel(services.db(), RecordingPoster(), "slack:T1/C1", NOW)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("delivered")]
    assert lines == [
        f"delivered to slack:T1/C1: digest {digest_id} (2026-W49), part {part} of 4"
        for part in range(1, 5)
    ]
