"""Bad command input gets one clear line and changes nothing: an unclosed quote is refused
(an apostrophe opens nothing; smart quotes are plain ones), `help --me` lists the `--me`
commands, usage typed in the Slack DM has no `[--me]`, and an operator on someone's own
digest (`paperboy chat --channel slack:T/@U`) gets answers worded for it.
"""

from __future__ import annotations

import html
import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest

from bot.services import Services
from db.channels import active_subscriptions, get_channel, set_paused
from db.connection import open_db
from digests.commands import handle
from digests.commands.grammar import _closing, _quotes, parse, unclosed_quote
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_interactions import CHANNEL as DISCORD_CHANNEL
from tests.fakes.discord_interactions import MANAGE_CHANNELS, dispatch, interaction
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import make_services, signed_headers, slash_body, start_http

ALICE = "slack:T0001/@U0001"
ALICE_KEY = "slack:T0001/U0001"
CHANNEL = "slack:T0001/C0001"
APP_DM = "D0000APP1"  # Alice's direct message with the app


@pytest.fixture
def services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> Services:
    """Slack on the fake; anyone may change a channel (the quote must be what refuses)."""
    return make_services(
        tmp_path,
        seed_paths,
        catalog,
        fake_slack,
        stored_at=NOW - timedelta(days=30),
        PAPERBOY_SLACK_MANAGERS="anyone",
    )


def _untouched(services: Services) -> None:
    """Neither the channel nor Alice's own digest was made or given a topic."""
    for channel in (CHANNEL, ALICE):
        assert get_channel(services.db(), channel) is None, channel
        assert not active_subscriptions(services.db(), channel), channel


async def slash(http: Any, fake: FakeSlack, text: str, *, channel: str, name: str) -> str:
    """`/papers TEXT` by U0001 in conversation `channel` (`name` as Slack names it), over
    the HTTP endpoint: the acknowledgement, as text (JSON, unescaped), checked ephemeral."""
    fields = dict(parse_qsl(slash_body(text, fake.response_url(), user="U0001", channel=channel)))
    body = urlencode(fields | {"channel_name": name})
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 200
    answer: dict[str, Any] = json.loads(await response.text())
    assert answer["response_type"] == "ephemeral", answer
    return html.unescape(json.dumps(answer, ensure_ascii=False))  # Slack's `&lt;` as `<`


# --- an unclosed quote ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'subscribe "diffusion policy',
        "subscribe “diffusion policy",  # a smart quote (Slack, macOS autocorrect)
        "subscribe „diffusion policy",
        'subscribe "diffusion --me policy',  # `--me` after an open quote: still refused
        'subscribe --me "diffusion policy',
        'subscribe "offline-rl" "diffusion',  # one pair closed, the next one not
        'unsubscribe "diffusion policy',
        'similar "p380c62ca5bf30379',
        'why "p380c62ca5bf30379',
        'why --me "p380c62ca5bf30379',
        'show "p380c62ca5bf30379',
        'bibtex "p380c62ca5bf30379',
        'feedback reset "offline rl',
        'schedule "monday 09:00',
        'help "subscribe',
        '/papers subscribe ("diffusion policy)',
    ],
)
def test_an_unclosed_quote_is_refused_in_one_line_and_changes_nothing(
    services: Services, text: str
) -> None:
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert reply.error and reply.text.startswith("A quote is not closed: `"), reply.text
    assert "or leave the quotes out" in reply.text and not reply.lines, reply
    _untouched(services)


