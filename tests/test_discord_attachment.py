"""A reply's attachment (issue 13: `saved export`'s BibTeX) goes to Discord as a file on
the (ephemeral) answer, through discord.py's real multipart request to the fake REST API."""

from __future__ import annotations

import discord

from bot.discordbot.client import PaperboyClient
from bot.discordbot.commands import send_reply
from digests.commands.replies import Attachment, Reply
from tests.discord_helpers import interaction
from tests.fakes.discord_api import FakeDiscord

BIBTEX = "@misc{doe2026robots,\n  title = {Robots {\\`a} la carte},\n  eprint = {2611.00001},\n}\n"


async def test_an_attachment_is_a_file_on_the_ephemeral_answer(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    asked = discord.Interaction(data=interaction("saved"), state=bot._connection)  # type: ignore[arg-type]
    reply = Reply(
        text="1 saved paper as BibTeX",
        ephemeral=True,
        attachment=Attachment("saved.bib", BIBTEX, "application/x-bibtex"),
    )
    await send_reply(asked, reply)
    [callback] = fake_discord.callbacks()
    assert callback["type"] == 4
    assert callback["data"]["flags"] & 64  # only the asker sees it
    assert callback["data"]["content"] == "1 saved paper as BibTeX"
    assert callback["files"] == [{"filename": "saved.bib", "content": BIBTEX}]


async def test_a_reply_without_attachment_sends_no_file(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    asked = discord.Interaction(data=interaction("saved"), state=bot._connection)  # type: ignore[arg-type]
    await send_reply(asked, Reply(text="No saved papers yet.", ephemeral=True))
    [callback] = fake_discord.callbacks()
    assert "files" not in callback and callback["data"]["content"] == "No saved papers yet."
