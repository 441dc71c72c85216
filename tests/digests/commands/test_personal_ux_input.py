"""Personal digests: `--me` as people type it (`—me` from autocorrect, `--ME`, twice,
before the verb or between arguments) is the flag, never part of a free text nor a
Discord option's value; `backlog`, `feedback` and `why` take it; a bad schedule stores
nothing.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.discordbot.client import PaperboyClient
from bot.services import Services
from db import feedback as feedback_store
from db.channels import active_subscriptions, get_channel
from digests.commands import handle
from digests.commands.grammar import parse
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import MANAGE_CHANNELS, dispatch, interaction
from tests.fakes.personal import DISCORD_ME, post, with_me
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import make_services, start_http

ALICE = "slack:T0001/@U0001"
ALICE_KEY = "slack:T0001/U0001"
CHANNEL = "slack:T0001/C0001"


@pytest.fixture
def services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> Services:
    """Slack on the fake; only admins may change a channel (U0001 is none)."""
    return make_services(
        tmp_path,
        seed_paths,
        catalog,
        fake_slack,
        stored_at=NOW - timedelta(days=30),
        PAPERBOY_SLACK_MANAGERS="admins",
    )


def _topics(services: Services, channel: str) -> list[str]:
    return [str(row["topic_id"]) for row in active_subscriptions(services.db(), channel)]


def _texts(services: Services, channel: str) -> list[Any]:
    return [row["custom_text"] for row in active_subscriptions(services.db(), channel)]


# --- `--me` as typed -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("subscribe offline-rl —me", "offline-rl"),  # em dash: autocorrect's `--`
        ("subscribe —me offline-rl", "offline-rl"),
        ("subscribe offline-rl –me", "offline-rl"),  # en dash
        ("subscribe offline-rl --ME", "offline-rl"),
        ("subscribe --me offline-rl --me", "offline-rl"),  # twice
        ("--me subscribe offline-rl", "offline-rl"),  # before the verb
        ("/papers  —Me   subscribe   offline-rl", "offline-rl"),
    ],
)
def test_me_as_people_type_it_is_the_flag(text: str, topic: str) -> None:
    command = parse(text)
    assert command.me and command.verb.name == "subscribe"
    assert command.args == {"topic": topic}, text


def test_me_between_arguments_is_the_flag_and_inside_quotes_is_text() -> None:
    middle = parse("subscribe diffusion --me policy")
    assert middle.me and middle.args == {"topic": "diffusion policy"}
    timed = parse("schedule monday --me 09:00")
    assert timed.me and timed.args == {"weekday": "monday", "time": "09:00"}
    quoted = parse('subscribe "diffusion --me policy"')
    assert not quoted.me and quoted.args == {"topic": "diffusion --me policy"}
    assert not parse('subscribe "—me"').me
    # words that only end in "me" are words
    assert not parse("subscribe self-me").me and not parse("subscribe meme").me


async def test_an_autocorrected_me_in_a_channel_changes_only_ones_own_digest(
    services: Services, fake_slack: FakeSlack
) -> None:
    """U0001 is no admin: `—me` is not read as a channel change and refused (after asking
    Slack who they are); nor is a manager's the channel's, told to everyone."""
    http = await start_http(services, fake_slack)
    try:
        mine = await post(http, fake_slack, "subscribe offline-rl —me")
        middle = await post(http, fake_slack, "subscribe diffusion --me policy")
        timed = await post(http, fake_slack, "schedule daily —me 07:30 UTC")
        services.settings = dataclasses.replace(services.settings, slack_managers="anyone")
        managers = await post(http, fake_slack, "subscribe rlhf —me")
    finally:
        await http.close()
    for answer in (mine, middle, timed, managers):
        assert answer["response_type"] == "ephemeral", answer
        assert not answer["text"].startswith("Sorry"), answer["text"]
    assert mine["text"].startswith("You now follow Offline RL"), mine["text"]
    assert managers["text"].startswith("You now follow RLHF"), managers["text"]
    assert timed["text"].startswith("Your personal digest now comes daily"), timed["text"]
    topics = _topics(services, ALICE)
    assert topics[0] == "offline-rl" and topics[2] == "rlhf" and len(topics) == 3
    assert _texts(services, ALICE) == [None, "diffusion policy", None]
    assert get_channel(services.db(), CHANNEL) is None  # the channel: untouched
    assert not [call for call in fake_slack.calls if call.method == "users.info"]


def test_an_autocorrected_me_on_a_verb_without_it_is_refused(services: Services) -> None:
    """`sources` has no `--me`: with `—me` it says so, rather than reading the flag as an
    argument ("takes no arguments")."""
    reply = handle("sources —me", services.context(CHANNEL, "@alice", ALICE_KEY))
    assert reply.error and reply.text.startswith("`sources` has no --me"), reply.text


# --- Discord: an option's value is never the flag ----------------------------------------


@pytest.mark.parametrize("value", ["--me", "—me"])
async def test_discord_an_option_typed_as_me_is_its_value_not_the_flag(
    bot: PaperboyClient, fake_discord: FakeDiscord, value: str
) -> None:
    """A manager who types `--me` into `schedule`'s timezone (the `me` option is false)
    had the text `schedule monday 09:00 --me` run: their own digest was rescheduled,
    instead of "not a timezone"."""
    await dispatch(
        bot,
        fake_discord,
        interaction(
            "schedule",
            {"weekday": "monday", "time": "09:00", "timezone": value},
            permissions=MANAGE_CHANNELS,
        ),
    )
    answer = json.dumps(fake_discord.callbacks()[-1]["data"], ensure_ascii=False)
    assert "timezone" in answer.lower() and "Your personal digest" not in answer, answer
    assert get_channel(bot.services.db(), DISCORD_ME) is None


# --- the DM: a command with a pasted invisible character ---------------------------------


async def test_in_the_dm_a_pasted_zero_width_space_still_means_ones_own_digest(
    services: Services, fake_slack: FakeSlack
) -> None:
    """`handle` drops invisible characters before parsing, and `as_personal` must too:
    otherwise `li​st` (a zero-width space inside) gets no `--me` and runs as the channel's
    `list` on the personal digest, which says "This channel follows 0 topics"."""
    http = await start_http(services, fake_slack)
    try:
        await post(http, fake_slack, "subscribe --me robotics")
        listed = await post(http, fake_slack, "li\u200bst", channel="D0000DM01")
    finally:
        await http.close()
    assert listed["text"].startswith("Your personal digest follows 1 topic"), listed["text"]
    assert "channel" not in json.dumps(listed).lower()


# --- backlog and feedback take --me ------------------------------------------------------


def _vote(services: Services, channel: str, paper: str, value: int) -> None:
    feedback_store.record_vote(
        services.db(), channel, "offline-rl", paper, "U0001", value, None, "2026-11-30T08:00"
    )


def _votes(services: Services, channel: str) -> int:
    return len(feedback_store.channel_feedback(services.db(), channel))


async def test_backlog_and_feedback_me_from_a_channel_are_ones_own(
    services: Services, fake_slack: FakeSlack
) -> None:
    """U0001 is no admin. `backlog on --me` and `feedback reset --me` take `--me` (not "has
    no --me"): from a channel, anyone can turn their own backlog on and see or clear their
    own feedback, not only in the DM with the app."""
    papers = [str(row["id"]) for row in services.db().query("select id from papers limit 2")]
    http = await start_http(services, fake_slack)
    try:
        await post(http, fake_slack, "subscribe --me offline-rl")
        for paper in papers:
            _vote(services, ALICE, paper, 1)
            _vote(services, CHANNEL, paper, -1)
        backlog = await post(http, fake_slack, "backlog on --me")
        shown = await post(http, fake_slack, "feedback --me")
        channels = await post(http, fake_slack, "feedback reset offline-rl")  # not an admin
        reset = await post(http, fake_slack, "feedback reset --me offline-rl")
        status = await post(http, fake_slack, "status --me")
    finally:
        await http.close()
    for answer in (backlog, shown, reset, status):
        assert answer["response_type"] == "ephemeral", answer
    assert backlog["text"].startswith("You turned the backlog on: older papers never sent to you")
    assert (get_channel(services.db(), ALICE) or {}).get("backlog")
    assert get_channel(services.db(), CHANNEL) is None  # the channel's backlog: untouched
    said = json.dumps(shown, ensure_ascii=False)
    assert shown["text"] == "Your feedback, on 1 topic:", shown["text"]
    assert (
        "👍 2 · 👎 0" in said
        and "`/papers feedback reset --me &lt;topic&gt;` clears a topic's." in said
    )
    assert channels["text"].startswith("Sorry, only workspace admins")
    assert reset["text"].startswith("You cleared your feedback on Offline RL (2 votes)")
    assert _votes(services, ALICE) == 0 and _votes(services, CHANNEL) == 2
    assert "`/papers backlog --me off` to stop" in json.dumps(status, ensure_ascii=False)


async def test_discord_backlog_and_feedback_take_me_without_manage_channels(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """Discord has no DM commands: without `me` on backlog and feedback, a Discord user
    could never turn their own backlog on nor clear their own feedback."""
    db = bot.services.db()
    paper = str(next(iter(db.query("select id from papers limit 1")))["id"])
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "offline-rl"})))
    feedback_store.record_vote(db, DISCORD_ME, "offline-rl", paper, "u", 1, None, "2026")
    await dispatch(bot, fake_discord, interaction("backlog", {"state": "on"}))
    assert "Manage Channels" in fake_discord.callbacks()[-1]["data"]["content"]
    await dispatch(bot, fake_discord, with_me(interaction("backlog", {"state": "on"})))
    backlog = fake_discord.callbacks()[-1]["data"]
    assert backlog["flags"] & 64 and "You turned the backlog on" in json.dumps(backlog)
    assert (get_channel(db, DISCORD_ME) or {}).get("backlog")
    reset = {"action": "reset", "topic": "offline-rl"}
    await dispatch(bot, fake_discord, interaction("feedback", reset))
    assert "Manage Channels" in fake_discord.callbacks()[-1]["data"]["content"]
    assert len(feedback_store.channel_feedback(db, DISCORD_ME)) == 1
    await dispatch(bot, fake_discord, with_me(interaction("feedback", reset)))
    cleared = fake_discord.callbacks()[-1]["data"]
    assert cleared["flags"] & 64 and "You cleared your feedback" in json.dumps(cleared)
    assert feedback_store.channel_feedback(db, DISCORD_ME) == []
    # a topic without `action: reset`: how to reset one's own, no Manage Channels
    await dispatch(bot, fake_discord, with_me(interaction("feedback", {"topic": "rlhf"})))
    alone = fake_discord.callbacks()[-1]["data"]["content"]
    assert "shows all of your own digest's feedback" in alone and "Manage" not in alone, alone


def test_help_says_backlog_and_feedback_take_me(services: Services) -> None:
    def said(text: str, channel: str) -> str:
        reply = handle(text, services.context(channel, "@alice", ALICE_KEY))
        return "\n".join([reply.text, *reply.lines])

    feedback = said("help feedback", CHANNEL)
    assert "`/papers feedback [--me] [reset] [topic]`" in feedback
    assert "Without `--me`, `feedback reset` changes the channel's settings" in feedback
    backlog = said("help backlog", CHANNEL)
    assert "`/papers backlog [--me] <on|off>`" in backlog
    assert "Without `--me`, this changes the channel's settings" in backlog
    mine = said("help backlog", ALICE)  # the DM: no --me, no channel
    assert "fill your personal digest's empty slots" in mine and "channel" not in mine


# --- why takes --me ------------------------------------------------------------------------


async def test_why_me_explains_a_paper_for_ones_own_digest(
    services: Services, fake_slack: FakeSlack
) -> None:
    """`why` had no --me: asked from a channel about a paper of one's personal digest,
    it explained the channel's topics ("This channel follows no topics")."""
    paper = str(next(iter(services.db().query("select id from papers limit 1")))["id"])
    http = await start_http(services, fake_slack)
    try:
        await post(http, fake_slack, "subscribe --me robotics")
        mine = await post(http, fake_slack, f"why --me {paper}")
        channels = await post(http, fake_slack, f"why {paper}")
    finally:
        await http.close()
    said = json.dumps(mine, ensure_ascii=False)
    assert mine["response_type"] == "ephemeral"
    assert "It has not been in your digests." in said and "your topics" in said, said[:400]
    assert "channel" not in said.lower()
    assert "This channel follows no topics" in json.dumps(channels, ensure_ascii=False)


async def test_discord_why_takes_me(bot: PaperboyClient, fake_discord: FakeDiscord) -> None:
    paper = str(next(iter(bot.services.db().query("select id from papers limit 1")))["id"])
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    await dispatch(bot, fake_discord, with_me(interaction("why", {"id": paper})))
    answer = fake_discord.callbacks()[-1]["data"]
    said = json.dumps(answer, ensure_ascii=False)
    assert answer["flags"] & 64 and "It has not been in your digests." in said, said[:400]


# --- a bad schedule stores nothing ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "channel"),
    [
        ("schedule monday 09:00 Mars/Base", CHANNEL),
        ("schedule monday 25:00", CHANNEL),
        ("schedule someday 09:00", CHANNEL),
        ("schedule --me monday 09:00 Mars/Base", ALICE),
        ("schedule --me daily 7:61pm", ALICE),
    ],
)
def test_a_refused_schedule_makes_no_channel_row(
    services: Services, text: str, channel: str
) -> None:
    """`schedule` made the channel's (or the personal digest's) row, with the default
    schedule, before it read its arguments: a refused command left a stored digest
    behind (seen through Discord: a timezone typed as `--me`)."""
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert reply.error, reply.text
    assert get_channel(services.db(), channel) is None


@pytest.mark.parametrize(
    ("text", "channel"),
    [
        ("backlog off", CHANNEL),
        ("resume", CHANNEL),
        ("backlog --me off", ALICE),
        ("resume --me", ALICE),
    ],
)
def test_a_change_that_changes_nothing_makes_no_row(
    services: Services, text: str, channel: str
) -> None:
    """`backlog off` and `resume` where nothing is stored ("already off", "not paused")
    made the channel's row (a stored channel with the default schedule) all the same."""
    reply = handle(text, services.context(CHANNEL, "@alice", ALICE_KEY))
    assert not reply.error and not reply.changed, reply.text
    assert "already off" in reply.text or "not paused" in reply.text, reply.text
    assert get_channel(services.db(), channel) is None
