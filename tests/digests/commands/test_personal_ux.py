"""Personal digests, what their users see.

- In a Slack direct message that is not with the app (two people's DM, or a group DM),
  a command acts on the asker's own digest, and its answer is theirs alone.
- `status` of a personal digest names it in words; `status --me` and `digest --me` (a
  preview of one's own next digest) work from a channel.
- `help` typed in the DM with the app speaks of the personal digest.
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
from db.channels import get_channel, set_paused
from db.digests import last_digest
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import dispatch, interaction
from tests.fakes.personal import DISCORD_ME, topics_of, with_me
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import make_services, start_http
from tests.fakes.slash import slash
from tests.fakes.waiting import eventually

ALICE = "slack:T0001/@U0001"
BOB = "slack:T0001/@U0002"
CHANNEL = "slack:T0001/C0001"
IM = "D0000IM02"  # Alice and Bob's direct message: the app is no member
MPIM = "G0000MP03"  # a group DM (Slack: channel_name `mpdm-…`)
AT = "2026-11-30T08:00:00+00:00"


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
        PAPERBOY_FIRST_DIGEST_DAYS="60",  # the papers, stored 30 days ago, are new
    )


def _vote(services: Services, channel: str, paper_id: str, value: int) -> None:
    feedback_store.record_vote(
        services.db(), channel, "offline-rl", paper_id, "U0001", value, None, AT
    )


# --- 4. answers on one's own digest are private, wherever they are typed ----------------


async def test_in_a_dm_between_two_people_answers_on_ones_own_digest_are_private(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        followed = await slash(
            http, fake_slack, "subscribe offline-rl", channel=IM, name="directmessage"
        )
        assert followed["response_type"] == "ephemeral"
        assert "You now follow Offline RL" in followed["text"]
        backlog = await slash(http, fake_slack, "backlog on", channel=IM, name="directmessage")
        assert backlog["response_type"] == "ephemeral", backlog
        assert backlog["text"].startswith("You turned the backlog on")
        papers = [str(row["id"]) for row in services.db().query("select id from papers limit 2")]
        _vote(services, ALICE, papers[0], 1)
        _vote(services, ALICE, papers[1], -1)
        reset = await slash(
            http, fake_slack, "feedback reset offline-rl", channel=IM, name="directmessage"
        )
        assert reset["response_type"] == "ephemeral", reset
        assert "You cleared your feedback on Offline RL (2 votes)" in reset["text"]
    finally:
        await http.close()
    assert topics_of(services, ALICE) == ["offline-rl"]
    assert (get_channel(services.db(), ALICE) or {}).get("backlog")
    assert get_channel(services.db(), f"slack:T0001/{IM}") is None  # never a channel


async def test_a_group_dm_acts_on_ones_own_digest_privately(
    services: Services, fake_slack: FakeSlack
) -> None:
    """A group DM is no channel: `backlog on` there asks for no admin (U0001 is not
    refused), and an admin's subscribe there makes no digest the app cannot post."""
    http = await start_http(services, fake_slack)
    try:
        mpdm = "mpdm-alice--bob--carol-1"
        backlog = await slash(http, fake_slack, "backlog on", channel=MPIM, name=mpdm)
        assert backlog["response_type"] == "ephemeral", backlog
        assert backlog["text"].startswith("You turned the backlog on"), backlog["text"]
        mine = await slash(http, fake_slack, "subscribe rlhf", channel=MPIM, name=mpdm)
        assert mine["response_type"] == "ephemeral" and "You now follow" in mine["text"]
        bobs = await slash(
            http, fake_slack, "subscribe --me robotics", channel=MPIM, name=mpdm, user="U0002"
        )
        assert bobs["response_type"] == "ephemeral"
        # no admin check for one's own digest
        assert not [call for call in fake_slack.calls if call.method == "users.info"]
    finally:
        await http.close()
    assert topics_of(services, ALICE) == ["rlhf"] and topics_of(services, BOB) == ["robotics"]
    assert get_channel(services.db(), f"slack:T0001/{MPIM}") is None


async def test_a_channels_change_is_still_told_to_the_channel(
    services: Services, fake_slack: FakeSlack
) -> None:
    services.settings = dataclasses.replace(services.settings, slack_managers="anyone")
    http = await start_http(services, fake_slack)
    try:
        answer = await slash(http, fake_slack, "backlog on", channel="C0001", name="papers")
    finally:
        await http.close()
    assert answer["response_type"] == "in_channel"
    assert (get_channel(services.db(), CHANNEL) or {}).get("backlog")


# --- 1. status of a personal digest, in words; `status --me` from a channel --------------


def _said(answer: dict[str, Any]) -> str:
    """Everything a Slack answer shows, as one text."""
    return json.dumps(answer, ensure_ascii=False)


