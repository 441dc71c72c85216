"""Digest delivery to Discord through discord.py's HTTP client and a local fake REST API."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta

import pytest

from bot.delivery import deliver_channel
from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.send import send_digest
from db import open_db
from db.channels import get_channel
from digests.commands import handle
from digests.ingest import ingest_files
from digests.render import limits
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_delivery import deliver, subscribe
from tests.fakes.discord_interactions import (
    CHANNEL,
    CHANNEL_ID,
)


def assert_within_limits(message: dict) -> None:  # type: ignore[type-arg]
    assert limits.discord_problems(message) == []
    assert message["allowed_mentions"] == {"parse": []}


async def test_the_whole_path(bot: PaperboyClient, fake_discord: FakeDiscord) -> None:
    """/papers subscribe from a member with Manage Channels, then a digest posted as embeds."""
    await subscribe(bot, fake_discord, "offline-rl")
    digest, result = await deliver(bot)
    assert result.state == "done" and result.sent == 1
    [message] = fake_discord.channel_messages()
    assert fake_discord.made("POST", f"/channels/{CHANNEL_ID}/messages")
    assert_within_limits(message)
    assert "Paperboy digest" in message["content"]
    # Numbered as their rows of buttons are: "1. LoMAP..."
    titles = [embed["title"] for embed in message["embeds"]]
    assert any(title.startswith("LoMAP", len("1. ")) for title in titles)
    assert len(titles) == len(digest.items) == len(message["components"])
    again = await deliver(bot)
    assert again[1].state == "nothing" and len(fake_discord.channel_messages()) == 1


async def test_a_long_digest_respects_every_embed_limit(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    for topic in bot.services.catalog.ids:
        await subscribe(bot, fake_discord, topic)
    extra = bot.services.db_path.parent / "many.tsv"
    rows = "\n".join(
        f"{'Robot ' * 40}{i}\tWe propose Robo{i}, a robot grasping method. {'Dexterous robots. ' * 200}"
        for i in range(40)
    )
    extra.write_text("title\tabstract\n" + rows + "\n")
    ingest_files(open_db(bot.services.db_path), [extra], now=NOW)
    _, result = await deliver(bot, digest_size=60)
    messages = fake_discord.channel_messages()
    assert result.sent == len(messages) >= 6
    for message in messages:
        assert_within_limits(message)
        assert len(message["embeds"]) <= 10
        assert sum(limits.embed_size(e) for e in message["embeds"]) <= 6000


async def test_everyone_in_paper_text_pings_nobody(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    hostile = bot.services.db_path.parent / "hostile.tsv"
    hostile.write_text(
        "title\tabstract\n@everyone Robots *now*\tWe propose a robot for @here and <@123456>, grasping.\n"
    )
    ingest_files(open_db(bot.services.db_path), [hostile], now=NOW)
    await subscribe(bot, fake_discord, "robotics")
    await deliver(bot)
    text = json.dumps(fake_discord.channel_messages(), ensure_ascii=False)
    assert "@everyone" not in text and "@here" not in text and "<@123456>" not in text
    assert "@\u200beveryone" in text


async def test_a_429_is_retried_by_discord_py(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.queue_rate_limit("/messages", retry_after=0.05)
    _, result = await deliver(bot)
    assert result.state == "done" and result.sent == 1
    assert len(fake_discord.made("POST", "/messages")) == 2


@pytest.mark.parametrize(
    ("status", "code", "reason"),
    [
        (404, 10003, "Unknown Channel"),
        (403, 50001, "Missing Access"),
        (403, 50013, "Missing Permissions"),
    ],
)
async def test_permanent_errors_pause_the_channel(
    bot: PaperboyClient,
    fake_discord: FakeDiscord,
    status: int,
    code: int,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.queue("/messages", {"message": reason, "code": code}, status=status)
    _, result = await deliver(bot)
    assert result.state == "paused" and result.reason == reason
    assert len(fake_discord.made("POST", "/messages")) == 1
    assert get_channel(open_db(bot.services.db_path), CHANNEL)["paused_reason"] == reason
    assert [r.getMessage() for r in caplog.records if r.name == "bot.delivery"] == [
        f"delivery to {CHANNEL} paused: {reason}"
    ]
    ctx = bot.services.context(CHANNEL, "@alice")
    assert any(reason in line for line in handle("status", ctx).lines)


async def test_an_hour_long_429_leaves_the_message_queued_and_returns(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """discord.py slept through a retry_after of 3600 s: `digest --send` hung for an hour."""
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.queue_rate_limit("/messages", retry_after=3600)
    _, result = await asyncio.wait_for(deliver(bot), 20)
    assert result.state == "retrying" and result.reason == "rate limited"
    assert len(fake_discord.made("POST", "/messages")) == 1
    [row] = open_db(bot.services.db_path).query("select * from outbox")
    assert row["state"] == "pending" and row["attempts"] == 0  # refused: no attempt
    assert datetime.fromisoformat(row["next_attempt_at"]) == NOW + timedelta(seconds=3600)


async def test_a_lost_answer_is_not_posted_twice_on_the_next_attempt(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """Every attempt at one outbox message carries the same nonce (enforce_nonce), so
    Discord answers the retry with the message the lost attempt created."""
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.drop("/messages")  # created, but the answer is lost
    _, first = await deliver(bot)
    assert first.state == "retrying" and "connection problem" in (first.reason or "")
    db = open_db(bot.services.db_path)
    [row] = db.query("select * from outbox")
    later = datetime.fromisoformat(row["next_attempt_at"])
    second = await deliver_channel(db, DiscordPoster(bot), CHANNEL, later)
    assert second.state == "done"
    posts = fake_discord.made("POST", f"/channels/{CHANNEL_ID}/messages")
    assert len(posts) == 2 and posts[0].body["nonce"] == posts[1].body["nonce"]
    assert len(fake_discord.created) == 1  # one message in the channel
    [sent] = db.query("select * from outbox")
    assert sent["platform_id"] == fake_discord.created[0]["id"]


async def test_two_databases_on_one_bot_never_share_a_nonce(
    bot: PaperboyClient, fake_discord: FakeDiscord, tmp_path, seed_paths, catalog
) -> None:  # type: ignore[no-untyped-def]
    """Discord deduplicates nonces per bot user, across channels. Keys made of row ids
    alone ("pb1.1.1") would be the same for the first message of every database: a second
    deployment (or a fresh demo) on the same bot would get the first one's message back,
    and record its own digest as sent although Discord never posted it."""
    from bot.delivery import message_key
    from bot.services import Services
    from tests.fakes.discord_interactions import GUILD

    await subscribe(bot, fake_discord, "robotics")
    other_channel = f"discord:{GUILD}/333333333333333333"
    other = Services(tmp_path / "other.db", bot.services.settings, catalog, clock=lambda: NOW)
    ingest_files(other.db(), seed_paths, now=NOW)
    assert not handle("subscribe robotics", other.context(other_channel, "@bob")).error
    _, first = await deliver(bot)
    _, second = await send_digest(
        other.db(), DiscordPoster(bot), other_channel, NOW, catalog=catalog,
        settings=other.settings,
    )  # fmt: skip
    assert first.state == second.state == "done"
    [mine] = open_db(bot.services.db_path).query("select * from outbox")
    [theirs] = other.db().query("select * from outbox")
    assert (mine["digest_id"], mine["part"], mine["id"]) == (theirs["digest_id"], 1, 1)
    assert {m["channel_id"] for m in fake_discord.created} == {
        CHANNEL_ID,
        "333333333333333333",
    }  # both posted: neither was answered with the other's message
    key = message_key(mine)
    assert key == message_key(dict(mine)) and key.isdigit() and len(key) <= 25


async def test_an_hour_long_rate_limit_on_the_command_sync_does_not_stop_the_login(
    tmp_path, seed_paths, catalog, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """With max_ratelimit_timeout, a long 429 raises discord.RateLimited; in setup_hook it
    failed the login, and `paperboy run` stopped with 'unexpected failure'. Command syncs
    have a daily budget: a long wait there is plausible."""
    from tests.fakes.discord_api import APP_ID
    from tests.fakes.discord_interactions import logged_in, make_services

    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    fake_discord.queue_rate_limit(f"/applications/{APP_ID}/commands", retry_after=3600)
    client = await asyncio.wait_for(logged_in(services, fake_discord), 20)
    try:
        assert client.synced == "deferred"
        assert "/papers not synced, rate-limited for 3600 s" in caplog.text
    finally:
        await client.close()
    again = await logged_in(services, fake_discord)  # the next start syncs
    await again.close()
    assert again.synced == "global"


async def test_an_hour_long_rate_limit_at_login_is_an_outage_to_retry(
    tmp_path, seed_paths, catalog, fake_discord: FakeDiscord
) -> None:  # type: ignore[no-untyped-def]
    """discord.RateLimited is no HTTPException: it escaped as a fatal start-up error."""
    from bot.runner import DiscordComponent, Unavailable
    from tests.fakes.discord_interactions import make_services

    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    fake_discord.queue_rate_limit("/users/@me", retry_after=3600)
    component = DiscordComponent(services, gateway=False)
    with pytest.raises(Unavailable, match="RateLimited"):
        await asyncio.wait_for(component.start(), 20)
    assert component.client is None
