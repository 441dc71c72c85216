"""A channel's first subscribe says that its schedule is the default, and how to change it;
later ones, and a schedule someone chose, say only when the digest comes."""

from __future__ import annotations

import dataclasses

import pytest

from config.settings import Settings
from db.store import Store
from digests.commands import Context, handle
from digests.topics import Catalog
from tests.conftest import NOW

CHANNEL = "slack:T0001/C0001"
DEFAULT = "Digest: Mondays at 09:00 (UTC), the default; next on Mon 7 Dec 2026, 09:00 UTC."
HINT = (
    "To change it: `/papers schedule daily 08:00 Europe/Berlin` (daily, weekdays or a "
    "weekday; a 24-hour time; a timezone)."
)


@pytest.fixture
def ctx(seeded_db: Store, settings: Settings, catalog: Catalog) -> Context:
    return Context(
        seeded_db, CHANNEL, "alice", NOW, settings, catalog, user_key="slack:T0001/U0001"
    )


def test_the_first_subscribe_says_the_default_and_how_to_change_it(ctx: Context) -> None:
    first = handle("subscribe offline-rl", ctx)
    assert first.changed and first.lines == (DEFAULT, HINT)
    later = handle("subscribe rlhf", ctx)
    assert later.lines == ("Digest: Mondays at 09:00 (UTC); next on Mon 7 Dec 2026, 09:00 UTC.",)


def test_a_schedule_chosen_before_is_not_called_the_default(ctx: Context) -> None:
    handle("schedule daily 07:00", ctx)
    reply = handle("subscribe offline-rl", ctx)
    assert reply.lines == ("Digest: daily at 07:00 (UTC); next on Tue 1 Dec 2026, 07:00 UTC.",)


def test_the_default_is_the_settings(ctx: Context) -> None:
    berlin = dataclasses.replace(
        ctx, settings=dataclasses.replace(ctx.settings, default_timezone="Europe/Berlin")
    )
    assert (
        handle("subscribe offline-rl", berlin)
        .lines[0]
        .startswith("Digest: Mondays at 09:00 (Europe/Berlin), the default; next on Mon 7 Dec 2026")
    )


def test_a_personal_digest_says_it_with_me_once(ctx: Context) -> None:
    first = handle("subscribe --me offline-rl", ctx)
    assert first.lines[0] == DEFAULT
    assert first.lines[1].startswith(
        "To change it: `/papers schedule --me daily 08:00 Europe/Berlin`"
    )
    assert len(handle("subscribe --me rlhf", ctx).lines) == 1
