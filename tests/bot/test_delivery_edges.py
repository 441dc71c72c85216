"""Delivery edge cases of Discord and personal digests.

- A message discord.py refuses to send before any request (11 embeds, a sixth row of
  buttons) is given up at once like a message Discord refuses (`RefusedMessage`): tried
  once, one ERROR line, the channel not paused. A `ValueError` from the request itself (an
  answer that is not JSON) is still an ordinary transient error.
"""

from __future__ import annotations

import itertools
import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError

from bot.delivery import deliver_channel
from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.dm import DmChannels
from bot.send import send_digest
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from db import open_db
from db.app_state import get_state
from db.channels import get_channel
from db.store import Store
from digests.actions import VOTE_UP, custom_id
from digests.channels import ChannelRef
from digests.timestamps import stamp
from tests.conftest import NOW
from tests.fakes.delivery import VirtualTime, db, deliver_all, queue, slack_payload, states, time
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_buttons import (
    ALICE,
    BOB,
    click,
    delivered,
    labels,
    paper_of,
    refused,
    stored,
)
from tests.fakes.discord_delivery import subscribe
from tests.fakes.discord_interactions import CHANNEL, logged_in, make_services
from tests.fakes.rate_limits import RateLimits
from tests.fakes.slack_api import Call, FakeSlack
from tests.fakes.slack_requests import BOT_TOKEN

__all__ = ["db", "time"]  # the fixtures (tests/fakes/delivery.py), used by name

# --- a message discord.py refuses before sending ----------------------------------------


class Reshaping(DiscordPoster):
    """A poster whose messages are changed by `reshape` first: the kind of message a
    renderer bug would make."""

    def __init__(self, bot: PaperboyClient, reshape: Any) -> None:
        super().__init__(bot)
        self.reshape = reshape

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        return await super().send(channel, self.reshape(payload), thread_of)


def eleven_embeds(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "embeds": [{"title": f"paper {n}"} for n in range(11)]}


def six_rows(payload: dict[str, Any]) -> dict[str, Any]:
    row = {"type": 1, "components": [{"type": 2, "style": 5, "label": "PDF",
                                      "url": "https://arxiv.org/pdf/2101.00001"}]}  # fmt: skip
    return {**payload, "components": [row] * 6}


async def deliver_with(bot: PaperboyClient, poster: DiscordPoster) -> tuple[Any, Any]:
    return await send_digest(
        open_db(bot.services.db_path),
        poster,
        CHANNEL,
        NOW,
        catalog=bot.services.catalog,
        settings=bot.services.settings,
    )


@pytest.mark.parametrize(
    ("reshape", "said"),
    [
        (eleven_embeds, "embeds has a maximum of 10 elements"),
        (six_rows, "ValueError"),
    ],
)
async def test_a_message_discordpy_refuses_is_given_up_at_once(
    bot: PaperboyClient,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
    reshape: Any,
    said: str,
) -> None:
    await subscribe(bot, fake_discord, "robotics")
    caplog.set_level(logging.INFO)
    digest, result = await deliver_with(bot, Reshaping(bot, reshape))
    assert digest.items
    assert result.state == "failed" and said in result.reason
    assert fake_discord.made("POST", "/messages") == []  # nothing reached Discord
    db = open_db(bot.services.db_path)
    [row] = db.query("select * from outbox where channel = ?", [CHANNEL])
    # tried once, given up at once: no retry planned
    assert row["state"] == "failed" and row["attempts"] == 1 and row["next_attempt_at"] is None
    channel = get_channel(db, CHANNEL)
    assert channel is not None and not channel["paused"]
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelname for r in loud] == ["ERROR"]  # one line, no traceback
    assert "should not have made" in loud[0].getMessage() and loud[0].exc_info is None
    # its papers go in the next digest, once: see
    # test_a_refused_discord_digests_papers_go_out_in_the_next_digest_once