async def test_status_of_ones_own_digest_names_it_in_words(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        await slash(http, fake_slack, "subscribe --me robotics", channel="C0001", name="papers")
        set_paused(services.db(), ALICE, "Slack said messages_tab_disabled", AT)
        answers = [
            await slash(http, fake_slack, "status --me", channel="C0001", name="papers"),
            await slash(http, fake_slack, "status", channel="D0000DM01", name="directmessage"),
            await slash(http, fake_slack, "status", channel=IM, name="directmessage"),
        ]
        channel = await slash(http, fake_slack, "status", channel="C0001", name="papers")
    finally:
        await http.close()
    for answer in answers:
        said = _said(answer)
        assert answer["response_type"] == "ephemeral"
        assert "Status of your personal digest, delivered to you by DM:" in said, said[:300]
        assert "@U0001" not in said and "slack:T0001" not in said
        assert "Topics: Robotics" in said
        assert "messages_tab_disabled" in said and "resume --me" in said
        # in a channel, `backlog on` would change the channel's backlog: the hint has --me
        assert "Backlog: off (only new papers; `/papers backlog --me on`" in said
        assert "backlog on" not in said
    # the channel's own status is unchanged: its reference, its backlog hint, not paused
    said = _said(channel)
    assert "Status of slack:T0001/C0001:" in said and "backlog on" in said
    assert "Topics: none yet" in said and "Delivery: active." in said


def test_status_me_without_a_dm_says_so(services: Services) -> None:
    from digests.commands import handle

    reply = handle("status --me", services.context("local:lab", "me", "local:me"))
    assert reply.error and "direct messages" in reply.text


# --- 3. `digest --me preview`: one's own next digest, from anywhere ----------------------


async def test_digest_me_previews_ones_own_digest_only_to_them(
    services: Services, fake_slack: FakeSlack
) -> None:
    """The answer's first message is the acknowledgement; the digest's papers follow
    through the response_url, each only for the asker."""
    http = await start_http(services, fake_slack)
    try:
        empty = await slash(http, fake_slack, "digest --me", channel="C0001", name="papers")
        await slash(http, fake_slack, "subscribe --me robotics", channel="C0001", name="papers")
        previews = []
        for text in ("digest --me preview", "digest preview --me"):  # the flag first or last
            before = len(fake_slack.responses)
            ack = await slash(http, fake_slack, text, channel="C0001", name="papers")
            assert await eventually(lambda: len(fake_slack.responses) > before)  # noqa: B023
            previews.append([ack, *fake_slack.responses[before:]])
        channels = await slash(http, fake_slack, "digest preview", channel="C0001", name="papers")
    finally:
        await http.close()
    assert empty["response_type"] == "ephemeral"
    assert "Your personal digest follows no topics yet" in _said(empty)
    first, second = previews
    assert [_said(message) for message in first] == [_said(message) for message in second]
    assert {message["response_type"] for message in first} == {"ephemeral"}
    assert "a preview; nothing is marked as sent" in first[0]["text"]
    assert "new papers for Robotics" in _said(first[1])
    assert "This channel follows no topics yet" in _said(channels)
    # a preview: nothing recorded, so the real digest still has every paper
    assert last_digest(services.db(), ALICE) is None


# --- Discord: `me` on status and digest ----------------------------------------------------


async def test_discord_status_and_digest_take_me(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    await dispatch(bot, fake_discord, with_me(interaction("subscribe", {"topic": "robotics"})))
    await dispatch(bot, fake_discord, with_me(interaction("status")))
    status = fake_discord.callbacks()[-1]["data"]
    assert status["flags"] & 64  # ephemeral
    said = json.dumps(status, ensure_ascii=False)
    assert "Status of your personal digest, delivered to you by DM" in said
    assert DISCORD_ME not in said and "Topics: Robotics" in said
    await dispatch(bot, fake_discord, with_me(interaction("digest")))
    digest = fake_discord.callbacks()[-1]["data"]
    assert digest["flags"] & 64
    assert "nothing is marked as sent" in json.dumps(digest, ensure_ascii=False)
    assert last_digest(bot.services.db(), DISCORD_ME) is None


# --- 2. help in a DM speaks of the personal digest ------------------------------------------


async def test_help_in_a_dm_speaks_of_ones_own_digest(
    services: Services, fake_slack: FakeSlack
) -> None:
    texts = ("help", "help feedback", "help subscribe", "help status", "help frobnicate", "lsit")
    http = await start_http(services, fake_slack)
    try:
        answers = {
            text: await slash(http, fake_slack, text, channel="D0000DM01", name="directmessage")
            for text in texts
        }
        channel = await slash(http, fake_slack, "help", channel="C0001", name="papers")
        channel_one = await slash(
            http, fake_slack, "help subscribe", channel="C0001", name="papers"
        )
    finally:
        await http.close()
    for text, answer in answers.items():
        said = _said(answer)
        assert answer["response_type"] == "ephemeral"
        assert "channel" not in said.lower(), (text, said[:400])
        assert "--me" not in said, text  # every command there is about one's own digest
    assert "sends you a personal digest" in _said(answers["help"])
    assert "List the topics your personal digest can follow." in _said(answers["help"])
    assert "Show your 👍/👎 per topic" in _said(answers["help feedback"])
    assert "Here it acts on your personal digest; only you see the answer." in _said(
        answers["help subscribe"]
    )
    assert "Did you mean" in _said(answers["lsit"]) and "/papers list" in _said(answers["lsit"])
    # a channel's help is unchanged
    said = _said(channel)
    assert "for this channel's topics" in said and "subscribe [--me] &lt;topic&gt;" in said
    assert "List the topics this channel can subscribe to." in said
    assert "changes the channel's settings" in _said(channel_one)
