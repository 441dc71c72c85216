"""Digest buttons on Discord, each click on the real path: an INTERACTION_CREATE
of type 3 (MESSAGE_COMPONENT) handed to discord.py's connection state, as the gateway
would, and answered through the local fake REST API."""

from __future__ import annotations

import time
from typing import Any

import discord
import pytest

from bot.discordbot import buttons
from bot.discordbot.buttons import view_of
from bot.discordbot.client import PaperboyClient
from db import open_db
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, custom_id, user_key
from digests.digest import build_digest
from digests.failures import FAILURE
from digests.render import discord as discord_render
from digests.render import limits
from tests.conftest import NOW
from tests.fakes.digest import subscribe
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_buttons import (
    ALICE,
    BOB,
    EPHEMERAL,
    click,
    delivered,
    labels,
    paper_of,
    refused,
    stored,
)
from tests.fakes.discord_interactions import (
    CHANNEL,
    dispatch,
    interaction,
    logged_in,
)
from tests.fakes.waiting import eventually


async def test_a_digest_message_carries_one_row_per_item(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, _ = await delivered(bot, fake_discord)
    [sent] = fake_discord.channel_messages()
    assert limits.discord_problems(sent) == []
    rows = sent["components"]
    assert len(rows) == len(sent["embeds"]) >= 1
    for number, (row, embed) in enumerate(zip(rows, sent["embeds"], strict=True), start=1):
        paper = embed["footer"]["text"].removeprefix("id ")
        up, down, save = row["components"][:3]
        assert [up["custom_id"], down["custom_id"], save["custom_id"]] == [
            custom_id(action, digest_id, paper) for action in (VOTE_UP, VOTE_DOWN, SAVE)
        ]
        assert up["label"] == f"{number}. 👍 More like this" and embed["title"].startswith(
            f"{number}. "
        )
    assert fake_discord.messages[fake_discord.created[0]["id"]]["components"] == rows


async def test_a_vote_is_counted_shown_and_answered_ephemerally(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)
    callback, line = await click(
        bot, fake_discord, message, custom_id(VOTE_UP, digest_id, paper), user_id=ALICE
    )
    assert callback["type"] == 7  # the acknowledgement is the message update
    assert stored(bot) == ([(CHANNEL, "offline-rl", paper, ALICE, 1)], [])
    now = fake_discord.messages[message["id"]]
    assert labels(now) == ["1. 👍 More like this · 1", "👎 Less like this", "🔖 Save"]
    assert now["embeds"] == message["embeds"]  # only the buttons changed
    assert limits.discord_problems({"content": "x", "components": now["components"]}) == []
    assert line["flags"] & EPHEMERAL and "more papers like this for offline-rl" in line["content"]
    # Another member's vote adds to it.
    await click(bot, fake_discord, message, custom_id(VOTE_UP, digest_id, paper), user_id=BOB)
    assert labels(fake_discord.messages[message["id"]])[0] == "1. 👍 More like this · 2"


async def test_a_repeated_click_counts_once_and_the_other_vote_replaces_it(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)
    up, down = custom_id(VOTE_UP, digest_id, paper), custom_id(VOTE_DOWN, digest_id, paper)
    await click(bot, fake_discord, message, up, user_id=ALICE)
    _, again = await click(bot, fake_discord, message, up, user_id=ALICE)
    assert "Already counted" in again["content"] and again["flags"] & EPHEMERAL
    assert stored(bot)[0] == [(CHANNEL, "offline-rl", paper, ALICE, 1)]
    assert labels(fake_discord.messages[message["id"]])[:2] == [
        "1. 👍 More like this · 1",
        "👎 Less like this",
    ]
    await click(bot, fake_discord, message, down, user_id=ALICE)
    assert stored(bot)[0] == [(CHANNEL, "offline-rl", paper, ALICE, -1)]
    assert labels(fake_discord.messages[message["id"]])[:2] == [
        "1. 👍 More like this",
        "👎 Less like this · 1",
    ]


async def test_save_goes_to_the_clickers_own_list(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)
    _, line = await click(
        bot, fake_discord, message, custom_id(SAVE, digest_id, paper), user_id=ALICE
    )
    assert line["flags"] & EPHEMERAL and "Saved" in line["content"]
    assert stored(bot) == ([], [(user_key("discord", None, ALICE), paper, CHANNEL)])


def with_button(message: dict[str, Any], custom: str) -> dict[str, Any]:
    """The message with its first button's custom_id replaced (a forged message)."""
    rows = [dict(row, components=list(row["components"])) for row in message["components"]]
    rows[0]["components"][0] = {**rows[0]["components"][0], "custom_id": custom}
    return {**message, "components": rows}


async def test_forged_and_foreign_clicks_change_nothing(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)

    # A well-formed id of a digest that does not exist, or of a paper not in this one.
    missing = custom_id(VOTE_UP, digest_id + 1000, paper)
    assert "not in Paperboy's records" in await refused(
        bot, fake_discord, with_button(message, missing), missing
    )
    stranger = custom_id(VOTE_UP, digest_id, "p0000000000000000")
    assert "not in this digest" in await refused(
        bot, fake_discord, with_button(message, stranger), stranger
    )
    # The right id, clicked in another channel (the message moved, or a forged payload).
    real = custom_id(SAVE, digest_id, paper)
    text = await refused(bot, fake_discord, message, real, channel_id="333333333333333333")
    assert text == "That button belongs to another channel's digest."
    # Ids of no known shape, or not on the message clicked: discord.py calls no handler.
    for custom in ("pb:zap:1:p1", "pb:up:1:" + "p" * 200, "someone-elses-button", "pb:up:0:p1"):
        text = await refused(bot, fake_discord, with_button(message, custom), custom)
        assert "not one of Paperboy's" in text
    assert "not one of Paperboy's" in await refused(bot, fake_discord, message, missing)


async def test_a_slow_click_is_deferred_then_the_message_edited(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """Past the acknowledgement budget the click is deferred (type 6) within Discord's 3 s,
    then the message is edited through the interaction's webhook."""
    digest_id, message = await delivered(bot, fake_discord)
    bot.ack_budget = 0.0
    paper = paper_of(message)
    callback, line = await click(
        bot, fake_discord, message, custom_id(VOTE_DOWN, digest_id, paper), user_id=ALICE
    )
    assert callback["type"] == 6
    assert fake_discord.made("PATCH", "/messages/@original")
    assert labels(fake_discord.messages[message["id"]])[1] == "👎 Less like this · 1"
    assert line["flags"] & EPHEMERAL and "fewer papers like this" in line["content"]
    assert stored(bot)[0] == [(CHANNEL, "offline-rl", paper, ALICE, -1)]


async def test_a_click_on_an_old_message_works_after_a_restart(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    digest_id, message = await delivered(bot, fake_discord)
    await bot.close()
    fresh = await logged_in(bot.services, fake_discord)  # a new process: no view in memory
    try:
        paper = paper_of(message, 0)
        callback, _ = await click(
            fresh, fake_discord, message, custom_id(VOTE_UP, digest_id, paper), user_id=BOB
        )
        assert callback["type"] == 7
        assert stored(fresh)[0] == [(CHANNEL, "offline-rl", paper, BOB, 1)]
    finally:
        await fresh.close()


async def test_a_click_in_a_dm_is_on_the_clickers_personal_digest(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """A personal digest arrives in the user's DM with the bot; a click there has
    no server: it belongs to the clicker's own digest, `discord:@USER`."""
    db = open_db(bot.services.db_path)
    personal = f"discord:@{ALICE}"
    subscribe(db, bot.services.settings, "offline-rl", channel=personal)
    digest = build_digest(
        db, personal, NOW, catalog=bot.services.catalog, settings=bot.services.settings
    )
    assert digest.digest_id is not None
    [first, *_] = discord_render.digest_messages(digest)
    dm = bot.get_partial_messageable(int("600000000000000000"), type=discord.ChannelType.private)
    sent = await dm.send(first.content, embeds=[discord.Embed.from_dict(e) for e in first.embeds],
                         view=view_of(first.components))  # fmt: skip
    message = fake_discord.messages[str(sent.id)]
    paper = paper_of(message)
    _, line = await click(
        bot, fake_discord, message, custom_id(VOTE_UP, digest.digest_id, paper),
        user_id=ALICE, dm=True,
    )  # fmt: skip
    assert "more papers like this" in line["content"]
    assert stored(bot)[0] == [(personal, "offline-rl", paper, ALICE, 1)]
    assert labels(fake_discord.messages[message["id"]])[0] == "1. 👍 More like this · 1"
    # Someone else's DM (or a channel digest's button in a DM) is not theirs to vote on.
    bob = custom_id(VOTE_UP, digest.digest_id, paper)
    text = await refused(bot, fake_discord, message, bob, user_id=BOB, dm=True)
    assert text == "That button belongs to another channel's digest."


async def test_a_failure_while_applying_a_click_is_a_polite_line_not_a_traceback(
    bot: PaperboyClient, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest_id, message = await delivered(bot, fake_discord)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("database is locked")

    monkeypatch.setattr(buttons, "apply_action", broken)
    text = await refused(bot, fake_discord, message, custom_id(SAVE, digest_id, paper_of(message)))
    assert text == FAILURE and "database is locked" not in text


async def test_saved_then_exported_as_a_bibtex_attachment(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """🔖 on a digest item, then `/papers saved export`: the BibTeX arrives as a file on
    the answer only the clicker sees (the real command, the real multipart request)."""
    digest_id, message = await delivered(bot, fake_discord)
    paper = paper_of(message)
    await click(bot, fake_discord, message, custom_id(SAVE, digest_id, paper))
    before = len(fake_discord.callbacks())
    await dispatch(bot, fake_discord, interaction("saved", {"action": "export"}))
    [answer] = fake_discord.callbacks()[before:]
    assert answer["data"]["flags"] & EPHEMERAL
    [bib] = answer["files"]
    assert bib["filename"].endswith(".bib") and bib["content"].lstrip().startswith("@")
    title = (
        open_db(bot.services.db_path)
        .execute("select title from papers where id = ?", [paper])
        .fetchone()[0]
    )
    assert title.split()[0] in bib["content"]


async def test_clicks_at_once_on_one_message_leave_the_latest_counts(
    bot: PaperboyClient, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice's click reads the counts, then is slow to answer; Bob clicks meanwhile. The
    message must end with both votes, not with Alice's older counts put back last."""
    digest_id, message = await delivered(bot, fake_discord)
    up = custom_id(VOTE_UP, digest_id, paper_of(message))
    real = buttons.digest_counts
    calls: list[int] = []

    def slow_first(*args: Any) -> dict[str, tuple[int, int]]:
        counts = real(*args)
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.5)  # the counts read, the answer late (a slow thread, a slow network)
        return counts

    monkeypatch.setattr(buttons, "digest_counts", slow_first)
    answered = len(fake_discord.followups())
    bot._connection.parse_interaction_create(fake_discord.click(message, up, user_id=ALICE))  # type: ignore[arg-type]
    assert await eventually(lambda: calls)  # Alice's counts are read: one vote
    bot._connection.parse_interaction_create(fake_discord.click(message, up, user_id=BOB))  # type: ignore[arg-type]
    assert await eventually(lambda: len(fake_discord.followups()) >= answered + 2)
    assert labels(fake_discord.messages[message["id"]])[0] == "1. 👍 More like this · 2"


async def test_no_view_is_kept_per_message(bot: PaperboyClient, fake_discord: FakeDiscord) -> None:
    """The digest buttons cost discord.py no state per message (10,000 channels' digests
    a week): only the one DigestButton template, which serves every message."""
    digest_id, message = await delivered(bot, fake_discord)
    await click(bot, fake_discord, message, custom_id(VOTE_UP, digest_id, paper_of(message)))
    store = bot._connection._view_store
    assert store._views == {} and store._synced_message_views == {}
    assert list(store._dynamic_items.values()) == [buttons.DigestButton]


# --- hostile and concurrent clicks --------------------------------------------------

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
    raises aiohttp's error, not an HTTPException, and retries nothing. The click goes on
    with its ephemeral line (logged, one warning), not a traceback in discord.py's log
    with the clicker told nothing; the vote is stored once."""
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
    then leaves `interaction.user` MISSING): the click gets an ephemeral line, nothing
    written, not an AttributeError in discord.py's log and "This interaction failed"; a DM
    click without `user` likewise."""
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
