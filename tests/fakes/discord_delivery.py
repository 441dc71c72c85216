"""A Discord channel subscribed and its digest delivered through the fake Discord."""

from __future__ import annotations

from dataclasses import replace

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


async def subscribe(bot: PaperboyClient, fake: FakeDiscord, topic: str) -> None:
    await dispatch(
        bot, fake, interaction("subscribe", {"topic": topic}, permissions=MANAGE_CHANNELS)
    )


async def deliver(bot: PaperboyClient, **overrides: object):  # type: ignore[no-untyped-def]
    settings = replace(bot.services.settings, **overrides)  # type: ignore[arg-type]
    return await send_digest(
        open_db(bot.services.db_path),
        DiscordPoster(bot),
        CHANNEL,
        NOW,
        catalog=bot.services.catalog,
        settings=settings,
    )
