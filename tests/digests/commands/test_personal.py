"""Personal digests: references, the `--me` grammar and the commands.

A personal digest is a channel whose reference names a user (`slack:T/@U`,
`discord:@USER`); these tests cover what is decided before any delivery.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.discordbot import commands
from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.dm import DmChannels
from bot.send import send_digest
from bot.services import Services
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from config.settings import Settings
from db import open_db
from db.app_state import get_state
from db.channels import active_subscriptions, get_channel
from db.home import recorded_channels
from db.store import Store
from digests.channels import ChannelError, parse_channel, personal_channel
from digests.commands import Context, handle
from digests.commands.grammar import ParseError, as_personal, parse, usage_hint
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import MANAGE_CHANNELS, dispatch, interaction
from tests.fakes.personal import DISCORD_ME, post, topics_of, with_me
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import BOT_TOKEN, make_services, start_http

# --- references ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "platform", "team", "user"),
    [
        ("slack:T0123ABC/@U0456DEF", "slack", "T0123ABC", "U0456DEF"),
        ("slack:T0123ABC/@W0456DEF", "slack", "T0123ABC", "W0456DEF"),  # Enterprise Grid
        ("discord:@123456789012345678", "discord", None, "123456789012345678"),
    ],
)
def test_a_personal_reference_names_a_user(
    text: str, platform: str, team: str | None, user: str
) -> None:
    ref = parse_channel(text)
    assert (ref.platform, ref.team, ref.user, ref.personal) == (platform, team, user, True)
    assert str(ref) == text


@pytest.mark.parametrize(
    "text",
    [
        "local:research",
        "slack:T012AB3C4/C0123456789",
        "slack:T012AB3C4/D0123456789",
        "discord:123456789012345678/987654321098765432",
    ],
)
def test_every_existing_form_still_parses_and_is_not_personal(text: str) -> None:
    ref = parse_channel(text)
    assert str(ref) == text
    assert not ref.personal and ref.user is None


@pytest.mark.parametrize(
    "text",
    [
        "local:@alice",  # nobody to send a direct message to
        "slack:T0123/@C0456",  # a channel id is not a user
        "slack:T0123/@@U0456",
        "slack:T0123/@u0456",
        "slack:T0123/@U0456/C0789",
        "slack:@U0456",  # Slack users belong to a workspace
        "slack:T0123/@U0456 C0789",
        "slack:T0123/@U04\u200b56",
        "discord:@",
        "discord:@12",
        "discord:123456789/@987654321",  # Discord users are global: no guild
        "discord:@123456789012345678/5",
        "discord:@-123456789",
        "discord:@１２３４５６７８９",  # full-width digits
        "slack:T0123/@U0456;drop table channels",
        "slack:T0123/@" + "U" * 40,
    ],
)
def test_hostile_personal_references_are_refused(text: str) -> None:
    with pytest.raises(ChannelError):
        parse_channel(text)


def test_a_trailing_newline_is_stripped_as_for_channels() -> None:
    # parse_channel strips surrounding space for every form; the stored key has none.
    assert str(parse_channel(" slack:T0123/@U0456\n")) == "slack:T0123/@U0456"


@pytest.mark.parametrize(
    ("key", "channel"),
    [
        ("slack:T0123/U0456", "slack:T0123/@U0456"),
        ("discord:123456789012345678", "discord:@123456789012345678"),
        ("local:alice", None),
        ("slack:T0123/C0456", None),
        ("slack:T0123", None),
        ("slack:T0123/U0456/x", None),
        ("discord:12/34", None),
        ("discord:abc", None),
        ("SLACK:T0123/U0456", None),
        ("", None),
    ],
)
def test_the_personal_channel_of_a_user_key(key: str, channel: str | None) -> None:
    assert personal_channel(key) == channel


# --- grammar -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verb", "args"),
    [
        ("subscribe --me offline-rl", "subscribe", {"topic": "offline-rl"}),
        ("subscribe offline-rl --me", "subscribe", {"topic": "offline-rl"}),
        ('subscribe --me "diffusion policy"', "subscribe", {"topic": "diffusion policy"}),
        ("/papers SUBSCRIBE --ME offline-rl", "subscribe", {"topic": "offline-rl"}),
        ("unsubscribe --me 1", "unsubscribe", {"topic": "1"}),
        ("list --me", "list", {}),
        ("schedule --me daily 07:30", "schedule", {"weekday": "daily", "time": "07:30"}),
        ("schedule daily 07:30 UTC --me", "schedule",
         {"weekday": "daily", "time": "07:30", "timezone": "UTC"}),
    ],
)  # fmt: skip
def test_me_makes_a_command_personal(text: str, verb: str, args: dict[str, str]) -> None:
    command = parse(text)
    assert (command.verb.name, command.args, command.me) == (verb, args, True)
    # Anyone may change their own digest: no manager check.
    assert not command.needs_manager


def test_without_me_a_change_still_needs_a_manager() -> None:
    command = parse("subscribe offline-rl")
    assert not command.me and command.needs_manager
    assert not parse("list").me


def test_me_inside_quotes_is_text() -> None:
    command = parse('subscribe "offline --me"')
    assert not command.me and command.args == {"topic": "offline --me"}


@pytest.mark.parametrize("text", ["topics --me", "bibtex --me p1", "find --me x", "sources --me"])
def test_me_on_a_verb_without_it_is_a_clear_error(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert "has no --me" in caught.value.message
    assert (
        "subscribe, unsubscribe, list, schedule, backlog, digest, status, resume, why, feedback"
        in caught.value.message
    )


def test_the_usage_shows_me() -> None:
    hint = usage_hint()
    assert "subscribe [--me] <topic>" in hint
    assert "list [--me]" in hint
    assert "topics [--me]" not in hint


def test_help_explains_me(seeded_db: Store, settings: Settings, catalog: Catalog) -> None:
    ctx = Context(seeded_db, "slack:T0001/C0001", "alice", NOW, settings, catalog)
    reply = handle("help subscribe", ctx)
    assert "`/papers subscribe [--me] <topic>`" in reply.lines
    assert any(line.strip().startswith("--me: your own digest") for line in reply.lines)
    assert not any("--me" in line for line in handle("help topics", ctx).lines)


# --- Personal digests: hostile cases.

ALICE = "slack:T0001/@U0001"
ALICE_KEY = "slack:T0001/U0001"
DM = "D0000DM01"  # Alice's direct message with the app


@pytest.fixture
def services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> Services:
    """Slack on the fake; anyone may change a channel (the default)."""
    return make_services(
        tmp_path, seed_paths, catalog, fake_slack, stored_at=NOW - timedelta(days=30)
    )


async def test_a_command_in_the_dm_with_the_app_is_about_the_users_own_digest(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        followed = await post(http, fake_slack, "subscribe offline-rl", channel=DM)
        listed = await post(http, fake_slack, "list", channel=DM)
        timed = await post(http, fake_slack, "schedule monday 09:00 UTC", channel=DM)
        both = await post(http, fake_slack, "subscribe --me rlhf", channel=DM)
        backlog = await post(http, fake_slack, "backlog on", channel=DM)
    finally:
        await http.close()
    assert "your personal digest" in followed["text"], followed
    assert followed["response_type"] == "ephemeral"
    assert "Your personal digest follows 1 topic" in listed["text"], listed
    assert "Your personal digest now comes" in timed["text"], timed
    assert "You now follow" in both["text"], both
    assert "backlog" in backlog["text"].lower() and not backlog["text"].startswith("Sorry")
    assert topics_of(services, ALICE) == ["offline-rl", "rlhf"]
    assert (get_channel(services.db(), ALICE) or {}).get("backlog")
    # Nobody "manages" a personal digest: the Home lists it as theirs, not as a channel.
    assert recorded_channels(services.db(), "slack:T0001/U0001") == []
    # No second digest into the same conversation: the DM is not a channel of its own.
    assert get_channel(services.db(), f"slack:T0001/{DM}") is None
    assert topics_of(services, f"slack:T0001/{DM}") == []


async def test_in_a_channel_a_command_without_me_is_still_the_channels(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        await post(http, fake_slack, "subscribe offline-rl", channel="C0001")
    finally:
        await http.close()
    assert topics_of(services, "slack:T0001/C0001") == ["offline-rl"]
    assert topics_of(services, ALICE) == []
    assert recorded_channels(services.db(), "slack:T0001/U0001") == ["slack:T0001/C0001"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("subscribe offline-rl", "subscribe --me offline-rl"),
        ('/papers subscribe "offline rl"', 'subscribe --me "offline rl"'),
        ("subscribe “offline rl”", 'subscribe --me "offline rl"'),
        ("list", "list --me"),
        ("LIST", "LIST --me"),
        ("subscribe offline-rl --me", "subscribe offline-rl --me"),
        ("resume --me", "resume --me"),
        ("help", "help"),
        ("backlog on", "backlog --me on"),
        ("feedback reset offline-rl", "feedback --me reset offline-rl"),
        ("why p1", "why --me p1"),
        ("bibtex p1", "bibtex p1"),
        ("subscribe", "subscribe"),  # does not parse: handle() says why
        ("nonsense words", "nonsense words"),
    ],
)
def test_as_personal(text: str, expected: str) -> None:
    assert as_personal(text) == expected
    if expected != text:
        assert parse(expected).me


async def test_discord_a_dm_unknown_as_soon_as_opened_pauses_instead_of_retrying(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """A remembered DM that is gone is reopened (tests/bot/test_personal_delivery.py); one
    that Discord calls unknown right after opening it would be reopened on every attempt
    until the outbox gave up (8 attempts: the digest lost), so it pauses, held."""
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    fake_discord.queue("/messages", {"message": "Unknown Channel", "code": 10003}, status=404)
    digest, result = await send_digest(
        bot.services.db(),
        DiscordPoster(bot, dms=DmChannels(bot.services.db)),
        DISCORD_ME,
        NOW,
        catalog=bot.services.catalog,
        settings=replace(bot.services.settings, first_digest_days=60),
    )
    assert digest.items and result.state == "paused", result
    assert get_channel(bot.services.db(), DISCORD_ME)["paused"]  # type: ignore[index]
    assert get_state(bot.services.db(), f"dm {DISCORD_ME}") == ""  # reopened on resume
    assert len(fake_discord.made("POST", "/users/@me/channels")) == 1


async def test_slack_an_external_user_the_app_cannot_dm_pauses_their_digest(
    services: Services, fake_slack: FakeSlack
) -> None:
    """conversations.open answers invalid_user_combination for a Slack Connect user who
    shares no channel with the app: retrying cannot help (as a transient error it would be
    retried until the outbox gave up, the digest lost), so that digest pauses, held for
    resume."""
    handle("subscribe --me robotics", services.context("slack:T0001/C0001", "@ext", ALICE_KEY))
    fake_slack.queue("conversations.open", {"ok": False, "error": "invalid_user_combination"})
    poster = SlackPoster(make_client(BOT_TOKEN, fake_slack.api_url), rate=None)
    settings = replace(services.settings, first_digest_days=60)
    digest, result = await send_digest(
        services.db(), poster, ALICE, NOW, catalog=services.catalog, settings=settings
    )
    assert digest.items and result.state == "paused", result
    row = get_channel(services.db(), ALICE)
    assert row is not None and row["paused_reason"] == "invalid_user_combination"
    assert fake_slack.posted() == []


@pytest.mark.parametrize(
    "key", ["slack:T0001/U0001 ", "slack:T0001/U0001\n", "discord:500000000000000000\t"]
)
def test_a_user_key_with_whitespace_names_no_personal_digest(key: str) -> None:
    """parse_channel strips its text, so without the exact-form check these made a
    reference with a trailing space: a second personal digest of the same user."""
    assert personal_channel(key) is None


async def test_discord_unsubscribe_me_autocompletes_the_users_own_topics(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """With `me`, the topics offered are the user's own digest's, not the channel's."""
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "robotics"}, permissions=MANAGE_CHANNELS),
    )
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "rlhf"})))
    asked = interaction("unsubscribe", {"topic": ""}, kind=4, focused="topic")
    await dispatch(bot, fake_discord, with_me(asked))
    mine = [choice["value"] for choice in fake_discord.callbacks()[-1]["data"]["choices"]]
    await dispatch(
        bot, fake_discord, interaction("unsubscribe", {"topic": ""}, kind=4, focused="topic")
    )
    channels = [choice["value"] for choice in fake_discord.callbacks()[-1]["data"]["choices"]]
    assert mine == ["rlhf"]
    assert channels == ["robotics"]


