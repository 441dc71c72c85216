"""Discord digests number their items through the whole digest: a
digest with buttons holds 5 items per message, and the second message starts at "6.", as
the text digest and `/papers why` ("#7 of 10") count them; a click keeps the numbers."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.discordbot.client import PaperboyClient
from bot.discordbot.poster import DiscordPoster
from bot.send import send_digest
from db import open_db
from digests.actions import VOTE_UP, custom_id
from digests.digest import Digest
from digests.explain import last_item
from digests.render import discord, limits
from digests.render.escape import discord_escape
from digests.render.view import digest_view
from tests.conftest import NOW
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_buttons import ALICE, click, labels
from tests.fakes.discord_digest import recorded  # noqa: F401
from tests.fakes.discord_interactions import CHANNEL, MANAGE_CHANNELS, dispatch, interaction


def test_numbers_run_through_the_messages_in_titles_and_labels(
    recorded: Digest,
) -> None:
    messages = discord.digest_messages(recorded)
    assert len(messages) >= 7  # 35+ items, 5 per message
    view = digest_view(recorded, discord_escape)
    number = 0
    for message in messages:
        assert limits.discord_problems(message.payload()) == []
        for embed, row, paper_id in zip(
            message.embeds, message.components, message.paper_ids, strict=True
        ):
            number += 1
            assert view.items[number - 1].id == paper_id  # the digest's shown order
            assert embed["title"] == f"{number}. {view.items[number - 1].title}"[:256]
            assert row["components"][0]["label"] == f"{number}. 👍 More like this"
    assert number == len(recorded.items)
    assert messages[1].embeds[0]["title"].startswith("6. ")


def test_long_titles_keep_the_limit_with_two_digit_numbers(recorded: Digest) -> None:
    items = tuple(
        replace(item, paper={**item.paper, "title": "T" * 300}) for item in recorded.items
    )
    messages = discord.digest_messages(replace(recorded, items=items))
    titles = [embed["title"] for message in messages for embed in message.embeds]
    assert titles[11].startswith("12. T") and all(len(t) <= 256 for t in titles)
    assert all(limits.discord_problems(m.payload()) == [] for m in messages)


def test_with_counts_keeps_a_later_messages_numbers(recorded: Digest) -> None:
    second = discord.digest_messages(recorded)[1]
    paper = second.paper_ids[1]
    rows = discord.with_counts(second.components, {paper: (2, 0)})
    assert [row["components"][0]["label"] for row in rows] == [
        "6. 👍 More like this",
        "7. 👍 More like this · 2",
        "8. 👍 More like this",
        "9. 👍 More like this",
        "10. 👍 More like this",
    ]


async def test_why_and_a_click_on_the_second_message_agree(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    services = bot.services
    for topic in services.catalog.ids:
        await dispatch(
            bot,
            fake_discord,
            interaction("subscribe", {"topic": topic}, permissions=MANAGE_CHANNELS),
        )
    digest, result = await send_digest(
        open_db(services.db_path),
        DiscordPoster(bot),
        CHANNEL,
        NOW,
        catalog=services.catalog,
        settings=services.settings,
    )
    assert result.state == "done" and digest.digest_id is not None
    sent = fake_discord.created
    assert len(sent) >= 2 and len(digest.items) >= 7
    second = sent[1]
    assert second["embeds"][0]["title"].startswith("6. ")
    paper = second["embeds"][1]["footer"]["text"].removeprefix("id ")
    shown = last_item(open_db(services.db_path), CHANNEL, paper)
    assert shown is not None and (shown["shown"], shown["of"]) == (7, len(digest.items))
    assert second["embeds"][1]["title"].startswith("7. ")
    await click(
        bot, fake_discord, second, custom_id(VOTE_UP, digest.digest_id, paper), user_id=ALICE
    )
    now: dict[str, Any] = fake_discord.messages[second["id"]]
    assert labels(now, 1)[0] == "7. 👍 More like this · 1"
    assert [labels(now, row)[0] for row in (0, 2)] == [
        "6. 👍 More like this",
        "8. 👍 More like this",
    ]


def test_packing_leaves_room_for_two_digit_numbers() -> None:
    """Numbers run to the digest's last: "12. " is 4 characters, not 3."""
    first, second = {"description": "a" * 3000}, {"description": "b" * 2993}
    assert discord._fits([first], second, numbered=True, last=5)  # 5,993 + 2 x 3
    assert not discord._fits([first], second, numbered=True, last=12)  # 5,993 + 2 x 4
