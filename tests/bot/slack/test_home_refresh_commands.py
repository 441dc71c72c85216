"""A `/papers` command that changes something re-publishes the asker's Slack Home: their
own digest (`--me` in a channel, or any command in the DM with the app) and the
channels they manage, only if they opened the Home before, never for a refused or
read-only command. Signed slash commands to the HTTP endpoint and a Socket Mode envelope,
against the fake Slack Web API. Also: `services.changed` is told the digest that changed
(with `--me` the user's own, not the channel it was typed in), in Slack and Discord."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from bot.discordbot.client import PaperboyClient
from bot.slack import app as app_module
from bot.slack import home
from db import open_db
from db.channels import active_subscriptions
from digests.topics import Catalog
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import CHANNEL as DISCORD_CHANNEL
from tests.fakes.discord_interactions import MANAGE_CHANNELS, dispatch, interaction
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_home import home_opened, home_opened_envelope, post_event, publishes, view_of
from tests.fakes.slack_requests import (
    HttpClient,
    make_services,
    signed_headers,
    slash_body,
    socket_mode,
    start_http,
)
from tests.fakes.waiting import eventually

TEAM, ME, OTHER = "T0001", "U0001", "U0002"
MINE = f"slack:{TEAM}/@{ME}"
CHANNEL = f"slack:{TEAM}/C0001"
DISCORD_ME = (
    "discord:@500000000000000000"  # the member of tests.fakes.discord_interactions.interaction
)
_names = itertools.count(1)


@pytest.fixture
async def http(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack):  # type: ignore[no-untyped-def]
    # Only U0009 may change a channel: U0001's channel changes are refused.
    services = make_services(
        tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_SLACK_MANAGERS="U0009"
    )
    client = await start_http(services, fake_slack)
    yield client
    await client.close()


async def command(
    http: HttpClient, fake: FakeSlack, text: str, *, user: str = ME, channel: str = "C0001"
) -> str:
    """A signed `/papers` slash command (a response_url of its own: no two bodies, so no
    two signatures, alike); the text of its acknowledgement, which is its answer."""
    body = slash_body(text, fake.response_url(f"r{next(_names)}"), user=user, channel=channel)
    response = await http.session.post(
        http.url("/slack/events"), data=body, headers=signed_headers(body)
    )
    assert response.status == 200
    return str((await response.json())["text"])


async def settled(http: HttpClient | None = None) -> None:
    """Wait for the endpoint's background work and the Home refreshes started so far."""
    if http is not None:
        assert await eventually(lambda: not http.endpoint._followups)
    assert await eventually(lambda: not home._running)


def views_of(fake: FakeSlack, user: str) -> list[str]:
    """The Homes published for `user`, as JSON text, oldest first."""
    return [
        json.dumps(view_of(call), ensure_ascii=False)
        for call in publishes(fake)
        if call["user_id"] == user
    ]


async def open_home(http: HttpClient, fake: FakeSlack, user: str = ME) -> None:
    assert await post_event(http, home_opened(user)) == 200
    assert await eventually(lambda: views_of(fake, user))
    await settled(http)


