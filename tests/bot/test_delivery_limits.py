"""Delivering many channels at once within the platforms' rate limits.

The fakes enforce Slack's and Discord's limits (`tests/fakes/rate_limits.py`) on a virtual
clock that the posters' limiters share: time moves only when every sender is waiting on
it, to the earliest wake-up, so the schedule is exact and nothing depends on the machine's
speed. The figures against real time are the benchmark's (`bench/delivery.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.delivery import BACKOFF_MAX_SECONDS, ChannelResult, TransientError, deliver_channel
from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.ratelimits import MAX_PAUSE_SECONDS, SendLimits, Throttled
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from config.settings import SettingsError, load_settings
from db import open_db, outbox
from db.store import Store
from digests.channels import ChannelRef
from digests.timestamps import stamp
from tests.conftest import NOW
from tests.fakes.delivery import (  # noqa: F401
    Poster,
    VirtualTime,
    db,
    deliver_all,
    queue,
    slack_payload,
    states,
    time,
)
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import GUILD
from tests.fakes.rate_limits import RateLimits
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import BOT_TOKEN

SLACK_CHANNELS = [f"slack:T0001/C{n:04d}" for n in range(60)]


def slack_poster(fake: FakeSlack, time: VirtualTime, rate: float) -> SlackPoster:
    client = make_client(BOT_TOKEN, fake.api_url, sleep=time.sleep)
    return SlackPoster(client, rate=rate, monotonic=time.monotonic, sleep=time.sleep)


async def test_sixty_slack_channels_at_once_keep_within_the_limits(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """60 channels of 3 messages, all at once, against 1 message/s per channel (burst 3) and
    20/s for the workspace (burst 5): each message posted once, no 429 at all, and within
    5% of the time a perfect sender needs. (Without the limiter, every channel posts at
    once: the workspace limit refuses most of them, most channels several times.)"""
    limits = RateLimits(global_rate=20.0, global_burst=5, clock=time.monotonic)
    fake_slack.limits = limits
    queue(db, SLACK_CHANNELS, 3, slack_payload)
    start = time.now
    results = await deliver_all(db, slack_poster(fake_slack, time, 20.0), SLACK_CHANNELS, time)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 180}
    posted = Counter((p["channel"], p["text"]) for p in fake_slack.accepted())
    assert len(posted) == 180 and set(posted.values()) == {1}  # none lost, none twice
    assert fake_slack.limited == []
    assert time.now - start <= limits.shortest_time([3] * 60) / 0.95


async def test_a_configured_rate_above_the_platforms_costs_few_429s_and_loses_nothing(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """Told 40/s where the workspace allows 20/s: the 429s pause every channel and lower
    the rate, so no channel gets more than one, and every message goes out exactly once."""
    fake_slack.limits = RateLimits(global_rate=20.0, global_burst=5, clock=time.monotonic)
    queue(db, SLACK_CHANNELS, 3, slack_payload)
    results = await deliver_all(db, slack_poster(fake_slack, time, 40.0), SLACK_CHANNELS, time)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 180}
    posted = Counter((p["channel"], p["text"]) for p in fake_slack.accepted())
    assert len(posted) == 180 and set(posted.values()) == {1}
    refused = fake_slack.limits.refused
    assert 0 < sum(refused.values()) <= 10 and max(refused.values()) == 1


async def test_a_global_429_pauses_every_channel_for_its_retry_after(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    posts: list[tuple[str, float]] = []

    class Recorded(RateLimits):
        def admit(self, channel: str) -> Any:
            posts.append((channel, time.now))
            return super().admit(channel)

    fake_slack.limits = Recorded(global_rate=100.0, global_burst=100, clock=time.monotonic)
    fake_slack.queue(
        "chat.postMessage", {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "7"}
    )
    channels = SLACK_CHANNELS[:2]
    queue(db, channels, 1, slack_payload)
    start = time.now
    results = await deliver_all(db, slack_poster(fake_slack, time, 50.0), channels, time)
    assert [r.state for r in results] == ["done", "done"]
    # The 429 came before any post was admitted; the two posts that follow wait it out.
    assert len(posts) == 2 and all(at >= start + 7 for _, at in posts)
    assert len(fake_slack.posted()) == 3


async def test_429s_are_not_attempts_and_never_give_a_message_up(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """A 429 means Slack posted nothing: with 2 attempts allowed, ten 429s in a row still
    end with the message posted once (counted as attempts, they would give it up)."""
    for _ in range(10):
        fake_slack.queue(
            "chat.postMessage", {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "2"}
        )
    channel = SLACK_CHANNELS[0]
    queue(db, [channel], 1, slack_payload)
    poster = slack_poster(fake_slack, time, 5.0)
    now = NOW
    for _ in range(5):
        [result] = await time.run([deliver_channel(db, poster, channel, now, max_attempts=2)])
        if result.state != "retrying":
            break
        [row] = db.query("select * from outbox")
        assert row["attempts"] == 0 and row["state"] == "pending"
        now = datetime.fromisoformat(row["next_attempt_at"])
    assert result.state == "done" and states(db) == {"sent": 1}
    assert len(fake_slack.posted()) == 11


async def test_a_long_platform_wide_pause_leaves_other_channels_queued_unsent(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """Retry-After of an hour: the channel that got it, and every other one after it,
    wait in the outbox (no slot held, nothing posted into the limit again)."""
    fake_slack.queue(
        "chat.postMessage", {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "3600"}
    )
    first, second = SLACK_CHANNELS[:2]
    queue(db, [first, second], 1, slack_payload)
    poster = slack_poster(fake_slack, time, 5.0)
    [one] = await time.run([deliver_channel(db, poster, first, NOW)])
    [two] = await time.run([deliver_channel(db, poster, second, NOW)])
    assert one.state == two.state == "retrying"
    assert len(fake_slack.posted()) == 1
    for row in db.query("select * from outbox"):
        assert row["state"] == "pending" and row["attempts"] == 0
        assert datetime.fromisoformat(row["next_attempt_at"]) >= NOW + timedelta(seconds=3599)


async def test_fifty_discord_channels_at_once_keep_within_the_global_limit(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """discord.py keeps each channel within its bucket from the X-RateLimit headers; the
    poster's limiter keeps the bot within the global limit: no 429, each message once."""
    from tests.fakes.discord_interactions import logged_in, make_services

    bot: PaperboyClient = await logged_in(
        make_services(tmp_path, [], catalog, fake_discord), fake_discord
    )
    try:
        fake_discord.limits = RateLimits(
            channel_burst=5, global_rate=20.0, global_burst=5, clock=time.monotonic
        )
        channels = [f"discord:{GUILD}/{500000000000000000 + n}" for n in range(50)]
        queue(db, channels, 3, lambda c, part: {"content": f"{c} part {part}"})
        poster = DiscordPoster(bot, rate=20.0, monotonic=time.monotonic, sleep=time.sleep)
        results = await deliver_all(db, poster, channels, time)
    finally:
        await bot.close()
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 150}
    created = Counter((m["channel_id"], m["content"]) for m in fake_discord.created)
    assert len(created) == 150 and set(created.values()) == {1}
    assert fake_discord.limited == []


