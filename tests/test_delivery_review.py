"""Delivery under rate limits, the cases a review found (issue 11, delivery): claims taken
after a long wait for a turn, Retry-After values no platform should send, and a configured
rate below the limiter's floor."""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from bot.delivery import BACKOFF_MAX_SECONDS, TransientError, deliver_channel
from bot.ratelimits import MAX_PAUSE_SECONDS, SendLimits
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from config.settings import SettingsError, load_settings
from db import open_db, outbox
from digests.channels import ChannelRef
from digests.timestamps import stamp
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.slack_helpers import BOT_TOKEN
from tests.test_delivery_limits import (
    VirtualTime,
    db,
    deliver_two_discord_channels,
    queue,
    slack_payload,
    states,
)

__all__ = ["db"]  # the fixture, shared with tests/test_delivery_limits.py


class Poster:
    """A Slack-like poster on the virtual clock that answers each send with the next of
    `answers` (an exception to raise), or posts."""

    platform = "slack"

    def __init__(self, limits: SendLimits, answers: list[Exception] | None = None) -> None:
        self.limits = limits
        self.answers = list(answers or [])
        self.posted: list[str] = []
        self.during_send: list[Any] = []

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if self.answers:
            raise self.answers.pop(0)
        self.posted.append(payload["text"])
        self.during_send.append(self.watch(channel))
        return f"ts{len(self.posted)}"

    def watch(self, channel: ChannelRef) -> Any:  # replaced by the test
        return None


async def test_a_claim_taken_after_a_long_wait_for_a_turn_is_not_already_expired(
    db: Database,
) -> None:
    """70 channels at 0.1 message a second: the last ones wait about 700 s for their turn.
    Their claim must run from when it is taken, not from when the delivery began (600 s
    after that, it had expired before the send: a second sender looking at the outbox
    during the send, `paperboy digest --send` or another worker, took the message as
    abandoned and sent it too)."""
    time = VirtualTime()
    start = time.now
    clock = lambda: NOW + timedelta(seconds=time.now - start)  # noqa: E731
    channels = [f"slack:T0001/C{n:04d}" for n in range(70)]
    queue(db, channels, 1, slack_payload)
    poster = Poster(SendLimits(0.1, monotonic=time.monotonic, sleep=time.sleep))
    # Another sender, on this host but another process, reading the outbox mid-send.
    poster.watch = lambda ref: outbox.due(db, str(ref), stamp(clock()), lambda _: True)
    results = await time.run(
        [deliver_channel(db, poster, c, NOW, clock=clock, rate=0.1) for c in channels]
    )
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 70}
    assert time.now - start >= 600  # the case under test happened
    assert [seen for seen in poster.during_send if seen] == []


def limited(seconds: float) -> TransientError:
    return TransientError("ratelimited", seconds, rate_limited=True, scope="global")


@pytest.mark.parametrize("seconds", [math.inf, math.nan, 1e12, -5.0])
async def test_an_absurd_retry_after_is_bounded_and_breaks_nothing(
    db: Database, seconds: float
) -> None:
    """Retry-After infinite, not a number, 30,000 years or negative: the message waits at
    most an hour (an infinite one raised OverflowError from every later delivery, a NaN
    ValueError, and the limiter stayed paused for the life of the process), and every
    channel still delivers once the pause is over."""
    time = VirtualTime()
    start = time.now
    clock = lambda: NOW + timedelta(seconds=time.now - start)  # noqa: E731
    channels = ["slack:T0001/C0001", "slack:T0001/C0002"]
    queue(db, channels, 1, slack_payload)
    poster = Poster(SendLimits(5.0, monotonic=time.monotonic, sleep=time.sleep), [limited(seconds)])
    [first] = await time.run([deliver_channel(db, poster, channels[0], NOW, clock=clock)])
    assert first.state in ("retrying", "done")
    [second] = await time.run([deliver_channel(db, poster, channels[1], clock(), clock=clock)])
    assert second.state in ("retrying", "done")
    for row in db.query("select * from outbox where state = 'pending'"):
        held = datetime.fromisoformat(row["next_attempt_at"]) - clock()
        assert held <= timedelta(seconds=BACKOFF_MAX_SECONDS)
    time.now += MAX_PAUSE_SECONDS + 1  # the pause is over
    later = clock()
    results = await time.run([deliver_channel(db, poster, c, later, clock=clock) for c in channels])
    assert states(db) == {"sent": 2}, results
    assert sorted(poster.posted) == sorted(slack_payload(c, 1)["text"] for c in channels)