async def test_discord_a_command_without_user_data_is_refused_politely(
    bot: PaperboyClient, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    """A server interaction without `member` (discord.py then leaves `interaction.user`
    MISSING), as for a click: the command gets an ephemeral line and changes nothing (not
    "something went wrong" with an AttributeError logged); `unsubscribe me`'s autocomplete
    offers the channel's topics, as for a user with no personal digest (not a traceback)."""

    def without_member(payload: dict[str, Any]) -> dict[str, Any]:
        payload["user"] = payload.pop("member")["user"]  # not where discord.py reads it
        return payload

    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "robotics"}, permissions=MANAGE_CHANNELS),
    )
    for payload in (interaction("saved"), with_me(interaction("subscribe", {"topic": "rlhf"}))):
        await dispatch(bot, fake_discord, without_member(payload))
        answer = fake_discord.callbacks()[-1]["data"]
        assert answer["content"] == commands.NO_USER and answer["flags"] & 64
    asked = with_me(interaction("unsubscribe", {"topic": ""}, kind=4, focused="topic"))
    await dispatch(bot, fake_discord, without_member(asked))
    assert [c["value"] for c in fake_discord.callbacks()[-1]["data"]["choices"]] == ["robotics"]
    assert active_subscriptions(open_db(bot.services.db_path), DISCORD_ME) == []
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