async def test_the_limiter_spaces_turns_at_the_rate_in_order() -> None:
    time = VirtualTime()
    limits = SendLimits(10.0, channel_interval=1.0, monotonic=time.monotonic, sleep=time.sleep)
    turns: list[tuple[str, float]] = []

    async def turn(channel: str) -> ChannelResult:
        for _ in range(2):
            await limits.wait_turn(channel)
            turns.append((channel, time.now))
        return ChannelResult(channel)

    channels = "abcdefghijklmno"  # 15: a channel's second turn comes after its spacing
    await time.run([turn(c) for c in channels])
    starts = sorted(at for _, at in turns)
    assert [round(b - a, 6) for a, b in itertools.pairwise(starts)] == [0.1] * 29
    for channel in channels:
        first, second = [at for c, at in turns if c == channel]
        assert second - first >= 1.0  # a channel's own spacing


async def test_the_limiter_pauses_slows_down_and_recovers() -> None:
    time = VirtualTime()
    limits = SendLimits(10.0, monotonic=time.monotonic, sleep=time.sleep, max_wait=60)
    limits.limited("a", 2.0, "global")
    limits.limited("b", 2.0, "global")  # the same pause: the rate comes down once
    assert limits.rate == pytest.approx(8.0)
    start = time.now
    await time.run([_turn(limits, "c")])
    assert time.now == pytest.approx(start + 2.0)  # every channel waited the pause out
    limits.limited("a", 5.0, "channel")
    await time.run([_turn(limits, "c")])  # another channel: no wait for a's pause
    assert time.now == pytest.approx(start + 2.0 + 0.125, abs=0.01)
    limits.limited("a", 120.0, "global")
    with pytest.raises(Throttled):
        await limits.wait_turn("c")
    time.now += 120 + 30  # half a minute without a 429: 30% of the rate regained
    await time.run([_turn(limits, "c")])
    assert limits.rate == pytest.approx(10.0)