def test_a_platform_wide_429_never_raises_the_rate_above_the_setting() -> None:
    """Configured at 0.2 a second (the settings allow 0.1): a 429 lowers the rate, never
    lifts it to the limiter's floor of 0.5 a second (it did: a 429 made it post faster)."""
    limits = SendLimits(0.2)
    limits.limited("a", 1.0, "global")
    assert limits.rate is not None and limits.rate <= 0.2


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PAPERBOY_SLACK_POSTS_PER_SECOND", "fast"),
        ("PAPERBOY_DISCORD_POSTS_PER_SECOND", "0"),
        ("PAPERBOY_SLACK_POSTS_PER_SECOND", "-2"),
        ("PAPERBOY_DISCORD_POSTS_PER_SECOND", "1e9"),
        ("PAPERBOY_SLACK_POSTS_PER_SECOND", "nan"),
    ],
)
def test_a_bad_posting_rate_is_one_clear_line_naming_the_setting(name: str, value: str) -> None:
    """Text said "could not convert string to float: 'fast'" (Python's words, not the
    setting's range)."""
    with pytest.raises(SettingsError) as caught:
        load_settings({name: value}, dotenv=None)
    message = str(caught.value)
    assert "\n" not in message and name in message
    assert message.endswith("must be a number of messages a second, from 0.1 to 10000")


async def test_a_discord_cloudflare_429_pauses_every_channel(
    db: Database, fake_discord: FakeDiscord, tmp_path: Path, catalog: Any
) -> None:
    """A 429 without Discord's `Via` header (a text body: "error code: 1015") is Cloudflare
    refusing the bot's address, every request alike; discord.py raises it at once. It
    paused only the channel that got it, for the default second, while every other channel
    went on posting into the ban (which lengthens it). Now every channel waits a minute."""
    time = VirtualTime()
    fake_discord.queue("/messages", "error code: 1015", 429, {})
    start, posts = await deliver_two_discord_channels(db, fake_discord, time, tmp_path, catalog)
    assert len(posts) == 2 and all(at >= start + 60 for at in posts)


async def test_paperboy_run_keeps_to_the_configured_posting_rate(
    tmp_path: Path, catalog: Any
) -> None:
    """PAPERBOY_SLACK_POSTS_PER_SECOND reaches the poster through the scheduler: the poster
    is made with its default (here 100/s) and told the setting (2/s) by each delivery.
    (Nothing checked it: without `limits.configure`, every test still passed.)"""
    from bot.scheduler import DigestScheduler
    from bot.services import Services

    time = VirtualTime()
    start = time.now
    db_path = tmp_path / "paperboy.db"
    db = open_db(db_path)
    channels = [f"slack:T0001/C{n:04d}" for n in range(6)]
    queue(db, channels, 1, slack_payload)
    settings = load_settings({"PAPERBOY_SLACK_POSTS_PER_SECOND": "2"}, dotenv=None)
    clock = lambda: NOW + timedelta(seconds=time.now - start)  # noqa: E731
    services = Services(db_path, settings, catalog, clock=clock)
    poster = Poster(SendLimits(100.0, monotonic=time.monotonic, sleep=time.sleep))
    scheduler = DigestScheduler(services, {"slack": poster})

    async def deliver() -> Any:
        return await scheduler.deliver_due(NOW)

    await time.run([deliver()])
    assert states(db) == {"sent": 6}
    assert poster.limits.ceiling == 2.0
    assert time.now - start >= 5 / 2.0  # 6 posts, 0.5 s apart