async def test_subscribe_me_in_a_channel_republishes_the_askers_home(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    changed: list[str] = []
    http.services.listeners.append(changed.append)  # the scheduler's hook
    await open_home(http, fake_slack)
    assert "RLHF" not in views_of(fake_slack, ME)[-1]
    assert "You now follow RLHF" in await command(http, fake_slack, "subscribe --me rlhf")
    await settled(http)
    [opened, refreshed] = views_of(fake_slack, ME)
    assert "RLHF" in refreshed and "RLHF" not in opened  # under "Your topics"
    assert json.dumps(home.EMPTY_TOPICS, ensure_ascii=False)[1:-1] not in refreshed
    # Typed in C0001, it changed my own digest: that one is named, not the channel.
    assert changed == [MINE]
    db = open_db(http.services.db_path)
    assert [row["topic_id"] for row in active_subscriptions(db, MINE)] == ["rlhf"]
    assert active_subscriptions(db, CHANNEL) == []
    # Then a schedule: the Home says when it comes now.
    assert "daily" in await command(http, fake_slack, "schedule --me daily 07:30 UTC")
    await settled(http)
    assert len(views_of(fake_slack, ME)) == 3
    assert "daily at 07:30 (UTC)" in views_of(fake_slack, ME)[-1]
    assert changed == [MINE, MINE]


async def test_refused_read_only_and_unopened_homes_publish_nothing(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    changed: list[str] = []
    http.services.listeners.append(changed.append)
    await open_home(http, fake_slack)
    answers = [
        await command(http, fake_slack, "subscribe rlhf"),  # refused: U0009 manages C0001
        await command(http, fake_slack, "subscribe --me no-such-topic-at-all-xyz"),  # an error
        await command(http, fake_slack, "list --me"),  # reads
        await command(http, fake_slack, "find offline"),  # reads
        await command(http, fake_slack, "unsubscribe --me rlhf"),  # nothing to remove
        await command(http, fake_slack, "schedule --me someday 25:00"),  # bad input
    ]
    assert "only" in answers[0] and "change this channel" in answers[0]
    await settled(http)
    assert len(views_of(fake_slack, ME)) == 1  # the one it opened with
    assert changed == []
    db = open_db(http.services.db_path)
    assert active_subscriptions(db, CHANNEL) == [] and active_subscriptions(db, MINE) == []
    # Someone who never opened their Home changes their digest: nothing published for them.
    theirs = await command(http, fake_slack, "subscribe --me rlhf", user=OTHER)
    assert "You now follow RLHF" in theirs
    await settled(http)
    assert views_of(fake_slack, OTHER) == []
    assert changed == [f"slack:{TEAM}/@{OTHER}"]
    # And the same path for me publishes: the refusals above were not just slow.
    assert "You now follow RLHF" in await command(http, fake_slack, "subscribe --me rlhf")
    await settled(http)
    assert len(views_of(fake_slack, ME)) == 2 and "RLHF" in views_of(fake_slack, ME)[-1]
    assert [call["user_id"] for call in publishes(fake_slack)] == [ME, ME]


async def test_a_channel_change_and_a_dm_command_republish_the_home(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    """U0009 may change C0001: it shows under "Channels you manage" at once. In the DM
    with the app a plain `subscribe` is about their own digest: the Home shows that too."""
    await open_home(http, fake_slack, "U0009")
    assert "<#C0001>" not in views_of(fake_slack, "U0009")[-1]
    said = await command(http, fake_slack, "subscribe offline-rl", user="U0009")
    assert "subscribed this channel" in said
    await settled(http)
    assert len(views_of(fake_slack, "U0009")) == 2
    assert "<#C0001>" in views_of(fake_slack, "U0009")[-1]  # a channel I manage
    said = await command(http, fake_slack, "subscribe rlhf", user="U0009", channel="D0009")
    assert "You now follow RLHF" in said
    await settled(http)
    [*_, last] = views_of(fake_slack, "U0009")
    assert len(views_of(fake_slack, "U0009")) == 3 and "RLHF" in last


async def test_a_failing_refresh_never_fails_the_command(
    http: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    await open_home(http, fake_slack)
    started: list[tuple[str, str]] = []

    def broken(services: Any, client: Any, team: str, user_id: str) -> None:
        started.append((team, user_id))
        raise RuntimeError("a bug in the refresh")

    monkeypatch.setattr(app_module, "refresh_home", broken)
    assert "You now follow RLHF" in await command(http, fake_slack, "subscribe --me rlhf")
    assert started == [(TEAM, ME)]
    db = open_db(http.services.db_path)
    assert [row["topic_id"] for row in active_subscriptions(db, MINE)] == ["rlhf"]


async def test_subscribe_me_over_socket_mode_republishes_the_home(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    changed: list[str] = []
    services.listeners.append(changed.append)
    async with socket_mode(services, fake_slack):
        await fake_slack.send_envelope(home_opened_envelope())
        assert await eventually(lambda: views_of(fake_slack, ME))
        payload = dict(parse_qsl(slash_body("subscribe --me rlhf", fake_slack.response_url())))
        await fake_slack.send_envelope(
            {
                "envelope_id": "0b7c52a1-3f4e-4d8a-9c61-2e5f7a9d1b02",
                "type": "slash_commands",
                "accepts_response_payload": True,
                "payload": payload,
            }
        )
        assert await eventually(lambda: len(views_of(fake_slack, ME)) == 2)
        await settled()
        acks = fake_slack.socket_acks
        assert await eventually(lambda: any(ack["envelope_id"].endswith("02") for ack in acks))
        [ack] = [ack for ack in acks if ack["envelope_id"].endswith("02")]
        assert "You now follow RLHF" in ack["payload"]["text"]
        assert "RLHF" in views_of(fake_slack, ME)[-1]
        assert changed == [MINE]


async def test_discord_me_tells_the_listeners_the_users_own_digest(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """`/papers subscribe me:True` in a channel changed the user's own digest: the
    listeners (the scheduler's) are told that one, not the channel."""
    changed: list[str] = []
    bot.services.listeners.append(changed.append)
    mine = interaction("subscribe", {"topic": "robotics"})
    mine["data"]["options"][0]["options"].append({"name": "me", "type": 5, "value": True})
    await dispatch(bot, fake_discord, mine)
    assert "You now follow Robotics" in json.dumps(fake_discord.callbacks()[-1]["data"])
    assert changed == [DISCORD_ME]
    channel = interaction("subscribe", {"topic": "rlhf"}, permissions=MANAGE_CHANNELS)
    await dispatch(bot, fake_discord, channel)
    assert changed == [DISCORD_ME, DISCORD_CHANNEL]


# --- The answer never waits for the Home: with the refresh stuck in Slack (users.info
# never answers), the command's acknowledgement still carries its answer (over HTTP and
# Socket Mode), and the Home follows once Slack answers. And `--me` is read once, by the
# grammar: the digest `services.changed` is told is the one the command changed, however
# `--me` was typed or quoted; a command that changed nothing tells nobody.


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
    http: HttpClient,
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
    http: HttpClient,
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
