"""Digests to render and the platform limits every rendering must hold."""

from __future__ import annotations

import pytest

from digests.digest import Digest, DigestItem
from digests.enrich.paper import build_row
from digests.records import PaperRecord
from digests.render import discord, limits
from digests.topics import custom_topic
from tests.conftest import NOW
from tests.fakes.digest import CHANNEL


def make_digest(papers: list[dict], topics, channel: str = CHANNEL) -> Digest:  # type: ignore[no-untyped-def]
    items = tuple(
        DigestItem(paper, tuple(topics[:2]), 10.0 - i / 1000) for i, paper in enumerate(papers)
    )
    return Digest(channel, "2026-W49", tuple(topics), items, NOW.isoformat(), recorded=False)


def paper(abstract: str, title: str | None = None, **extra) -> dict:  # type: ignore[no-untyped-def]
    row = build_row(PaperRecord(abstract=abstract, source="t", line=1, title=title, **extra), NOW)
    return row


def check_discord(digest: Digest) -> list[discord.DiscordMessage]:
    messages = discord.digest_messages(digest)
    for message in messages:
        assert limits.discord_problems(message.payload()) == []
        assert message.payload()["allowed_mentions"] == {"parse": []}
    footers = [embed["footer"]["text"] for m in messages for embed in m.embeds]
    assert footers == [f"id {item.paper['id']}" for item in _in_view_order(digest)]
    return messages


def _in_view_order(digest: Digest) -> list[DigestItem]:
    from digests.render.view import grouped

    return [item for _, item in grouped(digest)]


@pytest.fixture
def extreme() -> Digest:
    """Items built to break every limit if nothing guarded it."""
    topics = [custom_topic(f"topic number {i} " + "long " * 20) for i in range(25)]
    huge = paper(
        "We propose Hugeness, a method. " + "word " * 5000,
        title="T" * 300 + " " + "very long title " * 100,
        url="https://example.org/" + "x" * 300,
    )
    items = tuple(
        DigestItem({**huge, "id": f"p{i:010d}", "tldr": "z " * 3000}, tuple(topics), 9.0)
        for i in range(30)
    )
    return Digest(CHANNEL, "2026-W49", tuple(topics), items, NOW.isoformat(), recorded=False)
