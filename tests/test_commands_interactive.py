"""Issue 13 commands: why, feedback, saved, bibtex (digests/commands/interactive.py)."""

from __future__ import annotations

from pathlib import Path

from digests.commands.replies import Attachment, Reply
from digests.render.discord import reply_messages as discord_messages
from digests.render.slack import reply_messages as slack_messages
from digests.render.text import reply_text
from digests.topics import Catalog


def test_reply_carries_an_attachment_that_renderers_ignore() -> None:
    file = Attachment(filename="saved.bib", content="@misc{x,\n}\n", mime="application/x-bibtex")
    plain = Reply(text="1 saved paper as BibTeX")
    with_file = Reply(text="1 saved paper as BibTeX", attachment=file)
    assert plain.attachment is None
    assert with_file.attachment == file
    assert Attachment("a.txt", "x").mime == "text/plain"
    assert slack_messages(with_file) == slack_messages(plain)
    assert discord_messages(with_file) == discord_messages(plain)
    assert reply_text(with_file) == reply_text(plain)


def test_services_pass_the_user_key_to_the_context(tmp_path: Path, catalog: Catalog) -> None:
    from bot.services import Services
    from config.settings import load_settings

    services = Services(tmp_path / "p.db", load_settings({}, dotenv=None), catalog)
    assert services.context("slack:T1/C1", "@alice").user_key is None
    ctx = services.context("slack:T1/C1", "@alice", user_key="slack:T1/U1")
    assert (ctx.user, ctx.user_key) == ("@alice", "slack:T1/U1")