def test_the_refusal_shows_the_command_as_typed() -> None:
    with pytest.raises(ValueError) as refused:
        parse("/papers subscribe “diffusion policy")
    assert str(refused.value) == (
        'A quote is not closed: `subscribe “diffusion policy` — close it with `"`, '
        "or leave the quotes out."
    )


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ('subscribe "diffusion policy"', "diffusion policy"),
        ("subscribe “diffusion policy”", "diffusion policy"),
        ("subscribe „diffusion policy“", "diffusion policy"),
        ("subscribe »diffusion policy«", "diffusion policy"),
        ("subscribe 'diffusion policy'", "diffusion policy"),
        ("subscribe ‘diffusion policy’", "diffusion policy"),
        # An apostrophe opens nothing, and does not close the quote around it.
        ("subscribe Bellman's equation", "Bellman's equation"),
        ("subscribe ‘Bellman’s equation’", "Bellman's equation"),
        ("subscribe 'Bellman's equation'", "Bellman's equation"),
        ("subscribe students' essays", "students' essays"),
        ('subscribe "diffusion --me policy"', "diffusion --me policy"),  # text, not the flag
    ],
)
def test_closed_quotes_and_apostrophes_are_taken(services: Services, text: str, topic: str) -> None:
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and reply.changed, reply.text
    assert [row["custom_text"] for row in active_subscriptions(services.db(), CHANNEL)] == [topic]
    assert not active_subscriptions(services.db(), ALICE)


def test_unclosed_quote_finds_only_an_opening_quote_left_open() -> None:
    assert unclosed_quote("find Bellman's equation") is None
    assert unclosed_quote("find rock 'n' roll") is None
    assert unclosed_quote('find 5" screens') is None  # after a digit: no opening
    # A `'` never closed is an apostrophe (`'til`, `'90s`): tests/digests/commands/test_input.py.
    assert unclosed_quote("find 'Bellman's equation") is None
    assert unclosed_quote('find "a" "b') == '"'


