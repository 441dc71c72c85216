"""Review of Discord digest buttons (issue 13): hostile and concurrent clicks, each on the
real path (an INTERACTION_CREATE handed to discord.py's connection state, answered
through the local fake REST API)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bot.discordbot import buttons
from bot.discordbot.client import PaperboyClient
from digests.actions import VOTE_UP, custom_id
from tests.discord_helpers import dispatch
from tests.fakes.discord_api import FakeDiscord
from tests.test_discord_buttons import (
    ALICE,
    BOB,
    delivered,
    labels,
    paper_of,
    refused,
    stored,
    with_button,
)
from tests.waiting import eventually

CAROL = "500000000000000003"


def answered(fake: FakeDiscord, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The callbacks (acknowledgements) of one interaction, in order."""
    token = payload["token"]
    return [r.body for r in fake.requests if r.path.endswith(f"/{token}/callback")]


async def test_a_click_that_is_not_a_button_is_answered_and_changes_nothing(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """A component interaction whose type is not a button (a select menu, 3) with one of
    Paperboy's custom_ids: discord.py calls no DigestButton for it (it looks for a
    component of that type), so the fallback must answer it, or the user sees "This
    interaction failed"."""
    digest_id, message = await delivered(bot, fake_discord)
    up = custom_id(VOTE_UP, digest_id, paper_of(message))
    text = await refused(bot, fake_discord, message, up, component_type=3)
    assert "not one of Paperboy's" in text


async def test_clicks_waiting_on_a_busy_message_are_acknowledged_at_once(
    bot: PaperboyClient, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice's click is being applied; Bob's arrives (acknowledged at once, type 6, and
    waits its turn). Carol's arrives just as Alice's finishes, when the message's lock is
    free for a moment but Bob is next: she waited behind Bob's whole click before she was
    acknowledged at all (past Discord's 3 s when Bob's is slow: "This interaction
    failed"). Every click that finds another under way is acknowledged at once."""
    digest_id, message = await delivered(bot, fake_discord)
    up = custom_id(VOTE_UP, digest_id, paper_of(message))
    clicks = {user: fake_discord.click(message, up, user_id=user) for user in (ALICE, BOB, CAROL)}
    seen: dict[str, bool] = {}

    def acknowledged_while_applying(user: str) -> bool:
        """Wait (in the worker thread) until `user`'s click is acknowledged; False after 5 s."""
        end = time.monotonic() + 5
        while time.monotonic() < end:
            if answered(fake_discord, clicks[user]):
                return True
            time.sleep(0.01)
        return False

    real_apply, real_show = buttons.apply_action, buttons._show_counts

    def apply(*args: Any, **kwargs: Any) -> Any:
        if kwargs["user"] == ALICE:  # Bob clicks while Alice's is applied
            seen[BOB] = acknowledged_while_applying(BOB)
        elif kwargs["user"] == BOB:  # Carol clicked as Alice's ended
            seen[CAROL] = acknowledged_while_applying(CAROL)
        return real_apply(*args, **kwargs)

    async def show(interaction: Any, view: Any) -> None:
        await real_show(interaction, view)
        if interaction.user.id == int(ALICE):  # Carol's click comes in as Alice's ends
            bot._connection.parse_interaction_create(clicks[CAROL])  # type: ignore[arg-type]

    monkeypatch.setattr(buttons, "apply_action", apply)
    monkeypatch.setattr(buttons, "_show_counts", show)
    bot._connection.parse_interaction_create(clicks[ALICE])  # type: ignore[arg-type]
    assert await eventually(lambda: buttons._messages.get(int(message["id"])) is not None)
    bot._connection.parse_interaction_create(clicks[BOB])  # type: ignore[arg-type]
    assert await eventually(lambda: len(fake_discord.followups()) >= 3)  # 3 ephemeral lines
    assert seen == {BOB: True, CAROL: True}
    assert [answered(fake_discord, clicks[user])[0]["type"] for user in (BOB, CAROL)] == [6, 6]
    assert len(stored(bot)[0]) == 3  # each vote counted once
    assert labels(fake_discord.messages[message["id"]])[0] == "1. 👍 More like this · 3"


async def test_a_lost_answer_to_a_click_still_tells_the_clicker(
    bot: PaperboyClient, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    """The connection drops while Discord takes the message update (type 7): discord.py
    raises aiohttp's error, not an HTTPException, and retries nothing. The click went on
    with its ephemeral line (logged, one warning), instead of ending in a traceback in
    discord.py's log with the clicker told nothing; the vote is stored once."""
    digest_id, message = await delivered(bot, fake_discord)
    up = custom_id(VOTE_UP, digest_id, paper_of(message))
    fake_discord.drop("/callback")
    payload = fake_discord.click(message, up, user_id=ALICE)
    bot._connection.parse_interaction_create(payload)  # type: ignore[arg-type]
    assert await eventually(lambda: len(answered(fake_discord, payload)) >= 2)
    update, line = answered(fake_discord, payload)
    assert update["type"] == 7 and line["type"] == 4 and line["data"]["flags"] & 64
    assert "more papers like this" in line["data"]["content"]
    assert len(stored(bot)[0]) == 1
    assert "could not show the counts" in caplog.text
    assert "Traceback" not in caplog.text and "Ignoring exception" not in caplog.text


async def test_huge_digest_ids_and_another_guilds_digest_change_nothing(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """Custom_ids of Paperboy's shape on the clicked message (a forged message): the
    largest digest id the template takes (18 digits, within SQLite's integers), one digit
    more (not Paperboy's shape), and the right digest clicked from another server's channel
    of the same id."""
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)

    largest = custom_id(VOTE_UP, 10**18 - 1, paper)
    assert "not in Paperboy's records" in await refused(
        bot, fake_discord, with_button(message, largest), largest
    )
    longer = f"pb:up:{10**18}:{paper}"
    assert "not one of Paperboy's" in await refused(
        bot, fake_discord, with_button(message, longer), longer
    )
    up = custom_id(VOTE_UP, digest_id, paper)
    text = await refused(bot, fake_discord, message, up, guild_id="999999999999999999")
    assert text == "That button belongs to another channel's digest."


async def test_a_guild_click_without_member_data_is_refused_politely(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """An interaction in a server without `member` (Discord sends it there; discord.py
    then leaves `interaction.user` MISSING): the click raised AttributeError in discord.py's
    log and went unanswered ("This interaction failed"). Now an ephemeral line, nothing
    written; a DM click without `user` likewise."""
    digest_id, message = await delivered(bot, fake_discord)
    up = custom_id(VOTE_UP, digest_id, paper_of(message))
    payload = fake_discord.click(message, up, user_id=BOB)
    payload["user"] = payload.pop("member")["user"]  # not where discord.py reads it
    before = stored(bot)
    await dispatch(bot, fake_discord, payload)
    [answer] = answered(fake_discord, payload)
    assert answer["type"] == 4 and answer["data"]["flags"] & 64
    assert answer["data"]["content"] == buttons.NO_USER
    dm = fake_discord.click(message, up, user_id=BOB, dm=True)
    del dm["user"]
    await dispatch(bot, fake_discord, dm)
    assert answered(fake_discord, dm)[0]["data"]["content"] == buttons.NO_USER
    assert stored(bot) == before and fake_discord.edits == []


async def test_a_slow_click_whose_message_update_fails_still_counts_once_and_answers(
    bot: PaperboyClient, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    """apply_action slower than the budget (deferred, type 6) and then the message update
    refused (the message was deleted meanwhile: 404, Unknown Message): the vote stands,
    once, and the clicker still gets the ephemeral line; one warning, no traceback."""
    digest_id, message = await delivered(bot, fake_discord)
    bot.ack_budget = 0.0
    paper = paper_of(message)
    fake_discord.queue("/messages/@original", {"message": "Unknown Message", "code": 10008}, 404)
    payload = fake_discord.click(message, custom_id(VOTE_UP, digest_id, paper), user_id=ALICE)
    await dispatch(bot, fake_discord, payload, answers=2)
    [ack] = answered(fake_discord, payload)
    assert ack["type"] == 6
    [line] = [
        r.body
        for r in fake_discord.requests
        if r.method == "POST" and payload["token"] in r.path and "/webhooks/" in r.path
    ]
    assert line["flags"] & 64 and "more papers like this" in line["content"]
    assert len(stored(bot)[0]) == 1 and fake_discord.edits == []
    assert "could not show the counts" in caplog.text and "Traceback" not in caplog.text