async def test_a_value_error_from_the_answer_is_still_transient(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """An answer that says it is JSON and is not (discord.py raises json's ValueError,
    after Discord may have posted the message): retried later, as before, not refused."""
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.queue("/messages", b"{not json", raw=True)
    _, result = await deliver_with(bot, DiscordPoster(bot))
    assert result.state == "retrying"
    assert len(fake_discord.made("POST", "/messages")) == 1
    [row] = open_db(bot.services.db_path).query("select * from outbox where channel = ?", [CHANNEL])
    assert row["state"] == "pending" and row["attempts"] == 1 and row["next_attempt_at"]


# --- opening DMs, paced -------------------------------------------------------------------
#
# A first delivery of personal digests opens a DM per user (Slack `conversations.open`,
# Tier 3: "50+ per minute"; Discord `POST /users/@me/channels`, one more request against
# the bot's global limit). The fakes enforce those limits on the virtual clock of
# tests/bot/test_delivery_limits.py, which the posters' limiters share.

USERS = [f"U{n:04d}" for n in range(1, 9)]
PERSONAL = [f"slack:T0001/@{user}" for user in USERS]
TIER_3 = 50 / 60  # conversations.open, a second


def slack_dm_poster(fake: FakeSlack, time: VirtualTime, db: Store) -> SlackPoster:
    client = make_client(BOT_TOKEN, fake.api_url, sleep=time.sleep)
    return SlackPoster(
        client, rate=5.0, monotonic=time.monotonic, sleep=time.sleep, dms=DmChannels(lambda: db)
    )


def opens(fake: FakeSlack) -> list[Call]:
    return [call for call in fake.calls if call.method == "conversations.open"]


async def test_first_slack_deliveries_open_dms_no_faster_than_tier_3(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """8 users' first personal digests at once: 8 DMs opened, 1.2 s apart (Tier 3), none
    refused, each digest posted once to its DM; the ids are remembered for the next
    process. (At the posting rate, 5 a second, Slack would refuse the opens.)"""
    fake_slack.clock = time.monotonic
    fake_slack.open_limits = RateLimits(
        channel_rate=TIER_3, channel_burst=2, global_rate=TIER_3, global_burst=2,
        clock=time.monotonic,
    )  # fmt: skip
    queue(db, PERSONAL, 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    results = await deliver_all(db, poster, PERSONAL, time)
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 8}
    assert fake_slack.open_limited == []
    calls = opens(fake_slack)
    assert sorted(call.args["users"] for call in calls) == USERS  # once each
    gaps = [b.at - a.at for a, b in itertools.pairwise(calls)]
    assert min(gaps) >= 1 / TIER_3 - 1e-6
    posted = sorted(p["channel"] for p in fake_slack.accepted())
    assert posted == sorted(fake_slack.dms.values())
    assert {get_state(db, f"dm {ref}") for ref in PERSONAL} == set(fake_slack.dms.values())


def rate_limit_opens(fake: FakeSlack, times: int, retry_after: int) -> None:
    for _ in range(times):
        fake.queue(
            "conversations.open",
            {"ok": False, "error": "ratelimited"},
            status=429,
            headers={"Retry-After": str(retry_after)},
        )


async def test_a_429_on_opening_is_waited_out_and_is_no_blocked_dm(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """Four 429s in a row (the poster's own three retries of an open, then the delivery's;
    Slack's client leaves them to the poster): the open is tried again after Retry-After,
    the digest goes out, the user's digest is not paused, and posting is not slowed: the
    429 was conversations.open's, not the posts'."""
    rate_limit_opens(fake_slack, 4, retry_after=7)
    queue(db, PERSONAL[:1], 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    start = time.now
    [result] = await deliver_all(db, poster, PERSONAL[:1], time)
    assert result.state == "done" and states(db) == {"sent": 1}
    assert len(opens(fake_slack)) == 5 and time.now - start >= 4 * 7
    assert not get_channel(db, PERSONAL[0])["paused"]  # type: ignore[index]
    assert poster.limits.rate == 5.0  # the posting rate, untouched
    [row] = db.query("select attempts from outbox")
    assert row["attempts"] == 1


async def test_a_long_429_on_opening_waits_in_the_outbox_and_others_post_on(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """A Retry-After of 2 minutes on conversations.open: that digest waits in the outbox
    (no attempt counted, not paused, not a blocked DM); a channel's digest delivered at
    the same time is posted at once, not held for the 2 minutes."""
    rate_limit_opens(fake_slack, 1, retry_after=120)
    channels = [PERSONAL[0], "slack:T0001/C0001"]
    queue(db, channels, 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    start = time.now
    personal, channel = await deliver_all(db, poster, channels, time)
    assert channel.state == "done" and time.now - start < 5
    assert personal.state == "retrying" and not get_channel(db, PERSONAL[0])["paused"]  # type: ignore[index]
    [row] = db.query("select * from outbox where channel = ?", [PERSONAL[0]])
    assert row["state"] == "pending" and row["attempts"] == 0
    assert row["next_attempt_at"] >= stamp(NOW + timedelta(seconds=119))
    assert poster.limits.rate == 5.0


async def test_discord_opens_take_a_turn_of_the_global_limit(
    tmp_path: Path, catalog: Any, fake_discord: FakeDiscord, db: Store, time: VirtualTime
) -> None:
    """8 first personal digests on Discord: 8 DM opens and 8 posts, 16 requests against
    the bot's global limit (here 10 a second, a burst of 2): none refused. (One turn a
    message for its two requests would be twice the rate.)"""
    bot = await logged_in(make_services(tmp_path, [], catalog, fake_discord), fake_discord)
    try:
        fake_discord.limits = RateLimits(
            channel_rate=10.0,
            channel_burst=5,
            global_rate=10.0,
            global_burst=2,
            clock=time.monotonic,
        )
        users = [str(500000000000000001 + n) for n in range(8)]
        channels = [f"discord:@{user}" for user in users]
        queue(db, channels, 1, lambda c, part: {"content": f"{c} part {part}"})
        poster = DiscordPoster(
            bot, rate=10.0, monotonic=time.monotonic, sleep=time.sleep, dms=DmChannels(lambda: db)
        )
        results = await deliver_all(db, poster, channels, time)
    finally:
        await bot.close()
    assert {r.state for r in results} == {"done"} and states(db) == {"sent": 8}
    assert len(fake_discord.made("POST", "/users/@me/channels")) == 8
    assert fake_discord.limited == []
    assert sorted(m["channel_id"] for m in fake_discord.created) == sorted(
        fake_discord.dms.values()
    )


# --- Discord: a digest clicked from a thread started on it --------------------------------
#
# A thread started from a message has that message's id, and the message stays in the
# parent channel; inside the thread, Discord shows it at the top (the starter message). A
# click there may carry the thread as its channel (a thread channel object with
# `parent_id`): taken as a click in the parent channel only when the message clicked is the
# thread's starter and the thread's parent is the digest's channel.


async def test_a_click_from_a_thread_started_on_the_digest_counts_for_its_channel(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)
    up = custom_id(VOTE_UP, digest_id, paper)
    callback, line = await click(
        bot, fake_discord, message, up, user_id=ALICE, thread=message["id"]
    )
    assert callback["type"] == 7 and "more papers like this" in line["content"]
    assert stored(bot) == ([(CHANNEL, "offline-rl", paper, ALICE, 1)], [])
    assert labels(fake_discord.messages[message["id"]])[0] == "1. 👍 More like this · 1"
    # and from the channel itself, as before: the counts add up
    await click(bot, fake_discord, message, up, user_id=BOB)
    assert labels(fake_discord.messages[message["id"]])[0] == "1. 👍 More like this · 2"


async def test_thread_clicks_that_are_not_on_the_digests_own_message_change_nothing(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """A thread whose parent is another channel (though started from a message of this
    id), or a thread of the digest's channel that was not started from this message: the
    click is refused as another channel's, as any click elsewhere is."""
    digest_id, message = await delivered(bot, fake_discord)
    up = custom_id(VOTE_UP, digest_id, paper_of(message))
    elsewhere = await refused(
        bot, fake_discord, message, up, thread=message["id"], thread_parent="333333333333333333"
    )
    assert elsewhere == "That button belongs to another channel's digest."
    other_thread = await refused(bot, fake_discord, message, up, thread="444444444444444444")
    assert other_thread == "That button belongs to another channel's digest."


# --- DM opens under Slack's 429s: the client leaves a 429 on `conversations.open` to the
# poster's opens limiter (`bot.dm`), which pauses every open, as chat.postMessage's 429s
# go to the posting limiter.


# --- conversations.open's 429s are the opens limiter's, not the client's -----------------


async def test_the_slack_client_leaves_a_429_on_conversations_open_to_its_caller(
    fake_slack: FakeSlack, time: VirtualTime
) -> None:
    rate_limit_opens(fake_slack, 1, retry_after=5)
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=time.sleep)
    with pytest.raises(SlackApiError) as raised:
        await client.conversations_open(users="U0001")
    assert raised.value.response.status_code == 429
    assert len(opens(fake_slack)) == 1  # not sent again by the client


async def test_a_429_on_one_open_holds_every_open_for_its_retry_after(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """Two users' first personal digests; Slack answers the first open 429 with a
    Retry-After of 30 s. No open goes out during those 30 s (the second user's turn comes
    1.2 s later: it must not go out then, into the limit, while the client sleeps through
    the first), both digests are posted once, no attempt is counted."""
    fake_slack.clock = time.monotonic
    rate_limit_opens(fake_slack, 1, retry_after=30)
    queue(db, PERSONAL[:2], 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    results = await deliver_all(db, poster, PERSONAL[:2], time)
    assert [r.state for r in results] == ["done", "done"] and states(db) == {"sent": 2}
    first, *later = opens(fake_slack)
    assert later and all(call.at >= first.at + 30 for call in later)
    assert len(fake_slack.accepted()) == 2
    assert [row["attempts"] for row in db.query("select attempts from outbox")] == [1, 1]
    assert poster.limits.rate == 5.0  # posting untouched


async def test_opens_further_off_than_a_minute_wait_in_the_outbox_not_in_the_send(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """70 users' first personal digests at once: Tier 3 opens (1.2 s apart) for all of
    them take 84 s. No send waits more than a minute for its open (the wait is inside the
    send, within its timeout and its claim): the ones whose turn is further off wait in the
    outbox instead, no attempt counted, no open made, and go out at the next delivery,
    each once."""
    users = [f"slack:T0001/@U{n:04d}" for n in range(1, 71)]
    fake_slack.clock = time.monotonic
    queue(db, users, 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    results = await deliver_all(db, poster, users, time)
    waiting = [r.channel for r in results if r.state == "retrying"]
    assert waiting and {r.state for r in results} == {"done", "retrying"}
    assert len(opens(fake_slack)) == len(fake_slack.accepted()) == 70 - len(waiting)
    rows = list(db.query("select * from outbox where state = 'pending'"))
    assert sorted(row["channel"] for row in rows) == sorted(waiting)
    assert {row["attempts"] for row in rows} == {0}
    # later, those go out too, each once
    later = NOW + timedelta(minutes=5)
    again = await time.run([deliver_channel(db, poster, c, later) for c in waiting])
    assert {r.state for r in again} == {"done"} and states(db) == {"sent": 70}
    assert sorted(call.args["users"] for call in opens(fake_slack)) == [
        u.split("@")[1] for u in users
    ]


class Timed(SlackPoster):
    """A Slack poster that notes how long each send took, on the virtual clock."""

    def __init__(self, time: VirtualTime, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.time = time
        self.took: list[float] = []

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        start = self.time.now
        try:
            return await super().send(channel, payload, thread_of)
        finally:
            self.took.append(self.time.now - start)


async def test_a_send_waits_for_its_dm_open_a_minute_at_most_in_all(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """Three 429s in a row on conversations.open, each with a Retry-After of 50 s: no send
    waits more than a minute for its open, in all (waiting out each 429 in turn, up to
    3 x 60 s and a post's turn, would pass the send's 300 s timeout: a timeout is counted
    as an attempt, 8 of them give the digest up). The delivery waits the rest out between
    sends: the digest goes out once, one attempt counted, the user's digest not paused."""
    rate_limit_opens(fake_slack, 3, retry_after=50)
    queue(db, PERSONAL[:1], 1, slack_payload)
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=time.sleep)
    poster = Timed(
        time, client, rate=5.0, monotonic=time.monotonic, sleep=time.sleep,
        dms=DmChannels(lambda: db),
    )  # fmt: skip
    [result] = await deliver_all(db, poster, PERSONAL[:1], time)
    assert result.state == "done" and states(db) == {"sent": 1}
    assert len(opens(fake_slack)) == 4 and len(fake_slack.accepted()) == 1
    assert max(poster.took) <= 61
    [row] = db.query("select attempts from outbox")
    assert row["attempts"] == 1
    assert not get_channel(db, PERSONAL[0])["paused"]  # type: ignore[index]


async def test_personal_digests_waiting_for_their_opens_hold_no_channel_back(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """Opens paused for 2 minutes (a 429 on the first): 25 more first personal digests
    due, then a channel's. The personal ones wait in the outbox at once, no posting turn
    taken, no attempt counted, no open tried; the channel's digest is posted at once.
    (Were each to take a posting turn, 0.2 s apart at 5 a second, before finding its
    open too far off, the channel would wait 5 s behind them; with thousands of first
    personal digests, every channel's posts would be held back for as long as their opens
    take, 20 minutes for 1,000.)"""
    fake_slack.clock = time.monotonic
    rate_limit_opens(fake_slack, 1, retry_after=120)
    users = [f"slack:T0001/@U{n:04d}" for n in range(1, 27)]
    queue(db, [*users, "slack:T0001/C0001"], 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    [first] = await deliver_all(db, poster, users[:1], time)
    assert first.state == "retrying"
    start = time.now
    *personal, channel = await deliver_all(db, poster, [*users[1:], "slack:T0001/C0001"], time)
    assert channel.state == "done" and {r.state for r in personal} == {"retrying"}
    [post] = fake_slack.accepted()
    assert post["channel"] == "C0001" and time.now - start < 1
    assert len(opens(fake_slack)) == 1  # the first, refused
    rows = list(db.query("select * from outbox where state = 'pending'"))
    assert len(rows) == 26 and {row["attempts"] for row in rows} == {0}
    assert min(row["next_attempt_at"] for row in rows) >= stamp(NOW + timedelta(seconds=100))


# --- a digest discord.py refused: its papers go in the next digest, once ------------------


def _paper_ids(db: Store, state: str) -> list[str]:
    rows = db.query(
        "select paper_ids from outbox where channel = ? and state = ?", [CHANNEL, state]
    )
    return [paper for row in rows for paper in json.loads(row["paper_ids"])]


async def test_a_refused_discord_digests_papers_go_out_in_the_next_digest_once(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """A digest discord.py refuses before sending (11 embeds) is given up; next week's
    digest picks its papers again and posts them, and the week after does not repeat
    them. (test_delivery_edges' 'the channel goes on' delivered again at the same time:
    the same digest, reused, 'nothing' to send: it could not fail.)"""
    await subscribe(bot, fake_discord, "robotics")
    db = open_db(bot.services.db_path)
    _, refused = await deliver_with(bot, Reshaping(bot, eleven_embeds))
    assert refused.state == "failed"
    lost = _paper_ids(db, "failed")
    assert lost and fake_discord.created == []

    async def week(n: int) -> Any:
        return await send_digest(
            db, DiscordPoster(bot), CHANNEL, NOW + timedelta(days=7 * n),
            catalog=bot.services.catalog, settings=bot.services.settings,
        )  # fmt: skip

    _, second = await week(1)
    assert second.state == "done" and second.sent >= 1
    sent = _paper_ids(db, "sent")
    assert set(lost) <= set(sent) and len(sent) == len(set(sent))
    await week(2)
    again = _paper_ids(db, "sent")
    assert all(again.count(paper) == 1 for paper in lost)  # never twice


# --- guards: odd Retry-After values, restarts, Discord's opens -----------------------------


@pytest.mark.parametrize(
    ("retry_after", "at_least", "at_most"),
    [("soon", 0, 60), ("1e12", 3500, 3700), ("-5", 0, 60)],
)
async def test_an_opens_429_with_a_strange_retry_after_is_bounded(
    db: Store,
    fake_slack: FakeSlack,
    time: VirtualTime,
    retry_after: str,
    at_least: float,
    at_most: float,
) -> None:
    """Retry-After unreadable (1 s), negative (0) or huge (an hour at most): four 429s on
    conversations.open leave the digest pending for about that long, no attempt counted,
    not paused; it is never given up for them."""
    for _ in range(16):
        fake_slack.queue(
            "conversations.open",
            {"ok": False, "error": "ratelimited"},
            status=429,
            headers={"Retry-After": retry_after},
        )
    queue(db, PERSONAL[:1], 1, slack_payload)
    poster = slack_dm_poster(fake_slack, time, db)
    [result] = await deliver_all(db, poster, PERSONAL[:1], time)
    assert result.state == "retrying"
    [row] = db.query("select * from outbox")
    assert row["state"] == "pending" and row["attempts"] == 0
    assert stamp(NOW + timedelta(seconds=at_least)) <= row["next_attempt_at"]
    assert row["next_attempt_at"] <= stamp(NOW + timedelta(seconds=at_most))
    assert not get_channel(db, PERSONAL[0])["paused"]  # type: ignore[index]


async def test_a_dm_opened_whose_post_failed_is_not_opened_again_after_a_restart(
    db: Store, fake_slack: FakeSlack, time: VirtualTime
) -> None:
    """conversations.open answered, then chat.postMessage failed (500): the DM's id is
    kept, and the next process posts to it without opening it again, once."""
    fake_slack.queue("chat.postMessage", {"ok": False, "error": "internal_error"}, status=500)
    queue(db, PERSONAL[:1], 1, slack_payload)
    [first] = await deliver_all(db, slack_dm_poster(fake_slack, time, db), PERSONAL[:1], time)
    assert first.state == "retrying" and len(opens(fake_slack)) == 1
    restarted = slack_dm_poster(fake_slack, time, db)  # a new process: empty memory
    later = NOW + timedelta(hours=2)
    [again] = await time.run([deliver_channel(db, restarted, PERSONAL[0], later)])
    assert again.state == "done" and states(db) == {"sent": 1}
    assert len(opens(fake_slack)) == 1 and len(fake_slack.messages) == 1  # posted once


async def test_discord_personal_digests_waiting_for_opens_hold_no_channel_back(
    tmp_path: Path, catalog: Any, fake_discord: FakeDiscord, db: Store, time: VirtualTime
) -> None:
    """Discord answers a DM open 429 for 2 minutes (beyond discord.py's 30 s: the opens
    pause): 10 more first personal digests, then a channel's, at 1 post a second. The
    personal ones wait in the outbox without a posting turn; the channel posts at once
    (it waited 10 s behind their turns before)."""
    bot = await logged_in(make_services(tmp_path, [], catalog, fake_discord), fake_discord)
    try:
        fake_discord.queue_rate_limit("/users/@me/channels", retry_after=120)
        users = [f"discord:@{500000000000000001 + n}" for n in range(11)]
        channel = "discord:111111111111111111/222222222222222222"
        queue(db, [*users, channel], 1, lambda c, part: {"content": f"{c} part {part}"})
        poster = DiscordPoster(
            bot, rate=1.0, monotonic=time.monotonic, sleep=time.sleep, dms=DmChannels(lambda: db)
        )
        [first] = await deliver_all(db, poster, users[:1], time)
        assert first.state == "retrying"
        start = time.now
        *personal, posted = await deliver_all(db, poster, [*users[1:], channel], time)
    finally:
        await bot.close()
    assert posted.state == "done" and {r.state for r in personal} == {"retrying"}
    assert time.now - start < 2
    assert len(fake_discord.made("POST", "/users/@me/channels")) == 1
    assert [m["channel_id"] for m in fake_discord.created] == ["222222222222222222"]
    rows = list(db.query("select attempts from outbox where state = 'pending'"))
    assert len(rows) == 11 and {row["attempts"] for row in rows} == {0}
