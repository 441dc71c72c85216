"""A recorded digest big enough for several Discord messages."""

from __future__ import annotations

from dataclasses import replace

import pytest

from config.settings import Settings
from db.store import Store
from digests.digest import Digest, build_digest
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.digest import CHANNEL, subscribe


@pytest.fixture
def recorded(seeded_db: Store, catalog: Catalog, settings: Settings) -> Digest:
    subscribe(seeded_db, settings, *catalog.ids)
    big = replace(settings, digest_size=50)
    digest = build_digest(seeded_db, CHANNEL, NOW, catalog=catalog, settings=big)
    assert digest.recorded and digest.digest_id is not None and len(digest.items) >= 35
    return digest
