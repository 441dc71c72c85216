"""Clicks on a digest's buttons through the fake Discord, and what they stored."""

from __future__ import annotations

from typing import Any

from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.send import send_digest
from db import open_db
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import (
    CHANNEL,
    MANAGE_CHANNELS,
    dispatch,
    interaction,
)

ALICE = "500000000000000001"


BOB = "500000000000000002"


EPHEMERAL = 64


async def delivered(bot: PaperboyClient, fake: FakeDiscord) -> tuple[int, dict[str, Any]]:
    """Subscribe the channel, send its digest through the outbox; (digest id, first message)."""
    await dispatch(
        bot, fake, interaction("subscribe", {"topic": "offline-rl"}, permissions=MANAGE_CHANNELS)
    )
    digest, result = await send_digest(
        open_db(bot.services.db_path),
        DiscordPoster(bot),
        CHANNEL,
        NOW,
        catalog=bot.services.catalog,
        settings=bot.services.settings,
    )
    assert result.state == "done" and digest.digest_id is not None
    return digest.digest_id, fake.created[0]


def button(message: dict[str, Any], row: int, index: int) -> dict[str, Any]:
    return dict(message["components"][row]["components"][index])


def labels(message: dict[str, Any], row: int = 0) -> list[str]:
    return [b["label"] for b in message["components"][row]["components"][:3]]


def paper_of(message: dict[str, Any], row: int = 0) -> str:
    return str(button(message, row, 0)["custom_id"]).rsplit(":", 1)[1]


def stored(bot: PaperboyClient) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    db = open_db(bot.services.db_path)
    votes = db.execute(
        'select channel, topic_id, paper_id, "user", vote from feedback order by id'
    ).fetchall()
    saved = db.execute('select "user", paper_id, channel from saved').fetchall()
    return [tuple(v) for v in votes], [tuple(s) for s in saved]


async def click(
    bot: PaperboyClient, fake: FakeDiscord, message: dict[str, Any], custom: str, **kw: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Click, wait for the acknowledgement and the ephemeral line; (callback, line)."""
    before_callbacks, before_lines = len(fake.callbacks()), len(fake.followups())
    payload = fake.click(fake.messages.get(message["id"], message), custom, **kw)
    await dispatch(bot, fake, payload, answers=2)
    [callback] = fake.callbacks()[before_callbacks:]
    [line] = fake.followups()[before_lines:]
    return callback, line


async def refused(
    bot: PaperboyClient, fake: FakeDiscord, message: dict[str, Any], custom: str, **kw: Any
) -> str:
    """Click; check that nothing changed (no vote, no save, no edit) and that the only
    answer is an ephemeral message. Its text."""
    before, edits, answers = stored(bot), list(fake.edits), len(fake.callbacks())
    await dispatch(bot, fake, fake.click(message, custom, **kw))
    [answer] = fake.callbacks()[answers:]
    assert answer["type"] == 4 and answer["data"]["flags"] & EPHEMERAL
    assert stored(bot) == before and fake.edits == edits
    assert "Traceback" not in answer["data"]["content"]
    return str(answer["data"]["content"])
