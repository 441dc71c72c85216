"""Review of e9c3088 (a `/papers` change re-publishes the asker's Slack Home): what its
tests left unchecked. The answer never waits for the Home: with the refresh stuck in
Slack (users.info never answers), the command's acknowledgement still carries its answer
(over HTTP and Socket Mode), and the Home follows once Slack answers. And `--me` is read
once, by the grammar: the digest `services.changed` is told is the one the command changed
(the row in the database), however `--me` was typed (`—me`, `--ME`, last) or quoted (then
it is text), in Slack and in Discord's options; a command that changed nothing tells
nobody and publishes no Home."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from bot.discordbot.client import PaperboyClient
from bot.slack import home
from db import open_db
from digests.topics import Catalog
from tests.discord_helpers import CHANNEL as DISCORD_CHANNEL
from tests.discord_helpers import MANAGE_CHANNELS, dispatch, interaction
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.slack_helpers import HttpClient, make_services, slash_body, socket_mode
from tests.test_home_refresh_commands import (
    CHANNEL,
    ME,
    TEAM,
    command,
    http,  # noqa: F401  (the fixture)
    open_home,
    settled,
    views_of,
)
from tests.test_slack_home_events import home_opened_envelope
from tests.waiting import eventually


def stuck_users_info(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the Home's users.info (the first Slack call of a refresh) hang until released:
    (reached, release)."""
    reached, release = asyncio.Event(), asyncio.Event()
    real = home.legacy_names

    async def hanging(client: Any, user_id: str) -> list[str]:
        reached.set()
        await release.wait()
        return await real(client, user_id)

    monkeypatch.setattr(home, "legacy_names", hanging)
    return reached, release


async def test_the_answer_does_not_wait_for_the_home_over_http(
    http: HttpClient,  # noqa: F811
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await open_home(http, fake_slack)
    reached, release = stuck_users_info(monkeypatch)
    # The ack budget is 2 s: an answer that waited for the refresh would be "Working on it…".
    said = await command(http, fake_slack, "subscribe --me rlhf")
    assert "You now follow RLHF" in said
    assert await eventually(reached.is_set)  # the refresh did start, and is stuck
    assert len(views_of(fake_slack, ME)) == 1
    release.set()
    await settled(http)
    assert len(views_of(fake_slack, ME)) == 2 and "RLHF" in views_of(fake_slack, ME)[-1]


async def test_the_answer_does_not_wait_for_the_home_over_socket_mode(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    async with socket_mode(services, fake_slack):
        await fake_slack.send_envelope(home_opened_envelope())
        assert await eventually(lambda: views_of(fake_slack, ME))
        await settled()
        reached, release = stuck_users_info(monkeypatch)
        payload = dict(parse_qsl(slash_body("subscribe --me rlhf", fake_slack.response_url())))
        await fake_slack.send_envelope(
            {
                "envelope_id": "5d1e7c2a-0b4f-4e8a-9d3c-6a2f1b7e9c02",
                "type": "slash_commands",
                "accepts_response_payload": True,
                "payload": payload,
            }
        )
        acks = fake_slack.socket_acks
        assert await eventually(lambda: any(a["envelope_id"].endswith("02") for a in acks))
        [ack] = [a for a in acks if a["envelope_id"].endswith("02")]
        assert "You now follow RLHF" in ack["payload"]["text"]  # not "Working on it…"
        assert await eventually(reached.is_set)  # started, and stuck
        assert len(views_of(fake_slack, ME)) == 1
        release.set()
        assert await eventually(lambda: len(views_of(fake_slack, ME)) == 2)
        await settled()


MANAGER = "U0009"  # the fixture's only manager: may change C0001 too
THEIRS = f"slack:{TEAM}/@{MANAGER}"


def changed_digests(db_path: Path) -> set[str]:
    """The digests a test's command wrote to: a subscription or a channel row."""
    db = open_db(db_path)
    rows = db.execute("select channel from subscriptions where removed_at is null").fetchall()
    rows += db.execute("select id from channels").fetchall()
    return {str(row[0]) for row in rows}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("subscribe —me rlhf", THEIRS),  # an em dash: autocorrect's `--`
        ("/papers subscribe –me rlhf", THEIRS),  # an en dash, with the command's name
        ("subscribe rlhf --ME", THEIRS),  # last, in capitals
        ("subscribe --me 'diffusion policy'", THEIRS),
        ("backlog --me on", THEIRS),
        ("subscribe 'rlhf --me'", CHANNEL),  # quoted: text, the channel follows it
        ("backlog on", CHANNEL),
        ('subscribe "--me"', None),  # quoted alone: a topic with no word, refused
        ("feedback reset --me rlhf", None),  # nothing to reset
    ],
)
async def test_the_digest_told_is_the_one_the_command_changed(
    http: HttpClient,  # noqa: F811
    fake_slack: FakeSlack,
    text: str,
    where: str | None,
) -> None:
    told: list[str] = []
    http.services.listeners.append(told.append)
    await open_home(http, fake_slack, MANAGER)
    await command(http, fake_slack, text, user=MANAGER)
    await settled(http)
    assert changed_digests(http.services.db_path) == ({where} if where else set())
    assert told == ([where] if where else [])
    assert len(views_of(fake_slack, MANAGER)) == (2 if where else 1)


async def test_discord_a_me_typed_into_a_topic_is_text_and_the_channel_is_told(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """Discord's `me` is an option; `--me` typed into the topic is the topic's text
    (`_quoted`), so a manager's channel follows it and the channel is told."""
    told: list[str] = []
    bot.services.listeners.append(told.append)
    typed = interaction("subscribe", {"topic": "rlhf --me"}, permissions=MANAGE_CHANNELS)
    await dispatch(bot, fake_discord, typed)
    assert told == [DISCORD_CHANNEL]
    assert changed_digests(bot.services.db_path) == {DISCORD_CHANNEL}
