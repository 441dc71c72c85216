"""Personal digests end to end: `--me` through the real adapters, then the
digest built on its schedule, queued, and delivered to the user's DM through the fake
Slack Web API and the fake Discord REST API: once, a blocked DM pausing only that user,
and a crash between queue and send sending once on restart."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.delivery import deliver_channel, queue_digest
from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.dm import DmChannels
from bot.scheduler import DigestScheduler
from bot.send import platform_messages, send_digest
from bot.services import Services
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from db.app_state import get_state
from db.channels import active_subscriptions, get_channel
from db.outbox import messages_for_digest
from digests.channels import ChannelRef
from digests.commands import handle
from digests.digest import build_digest
from digests.ingest import ingest_files
from digests.replies import Reply
from tests.conftest import NOW
from tests.fakes.clock import Clock
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import CHANNEL as DISCORD_CHANNEL
from tests.fakes.discord_interactions import MANAGE_CHANNELS, dispatch, interaction
from tests.fakes.personal import DISCORD_ME, DISCORD_USER, clock, post, services, topics_of, with_me  # noqa: F401
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    start_http,
)

CHANNEL = "slack:T0001/C0001"
ALICE = "slack:T0001/@U0001"
BOB = "slack:T0001/@U0002"


def me(services: Services, user: str, text: str) -> Reply:
    """A command by Slack user `user` in CHANNEL, as the adapters run it."""
    reply = handle(text, services.context(CHANNEL, f"@{user.lower()}", f"slack:T0001/{user}"))
    assert not reply.error, reply.plain()
    return reply


def slack_poster(fake: FakeSlack, services: Services | None = None) -> SlackPoster:
    dms = DmChannels(services.db) if services is not None else None
    return SlackPoster(make_client(BOT_TOKEN, fake.api_url), rate=None, dms=dms)


def monday_nine(services: Services, clock: Clock, user: str, topic: str = "robotics") -> None:
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    me(services, user, f"subscribe --me {topic}")
    me(services, user, "schedule --me monday 09:00 UTC")
    clock.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # due 09:00, up at 12:00


def methods(fake: FakeSlack) -> list[str]:
    return [call.method for call in fake.calls if call.method != "auth.test"]


# --- commands ------------------------------------------------------------------------


async def test_anyone_subscribes_for_themselves_and_only_they_see_it(
    services: Services, fake_slack: FakeSlack
) -> None:
    """Managers are admins and U0001 is not: the channel stays closed to them, their own
    digest does not, and nobody else's subscriptions change."""
    http = await start_http(services, fake_slack)
    try:
        refused = await post(http, fake_slack, "subscribe offline-rl")
        assert refused["text"].startswith("Sorry, only workspace admins")
        users_info = len([c for c in fake_slack.calls if c.method == "users.info"])
        mine = await post(http, fake_slack, "subscribe --me offline-rl")
        assert mine["response_type"] == "ephemeral"
        assert "You now follow Offline RL" in mine["text"]
        assert "direct message" in mine["text"]
        # no permission check for one's own digest
        assert len([c for c in fake_slack.calls if c.method == "users.info"]) == users_info
        bobs = await post(http, fake_slack, "subscribe rlhf --me", user="U0002")
        assert bobs["response_type"] == "ephemeral"
        listed = await post(http, fake_slack, "list --me")
        assert "offline-rl" in json.dumps(listed) and "rlhf" not in json.dumps(listed)
    finally:
        await http.close()
    assert topics_of(services, ALICE) == ["offline-rl"]
    assert topics_of(services, BOB) == ["rlhf"]
    assert topics_of(services, CHANNEL) == []


