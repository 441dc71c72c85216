"""Every message of every digest on every platform, with and without the render caches."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.send import platform_messages
from config.settings import Settings
from db.store import Store
from digests.digest import Digest, build_digest
from digests.render import discord as discord_render
from digests.render import slack as slack_render
from digests.render import view
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.digest import CHANNEL, subscribe

PLATFORMS = ("slack", "discord", "local")


def rendered(digests: list[Digest]) -> str:
    """Every message of every digest on every platform, as one JSON text."""
    return json.dumps(
        [[platform_messages(d, p, "post") for p in PLATFORMS] for d in digests], sort_keys=True
    )


def uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    """Render as before the cache: every paper view and every wrap computed afresh."""
    monkeypatch.setattr(view, "_shown_cached", lambda paper, escape: view._shown(paper, escape))
    monkeypatch.setattr(view, "_wrapped", lambda env, *args: view.do_wordwrap(env, *args))
    for module in (slack_render, discord_render):
        monkeypatch.setattr(module, "per_paper", lambda kind, paper, make: make(paper))


@pytest.fixture
def channel_digests(seeded_db: Store, catalog: Catalog, settings: Settings) -> list[Digest]:
    """Several channels' digests sharing papers, with different topics and archive marks."""
    subscribe(seeded_db, settings, *catalog.ids)
    big = replace(settings, digest_size=50)
    base = build_digest(seeded_db, CHANNEL, NOW, catalog=catalog, settings=big, preview=True)
    topics = base.topics
    digests = [base]
    for number in range(4):
        items = tuple(
            replace(item, topics=topics[number : number + 2], from_archive=(i + number) % 3 == 0)
            for i, item in enumerate(base.items[number:])
        )
        digests.append(replace(base, channel=f"local:c{number}", items=items))
    return digests
