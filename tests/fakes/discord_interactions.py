"""Interaction payloads shaped as Discord sends them, and a logged-in client on the fake."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from bot.discordbot.client import PaperboyClient, use_api_base
from bot.services import Services
from config.settings import load_settings
from db import open_db
from digests.ingest import ingest_files
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.discord_api import APP_ID, FakeDiscord
from tests.fakes.waiting import eventually

TOKEN = "MTA5NzQ3NzQ2NjAwNjg1NzY3NQ.GhY2aB.abcdefghijklmnopqrstuvwxyz0123456789"
GUILD = "111111111111111111"
CHANNEL_ID = "222222222222222222"
CHANNEL = f"discord:{GUILD}/{CHANNEL_ID}"
MANAGE_CHANNELS = 1 << 4
_ids = itertools.count(900000000000000000)


def make_services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake: FakeDiscord, **env: str
) -> Services:
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW)
    settings = load_settings(
        {"DISCORD_TOKEN": TOKEN, "DISCORD_API_URL": fake.base, **env}, dotenv=None
    )
    return Services(db_path, settings, catalog, clock=lambda: NOW)


async def logged_in(services: Services, fake: FakeDiscord, **kwargs: Any) -> PaperboyClient:
    use_api_base(fake.base)
    client = PaperboyClient(services, **kwargs)
    await client.login(TOKEN)
    return client


def interaction(
    sub: str,
    options: dict[str, str] | None = None,
    *,
    permissions: int = 0,
    kind: int = 2,
    focused: str | None = None,
) -> dict[str, Any]:
    """An INTERACTION_CREATE payload for `/papers <sub> ...` (kind 2) or its autocomplete (4)."""
    number = next(_ids)
    inner = [
        {"name": name, "type": 3, "value": value, **({"focused": True} if name == focused else {})}
        for name, value in (options or {}).items()
    ]
    return {
        "id": str(number),
        "application_id": APP_ID,
        "type": kind,
        "token": f"interaction-token-{number}",
        "version": 1,
        "guild_id": GUILD,
        "channel_id": CHANNEL_ID,
        "channel": {"id": CHANNEL_ID, "type": 0, "guild_id": GUILD, "name": "papers", "position": 0,
                    "permission_overwrites": [], "nsfw": False, "parent_id": None},
        "member": {
            "user": {"id": "500000000000000000", "username": "alice", "discriminator": "0",
                     "global_name": "Alice", "avatar": None},
            "roles": [], "permissions": str(permissions), "joined_at": "2025-01-01T00:00:00+00:00",
            "deaf": False, "mute": False, "flags": 0, "nick": None, "avatar": None, "pending": False,
        },
        "app_permissions": str((1 << 10) | (1 << 11) | (1 << 14) | (1 << 38)),
        "attachment_size_limit": 10485760,
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": GUILD},
        "context": 0,
        "data": {"id": "400000000000000000", "name": "papers", "type": 1,
                 "options": [{"name": sub, "type": 1, "options": inner}]},
    }  # fmt: skip


async def dispatch(
    client: PaperboyClient, fake: FakeDiscord, payload: dict[str, Any], answers: int = 1
) -> None:
    """Hand the payload to discord.py's connection state, as the gateway would, and wait
    until the bot has answered (`answers` callback or follow-up requests)."""
    before = len(fake.callbacks()) + len(fake.followups())
    client._connection.parse_interaction_create(payload)  # type: ignore[arg-type]
    answered = await eventually(
        lambda: len(fake.callbacks()) + len(fake.followups()) >= before + answers
    )
    assert answered, "the bot did not answer the interaction"