def test_personal_commands_keep_to_the_users_own_digest(services: Services) -> None:
    me(services, "U0001", "subscribe --me robotics")
    me(services, "U0001", 'subscribe --me "diffusion policy"')
    again = me(services, "U0001", "subscribe --me robotics")
    assert "already follow" in again.text and not again.changed
    me(services, "U0001", "schedule --me daily 07:30 Europe/Paris")
    row = get_channel(services.db(), ALICE)
    assert row is not None and (row["cadence"], row["time"]) == ("daily", "07:30")
    assert row["timezone"] == "Europe/Paris"
    me(services, "U0001", "unsubscribe --me 1")
    assert topics_of(services, ALICE) == ["custom:diffusion-policy"]
    gone = handle("unsubscribe --me robotics", services.context(CHANNEL, "@a", "slack:T0001/U0001"))
    assert gone.error and "does not follow" in gone.text
    # the channel's own settings are untouched
    assert get_channel(services.db(), CHANNEL) is None
    # a user the adapter cannot name (the command line) has no DM to receive
    local = handle("subscribe --me robotics", services.context("local:lab", "me", "local:me"))
    assert local.error and "direct messages" in local.text
    nobody = handle("list --me", services.context(CHANNEL, "@a"))
    assert nobody.error


def test_a_personal_change_with_invisible_characters_is_refused(services: Services) -> None:
    reply = handle(
        "subscribe --me robo\u200btics", services.context(CHANNEL, "@a", "slack:T0001/U0001")
    )
    assert reply.error and topics_of(services, ALICE) == []


# --- Slack delivery ---------------------------------------------------------------------


async def test_the_digest_is_built_on_schedule_and_sent_to_the_dm_once(
    services: Services, fake_slack: FakeSlack, clock: Clock
) -> None:
    monday_nine(services, clock, "U0001")
    scheduler = DigestScheduler(services, {"slack": slack_poster(fake_slack, services)})
    assert await scheduler.catch_up() == [ALICE]
    assert methods(fake_slack) == ["conversations.open", "chat.postMessage"]
    [opened] = [call.args for call in fake_slack.calls if call.method == "conversations.open"]
    assert opened["users"] == "U0001"
    [posted] = fake_slack.posted()
    dm = fake_slack.dms["U0001"]
    assert dm.startswith("D") and posted["channel"] == dm
    assert "Robo" in json.dumps(posted["blocks"])  # the robotics digest itself
    # the DM is remembered in the database, for the next digest and the next process
    assert get_state(services.db(), f"dm {ALICE}") == dm
    # restarted right after: nothing is built or posted again
    again = DigestScheduler(services, {"slack": slack_poster(fake_slack, services)})
    clock.now += timedelta(minutes=5)
    assert await again.catch_up() == []
    await again.deliver_due()
    assert len(fake_slack.posted()) == 1
    # next week's digest (a new paper) goes to the remembered DM: no second open
    new = services.db_path.parent / "new.tsv"
    new.write_text(
        "title\tabstract\nRoboGrasp: dexterous robot grasping\t"
        "We propose a robot grasping method for dexterous manipulation with robots.\n"
    )
    ingest_files(services.db(), [new], now=datetime(2026, 12, 3, tzinfo=UTC))
    clock.now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    fresh = DigestScheduler(services, {"slack": slack_poster(fake_slack, services)})
    assert await fresh.catch_up() == [ALICE]
    assert methods(fake_slack).count("conversations.open") == 1
    assert [p["channel"] for p in fake_slack.posted()] == [dm, dm]
    assert "RoboGrasp" in json.dumps(fake_slack.posted()[1]["blocks"])
    assert "RoboGrasp" not in json.dumps(fake_slack.posted()[0]["blocks"])


