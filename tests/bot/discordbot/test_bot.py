"""The Discord bot: interactions through discord.py's real CommandTree, on a fake REST API."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import discord
import pytest

from bot.discordbot.client import PaperboyClient
from bot.discordbot.commands import NEEDS_MANAGE_CHANNELS, matching_zones
from db import open_db
from db.channels import active_subscriptions
from db.errors import Busy
from digests.commands import VERBS
from digests.failures import BUSY
from digests.topics import Catalog
from tests.fakes.discord_api import APP_ID, FakeDiscord
from tests.fakes.discord_interactions import (
    CHANNEL,
    GUILD,
    MANAGE_CHANNELS,
    dispatch,
    interaction,
    logged_in,
    make_services,
)
from tests.fakes.waiting import eventually

EPHEMERAL = 1 << 6


def subscriptions(client: PaperboyClient) -> list[str]:
    return [
        row["topic_id"] for row in active_subscriptions(open_db(client.services.db_path), CHANNEL)
    ]


def test_the_group_has_every_verb_described_from_the_grammar(catalog: Catalog) -> None:
    from bot.discordbot.commands import PapersGroup

    commands = {
        command.name: command for command in PapersGroup.__discord_app_commands_group_children__
    }  # type: ignore[attr-defined]
    assert set(commands) == {verb.name for verb in VERBS}
    personal = {verb.name for verb in VERBS if verb.personal}
    assert {n for n, c in commands.items() if any(p.name == "me" for p in c.parameters)} == personal
    for verb in VERBS:
        command = commands[verb.name]
        assert command.description == verb.help
        for param in command.parameters:
            if param.name == "me":  # the grammar's `--me` flag (personal digests)
                assert verb.personal and not param.required
                continue
            declared = next(p for p in verb.params if p.name == param.name)
            assert param.description == declared.help[:100]


async def test_commands_sync_globally_once(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_discord: FakeDiscord
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    first = await logged_in(services, fake_discord)
    await first.close()
    assert first.synced == "global"
    [put] = fake_discord.made("PUT", f"/applications/{APP_ID}/commands")
    [papers] = put.body
    assert papers["name"] == "papers"
    assert {option["name"] for option in papers["options"]} == {verb.name for verb in VERBS}
    second = await logged_in(services, fake_discord)
    await second.close()
    assert second.synced == "unchanged"
    assert len(fake_discord.made("PUT", "/commands")) == 1  # not again: nothing changed


async def test_a_development_guild_syncs_at_once(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_discord: FakeDiscord
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    client = await logged_in(services, fake_discord, guild_id=int(GUILD))
    await client.close()
    assert client.synced == "guild"
    assert fake_discord.made("PUT", f"/applications/{APP_ID}/guilds/{GUILD}/commands")


async def test_subscribe_with_manage_channels(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "offline-rl"}, permissions=MANAGE_CHANNELS),
    )
    [callback] = fake_discord.callbacks()
    assert callback["type"] == 4
    data = callback["data"]
    assert "@alice subscribed this channel to Offline RL" in data["content"]
    assert not data.get("flags", 0) & EPHEMERAL  # the channel sees changes
    assert data["allowed_mentions"] == {"parse": []}
    assert subscriptions(bot) == ["offline-rl"]


async def test_subscribe_without_permission_is_refused_politely(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(
        bot, fake_discord, interaction("subscribe", {"topic": "offline-rl"}, permissions=0)
    )
    [callback] = fake_discord.callbacks()
    assert callback["data"]["flags"] & EPHEMERAL
    assert callback["data"]["content"] == NEEDS_MANAGE_CHANNELS
    assert subscriptions(bot) == []


async def test_lookups_are_ephemeral_embeds(bot: PaperboyClient, fake_discord: FakeDiscord) -> None:
    await dispatch(bot, fake_discord, interaction("find", {"query": "alpha dpo"}))
    [callback] = fake_discord.callbacks()
    data = callback["data"]
    assert data["flags"] & EPHEMERAL
    assert data["embeds"][0]["title"].startswith("AlphaDPO")


async def test_core_errors_arrive_as_friendly_replies(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "ofline-rl"}, permissions=MANAGE_CHANNELS),
    )
    await dispatch(
        bot,
        fake_discord,
        interaction(
            "schedule", {"weekday": "monday", "time": "25:00"}, permissions=MANAGE_CHANNELS
        ),
    )
    first, second = fake_discord.callbacks()
    assert "Did you mean `offline-rl`?" in first["data"]["content"]
    assert "schedule monday 09:00 Europe/Berlin" in second["data"]["content"]


async def test_a_crash_is_a_polite_reply(
    bot: PaperboyClient, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.discordbot import commands

    def broken(text: str, ctx: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(commands, "handle", broken)
    await dispatch(bot, fake_discord, interaction("list"))
    [callback] = fake_discord.callbacks()
    assert callback["data"]["content"].startswith("Sorry, something went wrong")
    assert "secret internals" not in str(callback)


async def test_a_busy_database_is_said_as_such(
    bot: PaperboyClient, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.discordbot import commands

    def busy(text: str, ctx: Any) -> Any:
        raise Busy("database is locked")

    monkeypatch.setattr(commands, "handle", busy)
    await dispatch(bot, fake_discord, interaction("list"))
    [callback] = fake_discord.callbacks()
    assert callback["data"]["content"] == BUSY


async def test_topic_autocomplete(bot: PaperboyClient, fake_discord: FakeDiscord) -> None:
    await dispatch(
        bot, fake_discord, interaction("subscribe", {"topic": "off"}, kind=4, focused="topic")
    )
    await dispatch(
        bot, fake_discord, interaction("subscribe", {"topic": ""}, kind=4, focused="topic")
    )
    narrow, everything = fake_discord.callbacks()
    assert narrow["type"] == 8
    assert {"name": "Offline RL (offline-rl)", "value": "offline-rl"} in narrow["data"]["choices"]
    assert len(everything["data"]["choices"]) == 24  # the whole catalog, under Discord's 25
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "diffusion policy"}, permissions=MANAGE_CHANNELS),
    )
    await dispatch(
        bot, fake_discord, interaction("subscribe", {"topic": "diff"}, kind=4, focused="topic")
    )
    names = [choice["name"] for choice in fake_discord.callbacks()[-1]["data"]["choices"]]
    assert names == ["Diffusion models (diffusion-models)", '"diffusion policy"']
    await dispatch(
        bot, fake_discord, interaction("subscribe", {"topic": ""}, kind=4, focused="topic")
    )
    assert len(fake_discord.callbacks()[-1]["data"]["choices"]) == 25  # n.b. capped at 25


async def test_unsubscribe_autocomplete_offers_the_channels_topics(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "robotics"}, permissions=MANAGE_CHANNELS),
    )
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "diffusion policy"}, permissions=MANAGE_CHANNELS),
    )
    await dispatch(
        bot, fake_discord, interaction("unsubscribe", {"topic": ""}, kind=4, focused="topic")
    )
    choices = fake_discord.callbacks()[-1]["data"]["choices"]
    assert [choice["name"] for choice in choices] == ["Robotics (robotics)", '"diffusion policy"']


async def test_timezone_autocomplete_and_weekday_choices(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    assert matching_zones("europe/ber")[0] == "Europe/Berlin"
    assert len(matching_zones("")) == 25
    await dispatch(
        bot,
        fake_discord,
        interaction(
            "schedule",
            {"weekday": "monday", "time": "9:00", "timezone": "new_y"},
            kind=4,
            focused="timezone",
        ),
    )
    choices = fake_discord.callbacks()[-1]["data"]["choices"]
    assert choices[0]["value"] == "America/New_York"
    [schedule] = [
        c
        for c in fake_discord.made("PUT", "/commands")[0].body[0]["options"]
        if c["name"] == "schedule"
    ]
    weekday = next(option for option in schedule["options"] if option["name"] == "weekday")
    assert [choice["value"] for choice in weekday["choices"]][:2] == ["monday", "tuesday"]
    await dispatch(
        bot,
        fake_discord,
        interaction(
            "schedule",
            {"weekday": "friday", "time": "16:30", "timezone": "Europe/London"},
            permissions=MANAGE_CHANNELS,
        ),
    )
    assert "Fridays at 16:30 (Europe/London)" in fake_discord.callbacks()[-1]["data"]["content"]


async def test_a_slow_answer_is_deferred_then_followed_up(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_discord: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot.discordbot import commands

    release = threading.Event()
    real = commands.handle

    def slow(text: str, ctx: Any) -> Any:
        release.wait(30)
        return real(text, ctx)

    monkeypatch.setattr(commands, "handle", slow)
    services = make_services(tmp_path, seed_paths, catalog, fake_discord)
    client = await logged_in(services, fake_discord, ack_budget=0.2)
    try:
        await dispatch(client, fake_discord, interaction("find", {"query": "diffusion"}))
        [deferred] = fake_discord.callbacks()
        assert deferred["type"] == 5 and deferred["data"]["flags"] & EPHEMERAL
        assert fake_discord.followups() == []
        release.set()
        await eventually(fake_discord.followups)
        [followup] = fake_discord.followups()
        assert followup["content"].startswith("Top 5")
        assert followup["allowed_mentions"] == {"parse": []}
    finally:
        release.set()
        await client.close()


def test_subcommands_are_typed_with_bounds() -> None:
    from bot.discordbot.commands import PapersGroup

    commands = {c.name: c for c in PapersGroup.__discord_app_commands_group_children__}  # type: ignore[attr-defined]
    find = commands["find"].parameters[0]
    assert find.type is discord.AppCommandOptionType.string and find.max_value == 300
