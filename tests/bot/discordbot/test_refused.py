"""Discord refusing a message for what it is (400 Invalid Form Body and the like).

Discord answers a message it will not take (an embed over 6,000 characters, 11 embeds,
an empty message, a body too large) with a 400 or 413 and a JSON error code. Sending it
again can never work, but the channel takes other messages: the poster raises
`RefusedMessage`, and delivery gives that one message up at once (with the digest's later
parts), without pausing the channel or losing its papers, as for Slack's
`msg_blocks_too_long` (tests/digests/render/test_slack_text_limit.py). Errors about the channel or the
bot's permissions still pause the channel.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import aiohttp
import discord
import pytest

from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import MESSAGE_REFUSALS, PERMANENT_CODES, DiscordPoster
from bot.send import send_digest
from db import open_db
from db.channels import get_channel
from db.outbox import claimed_paper_ids
from digests.channels import ChannelRef
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord, embeds_total
from tests.fakes.discord_delivery import deliver, subscribe
from tests.fakes.discord_interactions import CHANNEL, CHANNEL_ID, TOKEN

# Discord's `errors` for embeds over 6,000 characters together.
TOO_BIG = {
    "embeds": {
        "_errors": [
            {
                "code": "MAX_EMBED_SIZE_EXCEEDED",
                "message": "Embed size exceeds maximum size of 6000",
            }
        ]
    }
}


class Inflating(DiscordPoster):
    """A poster whose messages carry embeds over Discord's 6,000 characters together: the
    kind of message a renderer bug would make, refused by the fake as Discord refuses it
    (nothing is queued). (11 embeds would not do: discord.py refuses them itself.)"""

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        big = [{"description": "d" * 4000}, {"description": "d" * 2001}]  # 6,001
        embeds = [*payload.get("embeds", [])[:8], *big]
        return await super().send(channel, {**payload, "embeds": embeds}, thread_of)


async def post(bot: PaperboyClient, **fields: Any) -> discord.Message:
    target = bot.get_partial_messageable(int(CHANNEL_ID))
    return await target.send(**fields)


async def test_the_fake_refuses_a_message_discord_would_not_take(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    at_limit = [
        discord.Embed(title="t" * 256, description="d" * 4096),
        discord.Embed(description="d" * 1648),
    ]
    assert embeds_total([e.to_dict() for e in at_limit]) == 6000
    await post(bot, content="c" * 2000, embeds=at_limit)  # taken
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"embeds": [*at_limit, discord.Embed(title="x")]}, 50035, "In embeds"),
        ({"content": "c" * 2001}, 50035, "In content: Must be 2000 or fewer"),
        (
            {"embeds": [discord.Embed(description="d" * 4097)]},
            50035,
            "In embeds.0.description: Must be 4096 or fewer in length.",
        ),
        (
            {"embeds": [discord.Embed(title="t").add_field(name="n", value="v" * 1025)]},
            50035,
            "In embeds.0.fields.0.value: Must be 1024 or fewer in length.",
        ),
        ({"content": None, "embeds": []}, 50006, "Cannot send an empty message"),
    ]
    for fields, code, text in cases:
        with pytest.raises(discord.HTTPException) as refused:
            await post(bot, **fields)
        assert refused.value.status == 400 and refused.value.code == code
        assert text in refused.value.text
    # 11 embeds: discord.py refuses them itself, so straight to the fake.
    eleven = {"embeds": [{"title": str(n)} for n in range(11)]}
    async with aiohttp.ClientSession() as session:
        url = f"{fake_discord.base}/channels/{CHANNEL_ID}/messages"
        async with session.post(url, json=eleven) as response:
            assert response.status == 400
            assert await response.json() == {
                "code": 50035,
                "message": "Invalid Form Body",
                "errors": {"embeds": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                           "message": "Must be 10 or fewer in length."}]}},
            }  # fmt: skip
    assert len(fake_discord.created) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"code": 50035, "message": "Invalid Form Body", "errors": TOO_BIG}),
        (400, {"message": "Cannot send an empty message", "code": 50006}),
        (413, {"message": "Request entity too large", "code": 40005}),
    ],
)
async def test_a_refused_message_is_given_up_at_once_and_the_channel_goes_on(
    bot: PaperboyClient,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
    status: int,
    body: dict[str, Any],
) -> None:
    """One post (not `max_attempts`), the message given up with one ERROR line and no
    token in it, the channel not paused, and its papers in the next digest, delivered."""
    assert body["code"] in MESSAGE_REFUSALS
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.queue("/messages", body, status=status)
    caplog.set_level(logging.INFO)
    digest, result = await deliver(bot)
    await refused_then_next_digest(bot, fake_discord, caplog, digest, result, str(body["code"]))


async def test_a_message_the_fake_refuses_by_itself_is_given_up_at_once(
    bot: PaperboyClient, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing queued: 11 embeds, refused by the fake's own check, as Discord would."""
    await subscribe(bot, fake_discord, "robotics")
    caplog.set_level(logging.INFO)
    db = open_db(bot.services.db_path)
    settings = bot.services.settings
    digest, result = await send_digest(
        db, Inflating(bot), CHANNEL, NOW, catalog=bot.services.catalog, settings=settings
    )
    await refused_then_next_digest(bot, fake_discord, caplog, digest, result, "50035")
    assert "In embeds: Embed size exceeds maximum size of 6000" in result.reason