@pytest.mark.parametrize(
    ("user", "block", "error"),
    [
        ("U0002", "unknown", "user_not_found"),
        ("U0002", "disabled", "user_disabled"),
        ("UBOT", "", "cannot_dm_bot"),
        ("U0002", "tab", "messages_tab_disabled"),
    ],
)
async def test_a_blocked_dm_pauses_only_that_users_digest(
    services: Services,
    fake_slack: FakeSlack,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
    user: str,
    block: str,
    error: str,
) -> None:
    monday_nine(services, clock, "U0001")
    monday_nine(services, clock, user)
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    handle("subscribe robotics", services.context(CHANNEL, "@admin", "slack:T0001/UADMIN"))
    handle("schedule monday 09:00 UTC", services.context(CHANNEL, "@admin"))
    clock.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    if block == "unknown":
        fake_slack.unknown_users.add(user)
    elif block == "disabled":
        fake_slack.disabled_users.add(user)
    elif block == "tab":  # the app's Messages tab is off: Alice already has her DM
        fake_slack.dms["U0001"] = "D00000777"
        fake_slack.messages_tab = False
    blocked = f"slack:T0001/@{user}"
    scheduler = DigestScheduler(services, {"slack": slack_poster(fake_slack, services)})
    with caplog.at_level(logging.INFO):
        await scheduler.catch_up()
    row = get_channel(services.db(), blocked)
    assert row is not None and row["paused"] and row["paused_reason"] == error
    # one line per paused digest: the blocked user's (and Alice's, when the app's whole
    # Messages tab is off: every DM refuses, and each digest pauses on its own)
    paused = [blocked] + ([ALICE] if block == "tab" else [])
    assert sorted(r.getMessage() for r in caplog.records if r.levelname == "WARNING") == sorted(
        f"delivery to {channel} paused: {error}" for channel in paused
    )
    # the channel, and (unless the whole app refuses DMs) the other user, got theirs
    channels = [p["channel"] for p in fake_slack.posted()]
    assert "C0001" in channels
    if block != "tab":
        assert fake_slack.dms["U0001"] in channels
        assert not get_channel(services.db(), ALICE)["paused"]  # type: ignore[index]
    assert not get_channel(services.db(), CHANNEL)["paused"]  # type: ignore[index]
    # while paused, nothing more is tried; the user sees why, and resumes it themselves
    tried = len(fake_slack.calls)
    await scheduler.deliver_due()
    assert len(fake_slack.calls) == tried
    if user != "UBOT":
        listed = me(services, user, "list --me")
        assert any(error in line and "resume --me" in line for line in listed.lines)
        fake_slack.unknown_users.clear()
        fake_slack.disabled_users.clear()
        fake_slack.messages_tab = True
        me(services, user, "resume --me")
        await scheduler.deliver_due()
        assert fake_slack.posted()[-1]["channel"] == fake_slack.dms[user]


async def test_a_dm_that_is_gone_is_opened_again(
    services: Services, fake_slack: FakeSlack, clock: Clock
) -> None:
    monday_nine(services, clock, "U0001")
    DmChannels(services.db).put(ALICE, "D0STALE01")  # remembered from an older DM
    fake_slack.queue("chat.postMessage", {"ok": False, "error": "channel_not_found"})
    scheduler = DigestScheduler(services, {"slack": slack_poster(fake_slack, services)})
    await scheduler.catch_up()
    assert methods(fake_slack) == ["chat.postMessage", "conversations.open", "chat.postMessage"]
    assert [p["channel"] for p in fake_slack.posted()] == ["D0STALE01", fake_slack.dms["U0001"]]
    assert get_state(services.db(), f"dm {ALICE}") == fake_slack.dms["U0001"]
    assert not get_channel(services.db(), ALICE)["paused"]  # type: ignore[index]


async def test_a_crash_between_queue_and_send_sends_once_on_restart(
    services: Services, fake_slack: FakeSlack, clock: Clock
) -> None:
    """Built and queued, then the process died before any send: the restarted process
    sends it, once; and again after a restart, nothing."""
    monday_nine(services, clock, "U0001")
    db = services.db()
    digest = build_digest(
        db, ALICE, clock.now, catalog=services.catalog, settings=services.settings
    )
    queue_digest(db, digest, platform_messages(digest, "slack", "skip"), clock.now)
    assert fake_slack.posted() == []  # ... and here the process dies
    for restart in range(2):
        scheduler = DigestScheduler(services, {"slack": slack_poster(fake_slack, services)})
        clock.now += timedelta(minutes=1)
        assert await scheduler.catch_up() == []  # built already: not built again
        await scheduler.deliver_due()
        assert len(fake_slack.posted()) == 1, restart
    assert digest.digest_id is not None
    assert [m["state"] for m in messages_for_digest(db, digest.digest_id)] == ["sent"]


