"""Personal digests (issue 13): references, the `--me` grammar and the commands.

A personal digest is a channel whose reference names a user (`slack:T/@U`,
`discord:@USER`); these tests cover what is decided before any delivery.
"""

from __future__ import annotations

import pytest
from sqlite_utils import Database

from config.settings import Settings
from digests.channels import ChannelError, parse_channel, personal_channel
from digests.commands import Context, handle
from digests.commands.grammar import ParseError, parse, usage_hint
from digests.topics import Catalog
from tests.conftest import NOW

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


def test_help_explains_me(seeded_db: Database, settings: Settings, catalog: Catalog) -> None:
    ctx = Context(seeded_db, "slack:T0001/C0001", "alice", NOW, settings, catalog)
    reply = handle("help subscribe", ctx)
    assert "`/papers subscribe [--me] <topic>`" in reply.lines
    assert any(line.strip().startswith("--me: your own digest") for line in reply.lines)
    assert not any("--me" in line for line in handle("help topics", ctx).lines)
