"""Digest delivery to Slack through the real slack_sdk client and a local fake Web API."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from bot.delivery import deliver_channel
from bot.services import Services
from db import open_db
from db.channels import get_channel, set_paused
from db.outbox import due
from digests.commands import handle
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.clock import FakeTime
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_delivery import CHANNEL, clock, follow, poster_for, send, send_to, services  # noqa: F401
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    assert_valid_blocks,
    signed_headers,
    slash_body,
    start_http,
)


def rate_limited(fake: FakeSlack, retry_after: str) -> None:
    """Slack's next chat.postMessage answers 429 with this Retry-After."""
    fake.queue(
        "chat.postMessage",
        {"ok": False, "error": "ratelimited"},
        status=429,
        headers={"Retry-After": retry_after},
    )


async def test_the_whole_path_over_http(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    """A signed /papers subscribe, then a digest sent to the fake Web API as valid Block Kit."""
    client = await start_http(services, fake_slack)
    try:
        body = slash_body("subscribe offline-rl", fake_slack.response_url())
        response = await client.post("/slack/events", data=body, headers=signed_headers(body))
        assert response.status == 200
    finally:
        await client.close()
    _, result = await send(services, fake_slack, clock)
    assert result.state == "done" and result.sent == 1
    [posted] = fake_slack.posted()
    assert posted["channel"] == "C0001"
    assert posted["text"].startswith("Paperboy: 3 new papers for Offline RL")
    assert posted["unfurl_links"] is False
    assert_valid_blocks(posted["blocks"])
    assert "LoMAP" in json.dumps(posted["blocks"])
    [call] = [c for c in fake_slack.calls if c.method == "chat.postMessage"]
    assert call.token == BOT_TOKEN
    # sending again posts nothing twice
    _, again = await send(services, fake_slack, clock)
    assert again.state == "nothing" and len(fake_slack.posted()) == 1


async def test_a_long_digest_is_threaded_and_paced(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    follow(services, *services.catalog.ids)
    roomy = replace(services.settings, digest_size=50)
    extra = services.db_path.parent / "more.tsv"
    rows = "\n".join(
        f"Robot paper {i}\tWe propose Robo{i}, a robot grasping method for dexterous robots."
        for i in range(60)
    )
    extra.write_text("title\tabstract\n" + rows + "\n")
    ingest_files(open_db(services.db_path), [extra], now=NOW)
    _, result = await send(services, fake_slack, clock, settings=roomy)
    posted = fake_slack.posted()
    assert result.sent == len(posted) >= 2
    first_ts = "1700000001.000100"
    assert "thread_ts" not in posted[0]
    assert all(message["thread_ts"] == first_ts for message in posted[1:])
    for message in posted:
        assert_valid_blocks(message["blocks"])
    assert clock.sleeps == [1.0] * (len(posted) - 1)  # one message a second in a channel


async def test_429_waits_for_retry_after_then_succeeds(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    follow(services, "robotics")
    rate_limited(fake_slack, "7")
    _, result = await send(services, fake_slack, clock)
    assert result.state == "done" and result.sent == 1
    assert len(fake_slack.posted()) == 2  # the refused attempt, then the retry
    assert 7.0 in clock.sleeps


async def test_a_429_storm_leaves_the_message_pending_for_later(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    follow(services, "robotics")
    for _ in range(10):
        rate_limited(fake_slack, "30")
    db = open_db(services.db_path)
    _, result = await send(services, fake_slack, clock)
    assert result.state == "retrying"
    assert len(fake_slack.posted()) == 4  # one try and three retries, then the outbox takes over
    assert due(db, CHANNEL, (NOW + timedelta(seconds=29)).isoformat()) == []
    [waiting] = due(db, CHANNEL, (NOW + timedelta(seconds=31)).isoformat())
    assert waiting["state"] == "pending" and waiting["last_error"] == "ratelimited"
    assert waiting["attempts"] == 0  # Slack refused every post: no attempt, none given up
    assert not get_channel(db, CHANNEL)["paused"]


async def test_an_hour_long_429_is_left_to_the_outbox_at_once(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    """A Retry-After of an hour goes to the outbox at once: waited out 60 s at a time,
    three times, for the same 429, it would hold `digest --send` (and a delivery slot)
    three minutes for nothing."""
    follow(services, "robotics")
    for _ in range(4):
        rate_limited(fake_slack, "3600")
    _, result = await send(services, fake_slack, clock)
    assert result.state == "retrying"
    assert len(fake_slack.posted()) == 1 and clock.sleeps == []
    [row] = open_db(services.db_path).query("select * from outbox")
    assert datetime.fromisoformat(row["next_attempt_at"]) == NOW + timedelta(seconds=3600)


async def test_an_unreadable_retry_after_is_a_plain_rate_limit(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    follow(services, "robotics")
    for _ in range(4):
        rate_limited(fake_slack, "soon")
    _, result = await send(services, fake_slack, clock)
    assert result.state == "retrying" and result.reason == "ratelimited"  # not "unexpected"


@pytest.mark.parametrize(
    "error", ["channel_not_found", "not_in_channel", "is_archived", "invalid_auth"]
)
async def test_permanent_errors_pause_the_channel(
    services: Services,
    fake_slack: FakeSlack,
    clock: FakeTime,
    error: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    follow(services, "robotics")
    fake_slack.queue("chat.postMessage", {"ok": False, "error": error})
    db = open_db(services.db_path)
    _, result = await send(services, fake_slack, clock)
    assert result.state == "paused" and result.reason == error
    assert len(fake_slack.posted()) == 1  # no retry storm
    assert get_channel(db, CHANNEL)["paused_reason"] == error
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"delivery to {CHANNEL} paused: {error}"
    ]
    assert BOT_TOKEN not in caplog.text
    ctx = services.context(CHANNEL, "alice")
    assert any(error in line for line in handle("status", ctx).lines)
    assert any(error in line for line in handle("list", ctx).lines)
    # while paused, nothing is attempted
    again = await deliver_channel(
        db, poster_for(fake_slack, clock), CHANNEL, NOW + timedelta(days=1)
    )
    assert again.state == "paused" and len(fake_slack.posted()) == 1


async def test_paper_text_reaches_slack_escaped(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    hostile = services.db_path.parent / "hostile.tsv"
    hostile.write_text(
        "title\tabstract\n<!channel> Robots & <@U1>\t"
        "We propose a robot for <!everyone>, grasping.\n"
    )
    ingest_files(open_db(services.db_path), [hostile], now=NOW)
    follow(services, "robotics")
    await send(services, fake_slack, clock)
    text = json.dumps(fake_slack.posted())
    assert "&lt;!channel&gt; Robots &amp; &lt;@U1&gt;" in text
    assert "<!channel>" not in text and "<!everyone>" not in text and "<@U1>" not in text


async def test_resuming_is_possible_after_a_pause(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    from db.outbox import resume_channel

    follow(services, "robotics")
    fake_slack.queue("chat.postMessage", {"ok": False, "error": "not_in_channel"})
    db = open_db(services.db_path)
    await send(services, fake_slack, clock)
    set_paused(db, CHANNEL, None, NOW.isoformat())
    resume_channel(db, CHANNEL)
    result = await deliver_channel(db, poster_for(fake_slack, clock), CHANNEL, NOW)
    assert result.state == "done" and result.sent == 1


async def test_a_dropped_connection_posts_each_message_once_per_attempt(
    services: Services, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    """slack_sdk's default connection-error retry re-posted at once: 2 posts per attempt."""
    follow(services, "robotics")
    fake_slack.drop("chat.postMessage")  # every post is read, recorded, then cut off
    db = open_db(services.db_path)
    poster = poster_for(fake_slack, clock)
    _, result = await send(services, fake_slack, clock)
    now = NOW
    while result.state == "retrying":
        [row] = db.query("select next_attempt_at from outbox where channel = ?", [CHANNEL])
        now = datetime.fromisoformat(row["next_attempt_at"])
        result = await deliver_channel(db, poster, CHANNEL, now, max_attempts=3)
    assert result.state == "failed" and "connection problem" in (result.reason or "")
    rows = list(db.query("select * from outbox where channel = ?", [CHANNEL]))
    assert len(rows) == 1 and rows[0]["attempts"] == 3
    posts_per_message = Counter(post["text"] for post in fake_slack.posted())
    assert list(posts_per_message.values()) == [3]  # one post per attempt, never more
    # an answer lost once: the next attempt delivers, so the message arrives at most twice
    fake_slack.drop("chat.postMessage", times=1)
    follow(services, "rlhf", channel="slack:T0001/C0002")
    _, again = await send_to(services, fake_slack, clock, "slack:T0001/C0002")
    assert again.state == "retrying"
    [row] = db.query("select * from outbox where channel = 'slack:T0001/C0002'")
    later = datetime.fromisoformat(row["next_attempt_at"])
    done = await deliver_channel(db, poster, "slack:T0001/C0002", later)
    assert done.state == "done"
    assert len([p for p in fake_slack.posted() if p["channel"] == "C0002"]) == 2