async def test_a_stop_cuts_off_deliveries_waiting_for_their_turn_and_loses_nothing(
    tmp_path: Path, catalog: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGTERM while 20 channels wait in the limiter at 0.5 message a second (their turns
    up to 40 s away): the stop ends within its grace, each waiting message stays pending
    and unclaimed for the next start, none was posted twice, and nothing is logged as an
    error. (The 5 s grace of `paperboy run`'s stop is shortened here.)"""
    from bot.scheduler import DigestScheduler
    from bot.services import Services

    db_path = tmp_path / "paperboy.db"
    db = open_db(db_path)
    channels = [f"slack:T0001/C{n:04d}" for n in range(20)]
    queue(db, channels, 1, slack_payload)
    settings = load_settings({"PAPERBOY_SLACK_POSTS_PER_SECOND": "0.5"}, dotenv=None)
    services = Services(db_path, settings, catalog, clock=lambda: NOW)
    poster = Poster(SendLimits(0.5))
    scheduler = DigestScheduler(services, {"slack": poster})
    assert scheduler.start_due_deliveries() == 20
    for _ in range(200):
        if poster.posted:
            break
        await asyncio.sleep(0.01)
    await asyncio.wait_for(scheduler.stop(timeout=0.1), 5)
    waiting = [t for t in asyncio.all_tasks() if t.get_name().startswith("deliver:")]
    assert all(task.done() for task in waiting)  # none left sleeping in the limiter
    rows = list(db.query("select * from outbox"))
    assert 1 <= len(poster.posted) < 20 and len(set(poster.posted)) == len(poster.posted)
    assert sum(row["state"] == "sent" for row in rows) == len(poster.posted)
    assert all(
        row["state"] == "pending" and row["claimed_by"] is None and row["attempts"] == 0
        for row in rows
        if row["state"] != "sent"
    )
    assert [r for r in caplog.records if r.levelno >= 40] == []


async def test_without_a_clock_a_claim_still_runs_from_when_it_is_taken(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`paperboy digest --send` delivers with no clock, only the `now` it started at: a
    claim taken after the time spent meanwhile (turns, earlier parts' sends) counted from
    `now` may have expired already. The claim counts that time in."""
    import bot.delivery

    time = VirtualTime()
    start = time.now
    monkeypatch.setattr(bot.delivery, "_monotonic", time.monotonic)
    clock = lambda: NOW + timedelta(seconds=time.now - start)  # noqa: E731
    channels = [f"slack:T0001/C{n:04d}" for n in range(70)]
    queue(db, channels, 1, slack_payload)
    poster = Poster(SendLimits(0.1, monotonic=time.monotonic, sleep=time.sleep))
    poster.watch = lambda ref: outbox.due(db, str(ref), stamp(clock()), lambda _: True)
    results = await time.run([deliver_channel(db, poster, c, NOW, rate=0.1) for c in channels])
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 70}
    assert time.now - start >= 600
    assert [seen for seen in poster.during_send if seen] == []


async def test_slacks_rate_limited_error_is_a_rate_limit_not_an_attempt(
    db: Database, fake_slack: FakeSlack
) -> None:
    """chat.postMessage's own `rate_limited` error ("Application has posted too many
    messages", an HTTP 200 answer) refuses the message like a 429's `ratelimited`: it was
    counted as an attempt, so with 2 attempts allowed the second one gave the message up."""
    time = VirtualTime()
    for _ in range(3):
        fake_slack.queue("chat.postMessage", {"ok": False, "error": "rate_limited"})
    channel = "slack:T0001/C0001"
    queue(db, [channel], 1, slack_payload)
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=time.sleep)
    poster = SlackPoster(client, rate=5.0, monotonic=time.monotonic, sleep=time.sleep)
    [result] = await time.run([deliver_channel(db, poster, channel, NOW, max_attempts=2)])
    assert result.state == "done" and states(db) == {"sent": 1}
    [row] = db.query("select * from outbox")
    assert row["attempts"] == 1  # the post that went through
    assert len(fake_slack.posted()) == 4


class TakenOverPoster(Poster):
    """While this send is under way, another sender takes the message over (its claim
    had run out: a clock stepped forward, a stalled process), then the send fails."""

    def __init__(self, limits: SendLimits, db: Database, error: Exception) -> None:
        super().__init__(limits, [error])
        self.db = db

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        self.db.execute(
            "update outbox set claimed_by = 'elsewhere:1', attempts = attempts + 1, "
            "claimed_until = '2999-01-01T00:00:00+00:00'"
        )
        return await super().send(channel, payload, thread_of)


@pytest.mark.parametrize(
    "error",
    [
        limited(1.0),  # sent again after the wait, if it were still ours
        limited(3600.0),  # left to the outbox
        TransientError("HTTP 500: error"),  # an attempt, retried with backoff
    ],
    ids=["429", "long 429", "server error"],
)
async def test_a_failed_send_leaves_a_claim_another_sender_took_alone(
    db: Database, error: TransientError
) -> None:
    """The failure of our send must not hand back the other sender's claim: made pending
    again (with an attempt taken off, for a 429), a third sender could send the message
    while the other one is still sending it."""
    time = VirtualTime()
    channel = "slack:T0001/C0001"
    queue(db, [channel], 1, slack_payload)
    poster = TakenOverPoster(SendLimits(5.0, monotonic=time.monotonic, sleep=time.sleep), db, error)
    [result] = await time.run([deliver_channel(db, poster, channel, NOW)])
    assert result.state != "done" and poster.posted == []
    [row] = db.query("select * from outbox")
    assert (row["state"], row["claimed_by"], row["attempts"]) == ("sending", "elsewhere:1", 2)
