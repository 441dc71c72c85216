"""Discord autocomplete offers only what the grammar accepts, in the form it accepts."""

from __future__ import annotations

from bot.discordbot.client import PaperboyClient
from bot.discordbot.commands import matching_zones
from db import open_db
from db.channels import active_subscriptions
from digests.schedule import parse_timezone
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import CHANNEL, MANAGE_CHANNELS, dispatch, interaction


async def test_an_unsubscribe_choice_removes_that_topic(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    for topic in ("robotics", "rlhf", "diffusion policy"):
        await dispatch(
            bot,
            fake_discord,
            interaction("subscribe", {"topic": topic}, permissions=MANAGE_CHANNELS),
        )
    await dispatch(  # now row ids and `list` numbers differ
        bot,
        fake_discord,
        interaction("unsubscribe", {"topic": "robotics"}, permissions=MANAGE_CHANNELS),
    )
    await dispatch(
        bot, fake_discord, interaction("unsubscribe", {"topic": "diff"}, kind=4, focused="topic")
    )
    [choice] = fake_discord.callbacks()[-1]["data"]["choices"]
    await dispatch(
        bot,
        fake_discord,
        interaction("unsubscribe", {"topic": choice["value"]}, permissions=MANAGE_CHANNELS),
    )
    rows = active_subscriptions(open_db(bot.services.db_path), CHANNEL)
    assert [row["topic_id"] for row in rows] == ["rlhf"]


def test_timezone_choices_are_all_accepted() -> None:
    offered = {
        zone
        for typed in ("", "local", "fact", "posix", "etc", "gmt")
        for zone in matching_zones(typed)
    }
    assert offered and all(parse_timezone(zone) == zone for zone in offered)
    assert not {"localtime", "Factory", "posixrules", "Etc/GMT+5"} & offered
