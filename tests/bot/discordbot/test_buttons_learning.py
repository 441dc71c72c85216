"""The whole path on Discord: a digest delivered through the outbox to the fake
REST API, its 👍/👎 clicked through the real client state, the votes stored, and the
channel's next digest, delivered the same way, ranked by them."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.discordbot.poster import DiscordPoster
from bot.send import send_digest
from db import channels as store
from db import open_db
from digests.digest import ensure_channel
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_buttons import ALICE, click
from tests.fakes.discord_interactions import (
    CHANNEL,
    CHANNEL_ID,
    GUILD,
    MANAGE_CHANNELS,
    dispatch,
    interaction,
    logged_in,
    make_services,
)
from tests.fakes.learning import NEXT, NEXT_WEEK, RECOMMENDERS, ROBOTS, TOPIC, ingest

QUIET_ID = "222222222222222299"
QUIET = f"discord:{GUILD}/{QUIET_ID}"  # follows the same topic, gives no feedback


def titles(fake: FakeDiscord, channel_id: str, since: int) -> list[str]:
    """The paper titles posted to a channel (message by message, without the numbers)."""
    return [
        embed["title"].split(". ", 1)[1]
        for message in fake.created[since:]
        if message["channel_id"] == channel_id
        for embed in message["embeds"]
    ]


async def test_clicks_rerank_the_next_digest(
    tmp_path: Path, catalog: Catalog, fake_discord: FakeDiscord
) -> None:
    services = make_services(tmp_path, [], catalog, fake_discord)
    services = replace(services, settings=replace(services.settings, digest_size=10))
    bot = await logged_in(services, fake_discord)
    try:
        await dispatch(
            bot,
            fake_discord,
            interaction("subscribe", {"topic": TOPIC}, permissions=MANAGE_CHANNELS),
        )
        db = open_db(services.db_path)
        ensure_channel(db, QUIET, services.settings, NOW)
        store.add_subscription(db, QUIET, TOPIC, None, "U9", NOW.isoformat())
        papers = {f"robots-{n}": text for n, text in enumerate(ROBOTS)}
        papers.update({f"recsys-{n}": text for n, text in enumerate(RECOMMENDERS)})
        ingest(db, tmp_path, papers, NOW - timedelta(days=1))

        async def deliver(channel: str, at: Any) -> None:
            _, result = await send_digest(
                open_db(services.db_path), DiscordPoster(bot), channel, at,
                catalog=catalog, settings=services.settings,
            )  # fmt: skip
            assert result.state == "done", result

        await deliver(CHANNEL, NOW)
        week_one = [m for m in fake_discord.created if m["channel_id"] == CHANNEL_ID]
        assert len(week_one) == 2  # ten items, five per message with buttons
        # 👍 each robot paper, 👎 each recommender paper: ten clicks on the real path.
        for message in week_one:
            for embed, row in zip(message["embeds"], message["components"], strict=True):
                up, down = row["components"][0], row["components"][1]
                chosen = up if "robots-" in embed["title"] else down
                await click(bot, fake_discord, message, chosen["custom_id"], user_id=ALICE)
        votes = db.execute(
            'select vote, count(*) from feedback where channel = ? and "user" = ? group by vote',
            [CHANNEL, ALICE],
        ).fetchall()
        assert sorted(tuple(v) for v in votes) == [(-1, 5), (1, 5)]

        ingest(db, tmp_path, NEXT, NOW + timedelta(days=3))
        before = len(fake_discord.created)
        await deliver(CHANNEL, NEXT_WEEK)
        await deliver(QUIET, NEXT_WEEK)
        ranked = [t for t in titles(fake_discord, CHANNEL_ID, before) if t.startswith("Paper ")]
        keys = [t.removeprefix("Paper ") for t in ranked if t.removeprefix("Paper ") in NEXT]
        assert set(keys[:2]) == {"robot-a", "robot-b"}, keys  # like the 👍 ones, first
        quiet = [t.removeprefix("Paper ") for t in titles(fake_discord, QUIET_ID, before)]
        assert set([k for k in quiet if k in NEXT][:2]) == {"recsys-a", "recsys-b"}, quiet
    finally:
        await bot.close()
