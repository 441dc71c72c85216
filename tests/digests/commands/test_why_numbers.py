"""`why 3` and `why #3`: the paper by the number its digest shows, as people quote it."""

from __future__ import annotations

import pytest

from config.settings import Settings
from db.store import Store
from digests.commands import Context, handle
from digests.digest import build_digest
from digests.render.text import digest_text, reply_text
from digests.topics import Catalog
from tests.conftest import NOW

CHANNEL = "slack:T0001/C0001"
ALICE = "slack:T0001/U0001"
MINE = "slack:T0001/@U0001"  # ALICE's personal digest


@pytest.fixture
def ctx(seeded_db: Store, settings: Settings, catalog: Catalog) -> Context:
    return Context(seeded_db, CHANNEL, "@alice", NOW, settings, catalog, user_key=ALICE)


def shown_ids(text: str) -> list[str]:
    """The paper ids of a digest as printed, in the order of its numbers."""
    return [line.split("id: ")[1].strip() for line in text.splitlines() if "id: " in line]


def test_a_number_is_the_paper_the_last_digest_shows_so(ctx: Context) -> None:
    for topic in ("offline-rl", "rlhf", "llm-reasoning-agents"):
        handle(f"subscribe {topic}", ctx)
    digest = build_digest(ctx.db, CHANNEL, NOW, catalog=ctx.catalog, settings=ctx.settings)
    shown = shown_ids(digest_text(digest))
    assert len(shown) >= 4 and shown != [str(item.paper["id"]) for item in digest.items]
    for number, paper_id in enumerate(shown, start=1):
        by_id = reply_text(handle(f"why {paper_id}", ctx))
        for ref in (str(number), f"#{number}"):
            reply = handle(f"why {ref}", ctx)
            assert not reply.error and reply_text(reply) == by_id, ref
        assert f"(#{number} of {len(shown)})" in by_id


def test_a_number_past_the_digest_names_the_ones_it_has(ctx: Context) -> None:
    handle("subscribe offline-rl", ctx)
    digest = build_digest(ctx.db, CHANNEL, NOW, catalog=ctx.catalog, settings=ctx.settings)
    count = len(digest.items)
    reply = handle(f"why #{count + 1}", ctx)
    assert reply.error
    assert reply.text == (
        f"There is no #{count + 1} in this channel's last digest (week of 30 Nov 2026): it "
        f"has numbers 1 to {count}. Or give a paper id, e.g. `/papers why p380c62ca5bf30379`."
    )
    assert handle("why 0", ctx).error


def test_before_any_digest_a_number_is_the_previews(ctx: Context) -> None:
    handle("subscribe offline-rl", ctx)
    preview = handle("digest", ctx)
    assert preview.digest is not None and not preview.digest.recorded
    second = shown_ids(digest_text(preview.digest))[1]
    reply = handle("why 2", ctx)
    assert not reply.error and f"(`{second}`)" in reply.text
    assert reply.lines[0] == (
        "#2 in the preview of this channel's digest for week of 30 Nov 2026 "
        "(none has been sent yet)."
    )
    assert handle("list", ctx).lines[0].startswith("#1")  # nothing was recorded
    assert build_digest(ctx.db, CHANNEL, NOW, catalog=ctx.catalog, settings=ctx.settings).recorded


def test_a_number_where_nothing_is_followed_asks_for_an_id(ctx: Context) -> None:
    reply = handle("why #6", ctx)
    assert reply.error and "follows no topics" in reply.text and "paper id" in reply.text


def test_me_numbers_the_personal_digest(ctx: Context) -> None:
    handle("subscribe --me offline-rl", ctx)
    handle("subscribe robotics", ctx)  # the channel's digest differs
    digest = build_digest(ctx.db, MINE, NOW, catalog=ctx.catalog, settings=ctx.settings)
    first = shown_ids(digest_text(digest))[0]
    reply = handle("why --me 1", ctx)
    assert reply.ephemeral and f"(`{first}`)" in reply.text and "your digest" in reply_text(reply)