async def _turn(limits: SendLimits, channel: str) -> ChannelResult:
    await limits.wait_turn(channel)
    return ChannelResult(channel)


async def test_the_slack_client_leaves_post_429s_to_the_limiter_and_retries_the_rest(
    fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """A chat.postMessage retried by the client itself would skip the limiter (and every
    other channel's pause); other calls (users.info) are still retried after Retry-After."""
    from slack_sdk.errors import SlackApiError

    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=time.sleep)
    for method in ("chat.postMessage", "users.info"):
        fake_slack.queue(method, {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "2"})
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel="C0001", text="hello")
    assert len(fake_slack.posted()) == 1
    answer = await client.users_info(user="U1")
    assert answer["ok"] and len(fake_slack.posted("users.info")) == 2


async def test_a_discord_global_429_pauses_every_channel(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """discord.py retries a 429 itself up to 5 times; when those run out, the error says it
    was the global limit, and the poster's limiter pauses every channel, not just that one:
    the other channel, whose turn was next, posts only after the pause too. (Ten 429s: each
    retry takes its turn, so the other channel's first send meets some of them too; each
    channel's send meets five.)"""
    body = {"message": "You are being rate limited.", "retry_after": 0.01, "global": True}
    headers = {"Via": "1.1 google", "Retry-After": "9", "X-RateLimit-Global": "true"}
    for _ in range(10):
        fake_discord.queue("/messages", body, 429, headers)
    start, posts = await deliver_two_discord_channels(db, fake_discord, time, tmp_path, catalog)
    assert len(posts) == 2 and all(at >= start + 9 for at in posts)


async def deliver_two_discord_channels(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> tuple[float, list[float]]:
    """One message in each of two Discord channels, delivered through a logged-in client
    and a DiscordPoster (20/s) against `fake_discord` (with whatever answers the caller
    queued); checks both were sent once. Returns the start time and the times the fake
    admitted the posts."""
    from tests.fakes.discord_interactions import logged_in, make_services

    posts: list[float] = []

    class Recorded(RateLimits):
        def admit(self, channel: str) -> Any:
            posts.append(time.now)
            return super().admit(channel)

    bot: PaperboyClient = await logged_in(
        make_services(tmp_path, [], catalog, fake_discord), fake_discord
    )
    fake_discord.limits = Recorded(channel_burst=5, global_rate=100.0, clock=time.monotonic)
    channels = [f"discord:{GUILD}/{500000000000000000 + n}" for n in range(2)]
    queue(db, channels, 1, lambda c, part: {"content": f"{c} part {part}"})
    poster = DiscordPoster(bot, rate=20.0, monotonic=time.monotonic, sleep=time.sleep)
    start = time.now
    try:
        results = await deliver_all(db, poster, channels, time)
    finally:
        await bot.close()
    assert [r.state for r in results] == ["done", "done"] and states(db) == {"sent": 2}
    assert len(fake_discord.created) == 2
    return start, posts


async def _discord_run(
    fake: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any, db: Store, parts: int
) -> tuple[list[ChannelResult], list[tuple[str, float]], DiscordPoster]:
    """Three channels at 20/s through a logged-in bot, each post the fake admits recorded
    with its channel and (virtual) time."""
    from tests.fakes.discord_interactions import logged_in, make_services

    posts: list[tuple[str, float]] = []

    class Recorded(RateLimits):
        def admit(self, channel: str) -> Any:
            posts.append((channel, time.now))
            return super().admit(channel)

    bot: PaperboyClient = await logged_in(make_services(tmp_path, [], catalog, fake), fake)
    fake.limits = Recorded(channel_burst=5, global_rate=100.0, clock=time.monotonic)
    channels = [f"discord:{GUILD}/{500000000000000000 + n}" for n in range(3)]
    queue(db, channels, parts, lambda c, part: {"content": f"{c} part {part}"})
    poster = DiscordPoster(bot, rate=20.0, monotonic=time.monotonic, sleep=time.sleep)
    try:
        results = await deliver_all(db, poster, channels, time)
    finally:
        await bot.close()
    return results, posts, poster


async def test_a_global_429_discord_py_retries_itself_pauses_every_channel_and_slows_down(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """discord.py waits out a 429 of up to 30 s and sends again by itself; the limiter
    hears of it, pauses every channel for the body's retry_after (0.2 s: discord.py sleeps
    it for real) and halves the rate (the first declared global 429: nothing is measured
    yet). Unheard, other channels would keep posting into the global limit at the same
    rate (the bench, told 100/s against 50/s: 299 global 429s)."""
    body = {"message": "You are being rate limited.", "retry_after": 0.2, "global": True}
    headers = {"Via": "1.1 google", "Retry-After": "1", "X-RateLimit-Global": "true",
               "X-RateLimit-Scope": "global"}  # fmt: skip
    fake_discord.queue("/messages", body, 429, headers)
    start = time.now
    results, posts, poster = await _discord_run(fake_discord, time, tmp_path, catalog, db, 1)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 3}
    assert len(fake_discord.created) == 3 and len(fake_discord.limited) == 0
    # discord.py's own retry of the refused post takes its turn too (it went at once).
    assert len(posts) == 3 and all(at >= start + 0.2 for _, at in posts)
    assert 10.0 <= poster.limits.rate < 10.1  # 20 x 0.5, and 1% of 20 a second regained


async def test_a_channel_429_discord_py_retries_itself_pauses_only_that_channel(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    fake_discord.queue_rate_limit("/messages", retry_after=0.2)  # X-RateLimit-Scope: user
    start = time.now
    results, posts, poster = await _discord_run(fake_discord, time, tmp_path, catalog, db, 2)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 6}
    assert len(fake_discord.created) == 6
    refused = fake_discord.made("POST", "/messages")[0].path.split("/")[2]  # got the 429
    assert len([at for channel, at in posts if channel == refused]) == 2
    # Its own posts (discord.py's retry, its second message) waited; the others did not.
    assert all(at >= start + 0.2 for channel, at in posts if channel == refused)
    assert min(at for channel, at in posts if channel != refused) < start + 0.2
    assert poster.limits.rate == 20.0


async def test_a_long_global_429_discord_py_raises_pauses_every_channel(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """A 429 longer than discord.py waits (30 s) comes back as `discord.RateLimited`, which
    does not say whether it was global: it paused only its own channel."""
    body = {"message": "You are being rate limited.", "retry_after": 45.0, "global": True}
    fake_discord.queue("/messages", body, 429, {"Via": "1.1 google", "Retry-After": "45"})
    start = time.now
    results, posts, _ = await _discord_run(fake_discord, time, tmp_path, catalog, db, 1)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 3}
    assert len(fake_discord.created) == 3
    assert len(posts) == 3 and all(at >= start + 45 for _, at in posts)


def test_the_429s_of_sends_already_under_way_lower_the_rate_once() -> None:
    """Discord's global 429s ask for pauses of a few ms, so those of the sends that were
    already under way come back after the first one's pause has ended: each lowered the
    rate again (told 100/s against 50/s, 1,000 channels fell to the 0.5/s floor and
    posted 5% of the allowed rate). Once a second at most; a 429 after that lowers it."""
    time = VirtualTime()
    limits = SendLimits(100.0, monotonic=time.monotonic, sleep=time.sleep)
    for _ in range(20):
        limits.limited("a", 0.02, "global")
        time.now += 0.03  # after its pause
    assert 80.0 <= limits.rate < 81.0
    time.now += 0.5
    limits.limited("a", 0.02, "global")
    assert 64.0 <= limits.rate < 66.0


async def test_turns_handed_out_before_a_global_429_are_spaced_at_the_lowered_rate() -> None:
    """Five channels wait for turns 0.1 s apart (10/s); a global 429 at 0.05 s lowers the
    rate to 8/s: the turns still to come are 0.125 s apart (they kept the old spacing)."""
    time = VirtualTime()
    start = time.now
    limits = SendLimits(10.0, monotonic=time.monotonic, sleep=time.sleep)
    turns: list[float] = []

    async def turn(channel: str) -> ChannelResult:
        await limits.wait_turn(channel)
        turns.append(time.now - start)
        return ChannelResult(channel)

    async def refused() -> ChannelResult:
        await time.sleep(0.05)
        limits.limited("a", 0.01, "global")
        return ChannelResult("a")

    await time.run([*(turn(c) for c in "abcde"), refused()])
    assert turns[:2] == pytest.approx([0.0, 0.1])  # the next turn was past the pause
    gaps = [b - a for a, b in itertools.pairwise(turns[1:])]
    assert gaps == pytest.approx([0.125] * 3, abs=0.001)


async def test_discord_told_twice_its_global_rate_learns_it_one_429_per_channel_at_most(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """Told 40/s where the bot's global limit is 20/s (burst 20), 120 channels of 3
    messages all at once: the first global 429 halves the rate, the next (a second or more
    later) measures what Discord let through between them, its real rate, and the
    limiter keeps to 98% of it from then on. A fifth less at each 429, climbing back
    towards the setting, would meet the limit again on the same channels (the bench, told
    100/s against 50/s: up to 3 429s on one channel)."""
    from tests.fakes.discord_interactions import logged_in, make_services

    bot: PaperboyClient = await logged_in(
        make_services(tmp_path, [], catalog, fake_discord), fake_discord
    )
    limits = RateLimits(channel_burst=5, global_rate=20.0, global_burst=20, clock=time.monotonic)
    try:
        fake_discord.limits = limits
        channels = [f"discord:{GUILD}/{500000000000000000 + n}" for n in range(120)]
        queue(db, channels, 3, lambda c, part: {"content": f"{c} part {part}"})
        poster = DiscordPoster(bot, rate=40.0, monotonic=time.monotonic, sleep=time.sleep)
        results = await deliver_all(db, poster, channels, time)
    finally:
        await bot.close()
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 360}
    created = Counter((m["channel_id"], m["content"]) for m in fake_discord.created)
    assert len(created) == 360 and set(created.values()) == {1}
    assert sum(limits.refused.values()) > 0 and max(limits.refused.values()) == 1
    assert poster.limits.learned is not None
    assert 18.5 <= poster.limits.learned <= 20.0  # 98% of the 20/s measured


async def test_a_channel_429_with_its_bucket_spaces_that_channel_at_the_buckets_rate() -> None:
    """X-RateLimit-Limit 5 and Reset-After 5 s with the bucket empty: the channel refills
    one message a second, so after the 429's pause its turns are a second apart (2% to
    spare); another channel is not spaced."""
    time = VirtualTime()
    limits = SendLimits(None, monotonic=time.monotonic, sleep=time.sleep)
    start = time.now
    limits.limited("a", 0.5, "channel", bucket_size=5, full_after=5.0)
    at: dict[str, list[float]] = {"a": [], "b": []}

    async def turns(channel: str) -> ChannelResult:
        for _ in range(3):
            await limits.wait_turn(channel)
            at[channel].append(time.now - start)
        return ChannelResult(channel)

    await time.run([turns("a"), turns("b")])
    assert at["a"] == pytest.approx([0.5, 0.5 + 1 / 0.98, 0.5 + 2 / 0.98])
    assert at["b"] == [0.0, 0.0, 0.0]


def test_declared_global_429s_far_apart_measure_nothing() -> None:
    """The bucket was empty at both 429s only if the bot kept sending between them: one
    on Monday's batch and one on Tuesday's (a few posts between, a day apart) would
    "measure" the 0.5/s floor and keep to it for good. The later one only starts a new
    measure; one 2-30 s after it measures."""
    time = VirtualTime()
    limits = SendLimits(50.0, monotonic=time.monotonic, sleep=time.sleep)
    limits.limited("a", 0.01, "global", declared=True)
    for _ in range(10):
        limits.accepted()
    time.now += 86_400.0
    limits.limited("a", 0.01, "global", declared=True)
    assert limits.learned is None and limits.rate is not None and limits.rate >= 40.0
    for _ in range(100):
        limits.accepted()
    time.now += 4.0
    limits.limited("a", 0.01, "global", declared=True)
    assert limits.learned == pytest.approx(25.0 * 0.98)


async def test_a_measured_rate_holds_ten_minutes_after_the_last_global_429_then_climbs() -> None:
    """A wrong measure (a stray or forged global 429, another process sending with the
    bot's token) must not cap the rate for as long as the bot runs. It holds while
    declared global 429s keep coming, and 10 minutes after the last one the rate climbs
    back towards the setting, as after any 429."""
    time = VirtualTime()
    limits = SendLimits(50.0, monotonic=time.monotonic, sleep=time.sleep)
    limits.limited("a", 0.01, "global", declared=True)
    for _ in range(4):  # 2/s measured: far too low
        limits.accepted()
    time.now += 2.0
    limits.limited("a", 0.01, "global", declared=True)
    assert limits.learned == pytest.approx(2.0 * 0.98) and limits.rate == limits.learned
    time.now += 300.0
    limits.limited("a", 0.01, "global", declared=True)  # too far apart to measure: holds
    time.now += 599.0
    await limits.wait_turn("b")
    assert limits.learned is not None and limits.rate == pytest.approx(2.0 * 0.98)
    time.now += 11.0  # 10 s past the 10 minutes: 1% of 50/s a second regained since
    await limits.wait_turn("b")
    assert limits.learned is None
    assert limits.rate == pytest.approx(2.0 * 0.98 + 5.0)


async def test_the_discord_poster_passes_a_channel_429s_bucket_headers(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """A channel's 429 says its bucket's size (X-RateLimit-Limit 5) and when it is full
    again (X-RateLimit-Reset-After 0.2 s): the poster hands both to the limiter, which
    spaces that channel's sends 0.2 / 5 / 0.98 s apart; no other channel."""
    fake_discord.queue_rate_limit("/messages", retry_after=0.2)
    results, _, poster = await _discord_run(fake_discord, time, tmp_path, catalog, db, 2)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 6}
    refused = fake_discord.made("POST", "/messages")[0].path.split("/")[2]
    assert poster.limits._channel_spacing == {refused: pytest.approx(0.2 / 5 / 0.98)}


async def test_a_429_with_garbage_rate_limit_headers_pauses_and_delivers(
    db: Store, fake_discord: FakeDiscord, time: VirtualTime, tmp_path: Path, catalog: Any
) -> None:
    """Headers that are not numbers (or are 0, negative, infinite) space nothing, crash
    nothing, and every message is delivered once."""
    for limit, after in (("abc", "nan"), ("0", "-3"), ("inf", "1e999"), ("", "")):
        fake_discord.queue(
            "/messages",
            {"message": "You are being rate limited.", "retry_after": 0.1, "global": False},
            429,
            {
                "Via": "1.1 google",
                "X-RateLimit-Limit": limit,
                "X-RateLimit-Reset-After": after,
                "X-RateLimit-Scope": "user",
            },
        )
    results, _, poster = await _discord_run(fake_discord, time, tmp_path, catalog, db, 2)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 6}
    created = Counter((m["channel_id"], m["content"]) for m in fake_discord.created)
    assert len(created) == 6 and set(created.values()) == {1}
    assert poster.limits._channel_spacing == {} and poster.limits.rate == 20.0


# --- Delivery under rate limits, harder cases: claims taken after a long wait for a turn,
# Retry-After values no platform should send, and a configured rate below the limiter's
# floor.


async def test_a_claim_taken_after_a_long_wait_for_a_turn_is_not_already_expired(
    db: Store,
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
    db: Store, seconds: float
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
    """Not "could not convert string to float: 'fast'" (Python's words, not the
    setting's range)."""
    with pytest.raises(SettingsError) as caught:
        load_settings({name: value}, dotenv=None)
    message = str(caught.value)
    assert "\n" not in message and name in message
    assert message.endswith("must be a number of messages a second, from 0.1 to 10000")


async def test_a_discord_cloudflare_429_pauses_every_channel(
    db: Store, fake_discord: FakeDiscord, tmp_path: Path, catalog: Any
) -> None:
    """A 429 without Discord's `Via` header (a text body: "error code: 1015") is Cloudflare
    refusing the bot's address, every request alike; discord.py raises it at once. Every
    channel waits a minute: pausing only the channel that got it, for the default second,
    would leave every other channel posting into the ban (which lengthens it)."""
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
    db: Store, monkeypatch: pytest.MonkeyPatch
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
    db: Store, fake_slack: FakeSlack
) -> None:
    """chat.postMessage's own `rate_limited` error ("Application has posted too many
    messages", an HTTP 200 answer) refuses the message like a 429's `ratelimited`: it is
    not counted as an attempt (with 2 attempts allowed, the second would give it up)."""
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

    def __init__(self, limits: SendLimits, db: Store, error: Exception) -> None:
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
    db: Store, error: TransientError
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