class Killed(BaseException):
    """The process dying mid-send (as in tests/bot/test_scheduler.py)."""


class DyingSlackPoster(SlackPoster):
    """Posts through the fake (or not), then dies before the send is recorded."""

    def __init__(self, fake: FakeSlack, accepted: bool) -> None:
        super().__init__(make_client(BOT_TOKEN, fake.api_url), rate=None)
        self.accepted = accepted

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if self.accepted:
            await super().send(channel, payload, thread_of)
        raise Killed


@pytest.mark.parametrize("accepted", [False, True])
async def test_a_kill_mid_send_loses_nothing(
    services: Services, fake_slack: FakeSlack, clock: Clock, accepted: bool
) -> None:
    """As tests/bot/test_scheduler.py's kill test: the message in flight arrives at most twice
    (only when Slack took it before the death), and nothing else repeats."""
    import subprocess

    from bot.delivery import MACHINE

    monday_nine(services, clock, "U0001")
    db = services.db()
    digest = build_digest(
        db, ALICE, clock.now, catalog=services.catalog, settings=services.settings
    )
    queue_digest(db, digest, platform_messages(digest, "slack", "skip"), clock.now)
    with pytest.raises(Killed):
        await deliver_channel(db, DyingSlackPoster(fake_slack, accepted), ALICE, clock.now)
    dead = subprocess.Popen(["true"])
    dead.wait()
    db.execute(
        "update outbox set claimed_by = ? where state = 'sending'", [f"{MACHINE}:{dead.pid}"]
    )
    result = await deliver_channel(db, slack_poster(fake_slack, services), ALICE, clock.now)
    assert result.state == "done" and result.sent == 1
    assert len(fake_slack.posted()) == (2 if accepted else 1)
    again = await deliver_channel(db, slack_poster(fake_slack, services), ALICE, clock.now)
    assert again.state == "nothing" and len(fake_slack.posted()) == (2 if accepted else 1)


# --- Discord ----------------------------------------------------------------------------


async def test_discord_me_needs_no_permission_and_answers_only_the_user(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(bot, fake_discord, interaction("subscribe", {"topic": "robotics"}))
    refused = fake_discord.callbacks()[-1]["data"]
    assert "Manage Channels" in refused["content"]
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    answer = fake_discord.callbacks()[-1]["data"]
    assert answer["flags"] & 64  # ephemeral
    assert "You now follow Robotics" in json.dumps(answer)
    db = bot.services.db()
    assert [r["topic_id"] for r in active_subscriptions(db, DISCORD_ME)] == ["robotics"]
    assert active_subscriptions(db, DISCORD_CHANNEL) == []
    # a manager's plain subscribe still changes the channel, in public
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "rlhf"}, permissions=MANAGE_CHANNELS),
    )
    assert not fake_discord.callbacks()[-1]["data"].get("flags", 0) & 64
    assert [r["topic_id"] for r in active_subscriptions(db, DISCORD_CHANNEL)] == ["rlhf"]
    assert [r["topic_id"] for r in active_subscriptions(db, DISCORD_ME)] == ["robotics"]
    await dispatch(bot, fake_discord, with_me(interaction("list")))
    listed = json.dumps(fake_discord.callbacks()[-1]["data"])
    assert "robotics" in listed and "rlhf" not in listed


async def discord_send(bot: PaperboyClient, channel: str = DISCORD_ME) -> Any:
    settings = replace(bot.services.settings, first_digest_days=60)
    return await send_digest(
        bot.services.db(),
        DiscordPoster(bot, dms=DmChannels(bot.services.db)),
        channel,
        NOW,
        catalog=bot.services.catalog,
        settings=settings,
    )


