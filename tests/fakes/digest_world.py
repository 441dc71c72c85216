"""The seed papers stored long ago, half of them new: many channels' digests at once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from config.settings import Settings
from db import channels as store
from db.store import Store
from digests.digest import ensure_channel
from digests.ingest import ingest_files
from digests.timestamps import stamp
from digests.topics import custom_topic
from tests.conftest import NOW

LONG_AGO = NOW - timedelta(days=60)


FREE_TEXTS = ("diffusion policy", "graph neural network", "language model", "robot robot")


@pytest.fixture
def world(fresh_db: Store, seed_paths: list[Any]) -> Store:
    """The 38 seed papers stored long ago; every other one new (stored two days ago)."""
    ingest_files(fresh_db, seed_paths, now=LONG_AGO)
    ids = [row["id"] for row in fresh_db.query("select id from papers order by id")]
    for paper_id in ids[::2]:
        fresh_db.execute(
            "update papers set added_at = ? where id = ?",
            [stamp(NOW - timedelta(days=2)), paper_id],
        )
    return fresh_db


def follow(db: Store, settings: Settings, channel: str, *topics: str, at: Any = NOW) -> None:
    ensure_channel(db, channel, settings, at)
    for topic in topics:
        if topic in FREE_TEXTS:
            custom = custom_topic(topic)
            store.add_subscription(db, channel, custom.id, topic, "t", stamp(at))
        else:
            store.add_subscription(db, channel, topic, None, "t", stamp(at))


def picks(digest: Any) -> list[tuple[str, bool]]:
    return [(str(item.paper["id"]), item.from_archive) for item in digest.items]
