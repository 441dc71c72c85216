"""A topic typed into Discord's `topic` option gets the answer the same words get typed
after `/papers subscribe` on Slack or the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.discordbot.client import PaperboyClient
from bot.services import Services
from db.channels import active_subscriptions
from digests.actions import user_key
from digests.commands import handle
from digests.ingest import ingest_files
from digests.render import discord as discord_render
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import CHANNEL, MANAGE_CHANNELS, dispatch, interaction

ALICE = user_key("discord", None, "500000000000000000")  # the fake interaction's member


def typed_elsewhere(
    text: str, tmp_path: Path, seed_paths: list[Path], catalog: Catalog, services: Services
) -> tuple[str, list[str]]:
    """What the core answers `text` (as Slack and the CLI hand it over) in a store of its
    own, as Discord would show it, and the topics the channel then follows."""
    other = Services(tmp_path / "elsewhere.db", services.settings, catalog, clock=lambda: NOW)
    ingest_files(other.db(), seed_paths, now=NOW)
    reply = handle(text, other.context(CHANNEL, "@alice", ALICE))
    [message] = discord_render.reply_messages(reply)
    return message.content, [row["topic_id"] for row in active_subscriptions(other.db(), CHANNEL)]


@pytest.mark.parametrize(
    ("typed", "slack"),
    [
        # unquoted words naming `rlhf` loosely follow that topic and say so
        ("RL from human feedback", "subscribe RL from human feedback"),
        # quotes the user typed keep the words free text, plain or smart
        ('"RL from human feedback"', 'subscribe "RL from human feedback"'),
        ("“RL from human feedback”", "subscribe “RL from human feedback”"),
        ("robot grasping with tactile sensors", "subscribe robot grasping with tactile sensors"),
    ],
)
async def test_a_topic_option_is_read_as_the_same_words_typed_on_slack(
    bot: PaperboyClient,
    fake_discord: FakeDiscord,
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    typed: str,
    slack: str,
) -> None:
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": typed}, permissions=MANAGE_CHANNELS),
    )
    [callback] = fake_discord.callbacks()
    content, followed = typed_elsewhere(slack, tmp_path, seed_paths, catalog, bot.services)
    assert callback["data"]["content"] == content
    assert [row["topic_id"] for row in active_subscriptions(bot.services.db(), CHANNEL)] == followed


async def test_the_loosely_named_topic_is_followed_and_told(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(
        bot,
        fake_discord,
        interaction(
            "subscribe", {"topic": "RL  from human feedback "}, permissions=MANAGE_CHANNELS
        ),
    )
    [callback] = fake_discord.callbacks()
    assert (
        "I took `RL from human feedback` as the catalog topic `rlhf`"
        in (callback["data"]["content"])
    )
    assert [row["topic_id"] for row in active_subscriptions(bot.services.db(), CHANNEL)] == ["rlhf"]
    await dispatch(  # the same words undo it, as on Slack
        bot,
        fake_discord,
        interaction(
            "unsubscribe", {"topic": "RL from human feedback"}, permissions=MANAGE_CHANNELS
        ),
    )
    assert active_subscriptions(bot.services.db(), CHANNEL) == []