async def test_slack_an_unclosed_quote_is_refused_in_a_channel_and_in_the_dm(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        here = await slash(
            http, fake_slack, 'subscribe "diffusion policy', channel="C0001", name="papers"
        )
        mine = await slash(
            http, fake_slack, "subscribe “diffusion policy", channel=APP_DM, name="directmessage"
        )
        flagged = await slash(
            http, fake_slack, 'subscribe --me "diffusion policy', channel="C0001", name="papers"
        )
    finally:
        await http.close()
    for answer in (here, mine, flagged):
        assert "A quote is not closed" in answer, answer
    assert "subscribe “diffusion policy" in mine  # as typed, without the `--me` the DM adds
    _untouched(services)


# --- help --me -----------------------------------------------------------------------------


def test_help_me_in_a_channel_lists_the_me_commands_with_it(services: Services) -> None:
    reply = handle("help --me", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and reply.ephemeral, reply.text
    assert reply.text.startswith("Your personal digest comes to you as a direct message")
    assert (
        "`/papers subscribe --me <topic>`  Follow a topic from the catalog, or any free text "
        "in quotes." in reply.lines
    )
    assert "`/papers list --me`  Show what your personal digest follows, and when it comes." in (
        reply.lines
    )
    assert not [line for line in reply.lines if "[--me]" in line or "/papers find" in line]
    one = handle("help subscribe --me", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not one.error and one.text == "How to use `subscribe --me`:", one.text
    assert one.lines[0] == "`/papers subscribe --me <topic>`"
    assert "Example: `/papers subscribe --me offline-rl`" in one.lines
    alone = handle("/papers —me", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert alone.text == reply.text and alone.lines == reply.lines, alone.text
    # A command without `--me` is the same for everyone: its usual help.
    find = handle("help --me find", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not find.error and find.lines[0] == "`/papers find <query>`", find.lines


async def test_slack_help_me_in_a_channel_and_in_the_dm(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        here = await slash(http, fake_slack, "help --me", channel="C0001", name="papers")
        dm = await slash(http, fake_slack, "help --me", channel=APP_DM, name="directmessage")
        plain = await slash(http, fake_slack, "help", channel=APP_DM, name="directmessage")
    finally:
        await http.close()
    assert "subscribe --me" in here and "has no" not in here, here
    assert "Here every command is about your own digest" in dm and "has no" not in dm, dm
    assert dm == plain  # in the DM every command is already about one's own digest


def test_cli_help_me(run) -> None:  # type: ignore[no-untyped-def]
    result = run("chat", "--channel", "local:lab", "help --me")
    assert result.exit_code == 0, result.output
    assert "/papers subscribe --me <topic>" in result.output


# --- usage in the DM -----------------------------------------------------------------------


async def test_slack_a_usage_error_in_the_dm_has_no_me_flag(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        dm = [
            await slash(http, fake_slack, text, channel=APP_DM, name="directmessage")
            for text in ("schedule monday", "backlog maybe", "list everything")
        ]
        channel = await slash(http, fake_slack, "schedule monday", channel="C0001", name="papers")
    finally:
        await http.close()
    assert "Usage: `/papers schedule <weekday> <time> [timezone]`" in dm[0], dm[0]
    assert "usage: `/papers backlog <on|off>`" in dm[1], dm[1]
    assert "usage: `/papers list`" in dm[2], dm[2]
    assert not [answer for answer in dm if "[--me]" in answer], dm
    # In a channel `--me` is the choice to make: its usage still shows it.
    assert "`/papers schedule [--me] <weekday> <time> [timezone]`" in channel, channel
    _untouched(services)


# --- an operator on a personal digest --------------------------------------------------------


def test_cli_chat_on_a_personal_digest_is_worded_for_it(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "ops.db")

    def chat(text: str) -> str:
        result = run("chat", "--channel", ALICE, "--user", "ops", text, "--db", db)
        return str(result.output)

    said = {
        "subscribe": chat("subscribe offline-rl"),
        "again": chat("subscribe offline-rl"),
        "list": chat("list"),
        "unknown": chat("unsubscribe robotics"),
        "schedule": chat("schedule daily 07:30 UTC"),
        "not paused": chat("resume"),
    }
    set_paused(open_db(db), ALICE, "DMs refused", "2026-11-30T08:00:00+00:00")
    said["resume"] = chat("resume")
    said["unsubscribe"] = chat("unsubscribe offline-rl")
    assert said["subscribe"].startswith("You subscribed your personal digest to Offline RL")
    assert said["again"].startswith("Your personal digest already follows Offline RL")
    assert said["list"].startswith("Your personal digest follows 1 topic:")
    assert said["unknown"].startswith("Your personal digest does not follow robotics")
    assert said["schedule"].startswith("You moved your digest to daily at 07:30")
    assert said["not paused"].startswith("Delivery to your personal digest is not paused.")
    assert said["resume"].startswith("You resumed delivery to your personal digest")
    assert said["unsubscribe"].startswith("You unsubscribed your personal digest from Offline RL")
    assert not [text for text in said.values() if "this channel" in text.lower()], said


def test_cli_chat_an_unclosed_quote_stores_nothing(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "new.db"
    result = run("chat", "--channel", "local:lab", 'subscribe "diffusion policy', "--db", str(db))
    assert result.exit_code == 2
    assert result.output.startswith('A quote is not closed: subscribe "diffusion policy'), (
        result.output
    )
    assert not db.exists()  # not even a database was made


# --- the unclosed-quote refusal, as users type.

__all__ = ["services"]  # the fixture, used by name


def _followed(services: Services, channel: str) -> list[str]:
    return [row["custom_text"] for row in active_subscriptions(services.db(), channel)]


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("subscribe '90s hip hop", "'90s hip hop"),
        ("subscribe ‘90s hip hop", "'90s hip hop"),  # macOS smart punctuation's apostrophe
        ("subscribe rock 'n roll", "rock 'n roll"),
        ("subscribe 'til dawn", "'til dawn"),
        ("subscribe '90s and '00s hip hop", "'90s and '00s hip hop"),
        ("subscribe deep learning '", "deep learning '"),
    ],
)
def test_a_word_initial_apostrophe_is_text_not_an_unclosed_quote(
    services: Services, text: str, topic: str
) -> None:
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and reply.changed, reply.text
    assert _followed(services, CHANNEL) == [topic]


@pytest.mark.parametrize(
    "text", ["find 'til dawn", "find '90s music", "find it's 'real", "why 'p380c62ca5bf30379"]
)
def test_lookups_with_an_apostrophe_are_not_refused(services: Services, text: str) -> None:
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert "quote is not closed" not in reply.text, reply.text


def test_a_stray_apostrophe_on_a_topic_id_names_that_topic(services: Services) -> None:
    """As before the refusal (and on Discord, where `'offline-rl` typed into the topic
    option reaches the grammar unquoted): the catalog topic, by its name."""
    reply = handle("subscribe 'offline-rl", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and "Offline RL (`offline-rl`)" in reply.text, reply.text
    rows = active_subscriptions(services.db(), CHANNEL)
    assert [row["topic_id"] for row in rows] == ["offline-rl"]


def test_me_reads_apostrophes_as_the_channel_command_does(services: Services) -> None:
    for text in ("subscribe --me '90s and '00s hip hop", "subscribe '90s and '00s  jazz --me"):
        reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
        assert not reply.error, reply.text
    assert _followed(services, ALICE) == ["'90s and '00s hip hop", "'90s and '00s jazz"]
    assert not active_subscriptions(services.db(), CHANNEL)


def test_a_double_quote_left_open_is_still_refused(services: Services) -> None:
    for text in (
        "subscribe 'til \"dawn",
        'subscribe --me "diffusion policy',
        "subscribe «diffusion",
    ):
        reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
        assert reply.error and reply.text.startswith("A quote is not closed"), reply.text
        assert 'close it with `"`' in reply.text
    _untouched(services)


# --- Discord: a value typed into an option is text, its quotes too ----------------------------


@pytest.mark.parametrize(
    ("typed", "topic"),
    [
        # Quoted as the "put it in quotes" hint asks, or as a phone's keyboard quotes: the
        # smart pair is not refused ("A quote is not closed"), the plain one does not follow
        # "'diffusion policy'" (the adapter's own quotes around the user's, made `'`).
        ("“diffusion policy”", "diffusion policy"),
        ('"diffusion policy"', "diffusion policy"),
        ("“'90s”", "'90s"),
        ("Don’t “stop” now", "Don't 'stop' now"),
        ("'til dawn", "'til dawn"),
    ],
)
async def test_discord_a_topic_option_with_quotes_is_followed_as_typed(
    bot: Any, fake_discord: Any, typed: str, topic: str
) -> None:
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": typed}, permissions=MANAGE_CHANNELS),
    )
    [callback] = fake_discord.callbacks()
    assert "subscribed this channel to" in callback["data"]["content"], callback
    rows = active_subscriptions(open_db(bot.services.db_path), DISCORD_CHANNEL)
    assert [row["custom_text"] for row in rows] == [topic]


# --- `--me` typed against a quote ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'subscribe --me"diffusion policy"',
        'subscribe "diffusion policy"--me',
        "subscribe —me“diffusion policy”",  # autocorrect's dash and quotes
        "subscribe 'diffusion policy'--me",
    ],
)
def test_me_against_a_quote_is_the_flag(services: Services, text: str) -> None:
    """Without the space the word was no flag: the channel followed the free text
    `--me"diffusion policy"` (or "diffusion policy--me") instead of Alice's digest."""
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and reply.ephemeral, reply.text
    assert _followed(services, ALICE) == ["diffusion policy"]
    assert not active_subscriptions(services.db(), CHANNEL)


def test_me_against_an_unclosed_quote_is_refused(services: Services) -> None:
    reply = handle(
        'subscribe --me"diffusion policy', services.context(CHANNEL, "@alice", ALICE_KEY)
    )
    assert reply.error and reply.text.startswith("A quote is not closed"), reply.text
    _untouched(services)


def test_me_inside_quotes_stays_text(services: Services) -> None:
    reply = handle('subscribe "robots --me"', services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error, reply.text
    assert _followed(services, CHANNEL) == ["robots --me"]


# --- quotes of other keyboards ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "subscribe ‚diffusion policy‘",
        "subscribe ‹diffusion policy›",
        "subscribe ＂diffusion policy＂",
    ],
)
def test_german_single_guillemet_and_full_width_quotes_pair(services: Services, text: str) -> None:
    """They were text: the channel followed "‚diffusion policy'" (with its marks)."""
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error, reply.text
    assert _followed(services, CHANNEL) == ["diffusion policy"]


def test_a_full_width_quote_left_open_is_refused(services: Services) -> None:
    reply = handle("subscribe ＂diffusion policy", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert reply.error and reply.text.startswith("A quote is not closed"), reply.text
    _untouched(services)


# --- quotes around nothing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        ('find " "', "`find` needs query"),
        ("find ‘ ’", "`find` needs query"),
        ('unsubscribe " "', "`unsubscribe` needs topic"),
        ('subscribe "  "', "`subscribe` needs topic"),
    ],
)
def test_quotes_around_only_spaces_are_no_text(services: Services, text: str, needs: str) -> None:
    """They were an empty text: `find " "` answered 'No papers match “”', `unsubscribe " "`
    'This channel does not follow ``' (an empty code span in Slack)."""
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert reply.error and reply.text.startswith(needs), reply.text
    _untouched(services)


# --- the "put it in quotes" hint reads back --------------------------------------------------


@pytest.mark.parametrize(("typed", "topic"), [("vinyl", "vinyl"), ('12"', '12"')])
def test_the_free_text_hint_is_a_command_that_works(
    services: Services, typed: str, topic: str
) -> None:
    """For `subscribe 12"` the hint was `/papers subscribe "12""`, refused as typed
    ("A quote is not closed")."""
    unknown = handle(f"subscribe {typed}", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert unknown.error and unknown.text.startswith("I don't know the topic"), unknown.text
    [hint] = [line for line in unknown.lines if "put it in quotes" in line]
    suggested = hint.split("`")[1]
    reply = handle(suggested, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error, (suggested, reply.text)
    assert _followed(services, CHANNEL) == [topic]


# --- find: any text is a query ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ['find "Attention Is All You Need', 'find The "Bitter Lesson', "find “offline rl"]
)
def test_find_searches_a_text_with_a_quote_left_open(services: Services, text: str) -> None:
    """A title pasted in part is real text, and a search stores nothing: there is no guess
    to refuse (it was "A quote is not closed"). Commands that change something still
    refuse it (tests/digests/commands/test_input.py)."""
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and "quote is not closed" not in reply.text, reply.text
    _untouched(services)


async def test_discord_a_topic_option_ending_in_me_is_the_value_not_the_flag(
    bot: Any, fake_discord: Any
) -> None:
    """`robots'--me` typed into `topic` reached the grammar unquoted, which reads `--me`
    against a quote as the flag: Alice's own digest would follow "robots'"."""
    await dispatch(
        bot,
        fake_discord,
        interaction("subscribe", {"topic": "robots'--me"}, permissions=MANAGE_CHANNELS),
    )
    [callback] = fake_discord.callbacks()
    assert "subscribed this channel to" in callback["data"]["content"], callback
    rows = active_subscriptions(open_db(bot.services.db_path), DISCORD_CHANNEL)
    assert [row["custom_text"] for row in rows] == ["robots'--me"]


# --- quote finding stays linear ----------------------------------------------------------------


def _quotes_by_scanning(text: str) -> tuple[list[tuple[int, int]], str | None]:
    """`grammar._quotes` by a plain scan from each opening quote (quadratic, but plainly right)."""
    closed: list[tuple[int, int]] = []
    at = 0
    while at < len(text):
        if text[at] in "\"'" and (at == 0 or not text[at - 1].isalnum()):
            end = _closing(text, at)
            if end is not None:
                closed.append((at, end))
                at = end + 1
                continue
            if text[at] == '"':
                return closed, '"'
        at += 1
    return closed, None


def test_quotes_found_by_lookup_match_the_scan() -> None:
    """`_quotes` looks closing quotes up instead of scanning: same answers on every short
    text of these characters."""
    alphabet = "a '\"-"
    texts = [""]
    for _ in range(7):
        texts = [text + char for text in texts for char in alphabet] + texts[:1]
    for text in set(texts):
        assert _quotes(text) == _quotes_by_scanning(text), text