async def refused_then_next_digest(
    bot: PaperboyClient,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
    digest: Any,
    result: Any,
    code: str,
) -> None:
    db = open_db(bot.services.db_path)
    assert result.state == "failed" and f"({code})" in result.reason
    assert len(fake_discord.made("POST", "/messages")) == 1  # no retries
    assert not fake_discord.created
    channel = get_channel(db, CHANNEL)
    assert not channel["paused"] and not channel["paused_reason"]
    [row] = db.query("select * from outbox where channel = ?", [CHANNEL])
    assert row["state"] == "failed" and row["attempts"] == 1 and row["next_attempt_at"] is None
    assert f"({code})" in row["last_error"]
    picked = {item.paper["id"] for item in digest.items}
    assert picked and not picked & claimed_paper_ids(db, CHANNEL)  # free to go again
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelname for r in said] == ["ERROR"]
    line = said[0].getMessage()
    assert f"delivery to {CHANNEL}" in line and f"({code})" in line and "part 1" in line
    assert "should not have made" in line and "not paused" in line and "\n" not in line
    assert TOKEN not in caplog.text and TOKEN.split(".")[0] not in caplog.text
    # Next week's digest goes out (the channel is not paused) with the given-up papers.
    settings = bot.services.settings
    again, done = await send_digest(
        db,
        DiscordPoster(bot),
        CHANNEL,
        NOW + timedelta(days=7),
        catalog=bot.services.catalog,
        settings=settings,
    )
    assert done.state == "done" and done.sent == len(fake_discord.created) == 1
    assert picked <= {item.paper["id"] for item in again.items}


@pytest.mark.parametrize(
    ("status", "code", "reason"),
    [
        (404, 10003, "Unknown Channel"),
        (403, 50001, "Missing Access"),
        (403, 50013, "Missing Permissions"),
    ],
)
async def test_a_channel_or_permission_error_still_pauses(
    bot: PaperboyClient, fake_discord: FakeDiscord, status: int, code: int, reason: str
) -> None:
    """Not the message's fault: the channel pauses, even when Discord's answer
    carries form `errors` beside its code."""
    assert code in PERMANENT_CODES and code not in MESSAGE_REFUSALS
    await subscribe(bot, fake_discord, "robotics")
    fake_discord.queue("/messages", {"message": reason, "code": code, "errors": {}}, status)
    _, result = await deliver(bot)
    assert result.state == "paused" and result.reason == reason
    assert get_channel(open_db(bot.services.db_path), CHANNEL)["paused_reason"] == reason


async def test_another_400_is_still_retried(bot: PaperboyClient, fake_discord: FakeDiscord) -> None:
    """A 400 whose code says nothing about the message (here: not a text channel) is not
    taken for a refused message: retried later, as before."""
    await subscribe(bot, fake_discord, "robotics")
    body = {"message": "Cannot send messages in a non-text channel", "code": 50008}
    fake_discord.queue("/messages", body, status=400)
    _, result = await deliver(bot)
    assert result.state == "retrying"
    [row] = open_db(bot.services.db_path).query("select * from outbox")
    assert row["state"] == "pending" and row["attempts"] == 1 and row["next_attempt_at"]
    assert not get_channel(open_db(bot.services.db_path), CHANNEL)["paused"]
