"""Digest rows as the store records them."""

from __future__ import annotations

from config.settings import load_settings
from db import digests as digest_store
from db.store import Store
from digests.digest import ensure_channel
from digests.timestamps import stamp
from tests.conftest import NOW


def digest_row(db: Store, channel: str) -> int:
    ensure_channel(db, channel, load_settings({}, dotenv=None), NOW)
    return int(digest_store.insert_digest(db, channel, "2026-W49", stamp(NOW), [], [])["id"])
