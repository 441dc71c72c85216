"""Digest buttons on Discord (issue 13), each click on the real path: an INTERACTION_CREATE
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
from bot.discordbot.commands import FAILURE
from bot.discordbot.poster import DiscordPoster
from bot.send import send_digest
from db import open_db
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, custom_id, user_key
from digests.digest import build_digest
from digests.render import discord as discord_render
from digests.render import limits
from tests.conftest import NOW
from tests.discord_helpers import CHANNEL, MANAGE_CHANNELS, dispatch, interaction, logged_in
from tests.fakes.discord_api import FakeDiscord
from tests.test_digest import subscribe
from tests.waiting import eventually

ALICE = "500000000000000001"
BOB = "500000000000000002"
EPHEMERAL = 64


async def delivered(bot: PaperboyClient, fake: FakeDiscord) -> tuple[int, dict[str, Any]]:
    """Subscribe the channel, send its digest through the outbox; (digest id, first message)."""
    await dispatch(
        bot, fake, interaction("subscribe", {"topic": "offline-rl"}, permissions=MANAGE_CHANNELS)
    )
    digest, result = await send_digest(
        open_db(bot.services.db_path),
        DiscordPoster(bot),
        CHANNEL,
        NOW,
        catalog=bot.services.catalog,
        settings=bot.services.settings,
    )
    assert result.state == "done" and digest.digest_id is not None
    return digest.digest_id, fake.created[0]


def button(message: dict[str, Any], row: int, index: int) -> dict[str, Any]:
    return dict(message["components"][row]["components"][index])


def labels(message: dict[str, Any], row: int = 0) -> list[str]:
    return [b["label"] for b in message["components"][row]["components"][:3]]


def paper_of(message: dict[str, Any], row: int = 0) -> str:
    return str(button(message, row, 0)["custom_id"]).rsplit(":", 1)[1]


def stored(bot: PaperboyClient) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    db = open_db(bot.services.db_path)
    votes = db.execute(
        "select channel, topic_id, paper_id, user, vote from feedback order by id"
    ).fetchall()
    saved = db.execute("select user, paper_id, channel from saved").fetchall()
    return [tuple(v) for v in votes], [tuple(s) for s in saved]


async def click(
    bot: PaperboyClient, fake: FakeDiscord, message: dict[str, Any], custom: str, **kw: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Click, wait for the acknowledgement and the ephemeral line; (callback, line)."""
    before_callbacks, before_lines = len(fake.callbacks()), len(fake.followups())
    payload = fake.click(fake.messages.get(message["id"], message), custom, **kw)
    await dispatch(bot, fake, payload, answers=2)
    [callback] = fake.callbacks()[before_callbacks:]
    [line] = fake.followups()[before_lines:]
    return callback, line


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


async def refused(
    bot: PaperboyClient, fake: FakeDiscord, message: dict[str, Any], custom: str, **kw: Any
) -> str:
    """Click; check that nothing changed (no vote, no save, no edit) and that the only
    answer is an ephemeral message. Its text."""
    before, edits, answers = stored(bot), list(fake.edits), len(fake.callbacks())
    await dispatch(bot, fake, fake.click(message, custom, **kw))
    [answer] = fake.callbacks()[answers:]
    assert answer["type"] == 4 and answer["data"]["flags"] & EPHEMERAL
    assert stored(bot) == before and fake.edits == edits
    assert "Traceback" not in answer["data"]["content"]
    return str(answer["data"]["content"])


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
    """A personal digest (issue 13) arrives in the user's DM with the bot; a click there has
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