async def test_discord_personal_digest_goes_to_the_dm_once(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    digest, result = await discord_send(bot)
    assert result.state == "done" and result.sent >= 1 and digest.items
    [opened] = fake_discord.made("POST", "/users/@me/channels")
    assert str(opened.body["recipient_id"]) == DISCORD_USER  # discord.py sends a number
    dm = fake_discord.dms[DISCORD_USER]
    assert [m["channel_id"] for m in fake_discord.created] == [dm] * result.sent
    _, again = await discord_send(bot)
    assert again.state == "nothing" and len(fake_discord.created) == result.sent
    assert get_state(bot.services.db(), f"dm {DISCORD_ME}") == dm


@pytest.mark.parametrize(
    ("block", "reason"),
    [("refused", "Cannot send messages to this user"), ("unknown", "Invalid Recipient(s)")],
)
async def test_discord_blocked_dm_pauses_only_that_user(
    bot: PaperboyClient,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
    block: str,
    reason: str,
) -> None:
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "robotics"}, permissions=MANAGE_CHANNELS),
    )
    (fake_discord.dm_refused if block == "refused" else fake_discord.unknown_users).add(
        DISCORD_USER
    )
    with caplog.at_level(logging.INFO):
        _, result = await discord_send(bot)
        _, channel_result = await discord_send(bot, DISCORD_CHANNEL)
    assert result.state == "paused" and result.reason == reason
    assert channel_result.state == "done"
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"delivery to {DISCORD_ME} paused: {reason}"
    ]
    db = bot.services.db()
    assert get_channel(db, DISCORD_ME)["paused"]  # type: ignore[index]
    assert not get_channel(db, DISCORD_CHANNEL)["paused"]  # type: ignore[index]
    assert {m["channel_id"] for m in fake_discord.created} == {"222222222222222222"}


# --- the DM cache -------------------------------------------------------------------------


def test_dm_channels_remember_in_memory_and_in_the_database(services: Services) -> None:
    memory = DmChannels()
    assert memory.get(ALICE) is None
    memory.put(ALICE, "D1")
    assert memory.get(ALICE) == "D1"
    memory.forget(ALICE)
    assert memory.get(ALICE) is None
    stored = DmChannels(services.db)
    stored.put(ALICE, "D2")
    assert DmChannels(services.db).get(ALICE) == "D2"  # another process reads it
    stored.forget(ALICE)
    assert DmChannels(services.db).get(ALICE) is None


def test_unsubscribing_every_topic_stops_the_digest(services: Services) -> None:
    from bot.scheduler import scheduled_channels

    me(services, "U0001", "subscribe --me robotics")
    me(services, "U0002", "subscribe --me rlhf")
    assert {ALICE, BOB} <= set(scheduled_channels(services))
    reply = me(services, "U0001", "unsubscribe --me robotics")
    assert reply.changed and "no more digests" in " ".join(reply.lines)
    assert ALICE not in scheduled_channels(services) and BOB in scheduled_channels(services)


async def test_discord_a_dm_that_is_gone_is_opened_again_on_the_next_attempt(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    DmChannels(bot.services.db).put(DISCORD_ME, "399999999999999999")  # an old DM's id
    fake_discord.queue("/messages", {"message": "Unknown Channel", "code": 10003}, status=404)
    _, first = await discord_send(bot)
    assert first.state == "retrying"  # not paused: the user did nothing wrong
    assert not get_channel(bot.services.db(), DISCORD_ME)["paused"]  # type: ignore[index]
    assert get_state(bot.services.db(), f"dm {DISCORD_ME}") == ""  # forgotten
    [row] = bot.services.db().query("select next_attempt_at from outbox")
    later = datetime.fromisoformat(row["next_attempt_at"])
    poster = DiscordPoster(bot, dms=DmChannels(bot.services.db))
    result = await deliver_channel(bot.services.db(), poster, DISCORD_ME, later)
    assert result.state == "done"
    assert len(fake_discord.made("POST", "/users/@me/channels")) == 1
    dm = fake_discord.dms[DISCORD_USER]
    assert [m["channel_id"] for m in fake_discord.created] == [dm] * result.sent
