"""A reply's attachment (`saved export`'s BibTeX) goes to Discord as a file on
the (ephemeral) answer, through discord.py's real multipart request to the fake REST API."""

from __future__ import annotations

import discord

from bot.discordbot.client import PaperboyClient
from bot.discordbot.commands import send_reply, shown_size
from db import open_db, saved
from digests.actions import user_key
from digests.failures import FAILURE
from digests.replies import Attachment, Reply
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import dispatch, interaction

ALICE = "500000000000000000"  # the user of `interaction`

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


async def test_an_attachment_over_the_upload_limit_is_not_sent_and_the_user_is_told(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    """`/papers saved export` of a list larger than Discord's upload limit (10 MB; here the
    interaction says 2 KB): Discord would refuse the whole answer (413, 40005), and the
    asker would see 'something went wrong'. The asker is told why instead, only them, no
    file."""
    db = open_db(bot.services.db_path)
    papers = [str(row[0]) for row in db.execute("select id from papers limit 12")]
    for paper in papers:
        saved.save(db, user_key("discord", None, ALICE), paper, "2026-11-30T09:00:00Z")
    fake_discord.upload_limit = 2000
    payload = interaction("saved", {"action": "export"})
    payload["attachment_size_limit"] = 2000
    await dispatch(bot, fake_discord, payload)
    answer = fake_discord.callbacks()[0]  # (before: the file, refused 413; then a FAILURE)
    assert answer["type"] == 4 and answer["data"]["flags"] & 64
    assert "files" not in answer and answer["data"].get("attachments") in (None, [])
    text = answer["data"]["content"]
    assert text.startswith("Sorry: paperboy-saved.bib would be ") and "than the 2 KB " in text
    assert f"paperboy saved --user discord:{ALICE} --format bibtex" in text
    assert FAILURE not in text


async def test_an_attachment_at_the_upload_limit_is_sent(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    asked = discord.Interaction(data=interaction("saved"), state=bot._connection)  # type: ignore[arg-type]
    fake_discord.upload_limit = asked.filesize_limit = len(BIBTEX.encode())
    reply = Reply(text="1 saved paper", attachment=Attachment("saved.bib", BIBTEX))
    await send_reply(asked, reply)
    [callback] = fake_discord.callbacks()
    assert callback["files"] == [{"filename": "saved.bib", "content": BIBTEX}]


def test_sizes_read_as_discord_shows_them() -> None:
    assert [shown_size(n) for n in (2000, 10485760, 12 * 1048576 + 300000, 1048575)] == [
        "2 KB", "10 MB", "12.3 MB", "1024 KB",
    ]  # fmt: skip
