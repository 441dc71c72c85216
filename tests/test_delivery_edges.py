"""Delivery edge cases left from issue 13 (Discord and personal digests).

- A message discord.py refuses to send before any request (11 embeds, a sixth row of
  buttons) is given up at once like a message Discord refuses (`RefusedMessage`): tried
  once, one ERROR line, the channel not paused. A `ValueError` from the request itself (an
  answer that is not JSON) is still an ordinary transient error.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.send import send_digest
from db import open_db
from db.channels import get_channel
from digests.channels import ChannelRef
from tests.conftest import NOW
from tests.discord_helpers import CHANNEL
from tests.fakes.discord_api import FakeDiscord
from tests.test_discord_delivery import subscribe

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
    # the channel goes on: the next message, a good one, is posted
    _, again = await deliver_with(bot, DiscordPoster(bot))
    assert again.state in ("done", "nothing")


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
