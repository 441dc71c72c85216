"""Answers about a personal digest say "your personal digest" / "you", not "this channel".

Every command typed in the Slack DM with the app acts on the user's own digest
(`slack:T/@U`); `why`, `feedback`, `feedback reset`, `digest`, `backlog` and `topics`
there must not answer "This channel follows no topics yet" and the like. Each case runs
on a channel and on a personal digest: the channel's wording is unchanged
(`digests.wording`).
"""

from __future__ import annotations

import dataclasses

import pytest

from config.settings import Settings
from db import channels as channel_store
from db import feedback as feedback_store
from db.store import Store
from digests.commands import Context, handle
from digests.digest import build_digest, ensure_channel
from digests.render.text import reply_text
from digests.topics import Catalog
from digests.wording import here
from tests.conftest import NOW

CHANNEL = "slack:T1/C1"
PERSONAL = "slack:T1/@U01"
AT = "2026-11-30T08:00:00+00:00"

# {reference: (the answers' wording, keyed by case)}
WORDING = {
    CHANNEL: {
        "no votes": "No 👍/👎 in this channel yet.",
        "empty digest": "This channel follows no topics yet, so its digest would be empty.",
        "why, no topics": "This channel follows no topics, so nothing is picked for it.",
        "why, never sent": "It has not been in this channel's digests.",
        "why, sent": "It was in this channel's digest for",
        "why, voted down": "This channel voted it down (net 👎), so its digests never pick it",
        "feedback": "This channel's feedback, on 1 topic:",
        "reset, which": "This channel follows:",
        "reset, not followed": "This channel does not follow diffusion-models.",
        "reset": "@alice cleared this channel's feedback on Offline RL (2 votes).",
        "reset, nothing": "There is no feedback on Offline RL in this channel to clear.",
        "backlog on": "@alice turned the backlog on:",
        "backlog already": "The backlog is already on in this channel.",
        "backlog off": "@alice turned the backlog off:",
        "topics": "(✓ = this channel follows it)",
        "own topics": "This channel's own topics:",
    },
    PERSONAL: {
        "no votes": "No 👍/👎 in your personal digest yet.",
        "empty digest": "Your personal digest follows no topics yet, so your digest would be empty.",
        "why, no topics": "Your personal digest follows no topics, so nothing is picked for it.",
        "why, never sent": "It has not been in your digests.",
        "why, sent": "It was in your digest for",
        "why, voted down": "You voted it down (net 👎), so your digests never pick it",
        "feedback": "Your feedback, on 1 topic:",
        "reset, which": "Your personal digest follows:",
        "reset, not followed": "Your personal digest does not follow diffusion-models.",
        "reset": "You cleared your feedback on Offline RL (2 votes).",
        "reset, nothing": "There is no feedback on Offline RL in your personal digest to clear.",
        "backlog on": "You turned the backlog on:",
        "backlog already": "The backlog is already on in your personal digest.",
        "backlog off": "You turned the backlog off:",
        "topics": "(✓ = your personal digest follows it)",
        "own topics": "Your own topics:",
    },
}


def _flat(text: str) -> str:
    """The reply as one line (renderers wrap long lines)."""
    return " ".join(line.strip() for line in text.splitlines())


@pytest.fixture(params=[CHANNEL, PERSONAL])
def ctx(
    request: pytest.FixtureRequest, seeded_db: Store, settings: Settings, catalog: Catalog
) -> Context:
    return Context(seeded_db, request.param, "@alice", NOW, settings, catalog, "slack:T1/U01")


def _follow(ctx: Context, topic_id: str, text: str | None = None) -> None:
    ensure_channel(ctx.db, ctx.channel, ctx.settings, ctx.now)
    channel_store.add_subscription(ctx.db, ctx.channel, topic_id, text, "@alice", AT)


def _vote(ctx: Context, paper_id: str, user: str, value: int) -> None:
    feedback_store.record_vote(ctx.db, ctx.channel, "offline-rl", paper_id, user, value, None, AT)


def _says(ctx: Context, command: str) -> str:
    reply = handle(command, ctx)
    return _flat(reply_text(reply))


def test_the_answers_before_anything_is_followed(ctx: Context) -> None:
    wording = WORDING[ctx.channel]
    paper_id = str(next(iter(ctx.db.query("select id from papers order by id")))["id"])
    assert wording["no votes"] in _says(ctx, "feedback")
    assert wording["empty digest"] in _says(ctx, "digest")
    why = _says(ctx, f"why {paper_id}")
    assert wording["why, never sent"] in why and wording["why, no topics"] in why


def test_the_answers_about_a_digest_with_feedback(ctx: Context) -> None:
    wording = WORDING[ctx.channel]
    _follow(ctx, "offline-rl")
    digest = build_digest(ctx.db, ctx.channel, NOW, catalog=ctx.catalog, settings=ctx.settings)
    picked = [str(item.paper["id"]) for item in digest.items]
    assert len(picked) >= 2
    down = next(
        str(row["id"])
        for row in ctx.db.query("select id from papers order by id")
        if row["id"] not in picked
    )
    assert wording["why, sent"] in _says(ctx, f"why {picked[0]}")
    _vote(ctx, picked[0], "U1", 1)
    _vote(ctx, down, "U1", -1)
    assert wording["why, voted down"] in _says(ctx, f"why {down}")
    assert _says(ctx, "feedback").startswith(wording["feedback"])
    assert wording["reset, which"] in _says(ctx, "feedback reset")
    assert wording["reset, not followed"] in _says(ctx, "feedback reset diffusion-models")
    assert wording["reset"] in _says(ctx, "feedback reset offline-rl")
    assert wording["reset, nothing"] in _says(ctx, "feedback reset offline-rl")


def test_backlog_and_topics(ctx: Context) -> None:
    wording = WORDING[ctx.channel]
    _follow(ctx, "custom:diffusion-policy", "diffusion policy")
    assert _says(ctx, "backlog on").startswith(wording["backlog on"])
    assert wording["backlog already"] in _says(ctx, "backlog on")
    assert _says(ctx, "backlog off").startswith(wording["backlog off"])
    topics = _says(ctx, "topics")
    assert wording["topics"] in topics and wording["own topics"] in topics


def test_the_wording_follows_the_reference() -> None:
    assert here(PERSONAL, "@alice").actor == "You"
    assert here("discord:@123456789012345678").subject == "Your personal digest"
    assert here("local:lab", "bob").actor == "bob"
    assert here("slack:T1/D0123456789").subject == "This channel"  # a DM id is a channel id
    personal = dataclasses.asdict(here(PERSONAL, "@alice"))
    assert not any("channel" in phrase.lower() for phrase in personal.values())
