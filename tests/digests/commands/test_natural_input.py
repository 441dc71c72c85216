"""Commands typed the way people say them: a mistyped or other verb, a schedule in plain
English, a catalog topic in other words. Each gets the command meant, in one line, or is
taken as meant and says so; nothing that only guesses is stored."""

from __future__ import annotations

import pytest

from config.settings import Settings
from db import channels as channel_store
from db.store import Store
from digests.commands import Context, handle
from digests.topics import Catalog
from tests.conftest import NOW

CHANNEL = "slack:T0001/C0001"
ALICE = "slack:T0001/U0001"


@pytest.fixture
def ctx(seeded_db: Store, settings: Settings, catalog: Catalog) -> Context:
    return Context(seeded_db, CHANNEL, "alice", NOW, settings, catalog, user_key=ALICE)


def stored(db: Store) -> list[dict[str, object]]:
    return list(db.query("select id, weekday, time, timezone, cadence from channels"))


# --- schedule -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        # Too many words for the grammar: "takes at most 3 arguments" and the usage.
        ("schedule daily at 8am berlin", "/papers schedule daily 08:00 Europe/Berlin"),
        ("schedule every monday at 9", "/papers schedule monday 09:00"),
        # Words the grammar takes, but that are no day or time: "'at' is not daily...".
        ("schedule at 8pm", "/papers schedule monday 20:00"),
        ("schedule monday 9", "/papers schedule monday 09:00"),
        # Too few: "needs time".
        ("schedule 7:30am", "/papers schedule monday 07:30"),
    ],
)
def test_a_schedule_in_plain_english_gets_the_command_it_means(
    ctx: Context, text: str, meant: str
) -> None:
    reply = handle(text, ctx)
    assert reply.error and not reply.changed and reply.lines == ()
    assert reply.text == f"Did you mean `{meant}`? (Nothing changed; send that to set it.)"
    assert stored(ctx.db) == []  # a guess is only suggested: not even the channel's row


def test_the_suggestion_keeps_the_days_of_the_schedule_and_the_me_flag(ctx: Context) -> None:
    handle("schedule weekdays 07:00", ctx)
    assert "`/papers schedule weekdays 20:00`" in handle("schedule at 8pm", ctx).text
    mine = handle("schedule --me every day at 8 am Berlin time", ctx)
    assert mine.ephemeral and not mine.changed
    assert "`/papers schedule --me daily 08:00 Europe/Berlin`" in mine.text
    # `--me` alone, where the personal digest is not stored: the default day
    assert "`/papers schedule --me monday 20:00`" in handle("schedule --me at 8pm", ctx).text


def test_the_exact_grammar_is_unchanged(ctx: Context) -> None:
    """What the grammar takes is stored as before, and what no reading fits keeps its
    own message (a timezone's names the zone meant)."""
    done = handle("schedule weekdays 8:30am", ctx)
    assert done.changed and "weekdays (Monday to Friday) at 08:30" in done.text
    assert handle("schedule daily 8:00 Europe/Berlin", ctx).changed
    zone = handle("schedule monday 09:00 Berlin", ctx)
    assert zone.error and "Did you mean Europe/Berlin?" in zone.text
    assert "takes at most 3 arguments" in handle("schedule every monday and friday at 9", ctx).text
    assert "is not daily, weekdays or a weekday" in handle("schedule someday 09:00", ctx).text


# --- subscribe ------------------------------------------------------------------------


def test_a_topic_in_other_words_is_the_topic_and_says_how_to_follow_the_words(
    ctx: Context,
) -> None:
    """`subscribe RL from human feedback` names the catalog's `rlhf` (its alias, with
    `RL` spelled out): it follows that topic and says how to follow the words instead."""
    reply = handle("subscribe RL from human feedback", ctx)
    assert reply.changed
    assert reply.text == "alice subscribed this channel to RLHF and preference learning (`rlhf`)."
    assert reply.lines[0] == (
        "I took `RL from human feedback` as the catalog topic `rlhf`; to follow the words "
        'instead: `/papers unsubscribe rlhf`, then `/papers subscribe "RL from human feedback"`.'
    )
    assert [r["topic_id"] for r in channel_store.active_subscriptions(ctx.db, CHANNEL)] == ["rlhf"]
    assert handle("unsubscribe RL from human feedback", ctx).changed  # the same words undo it


def test_quoted_words_and_ordinary_free_text_stay_free_text(ctx: Context) -> None:
    quoted = handle('subscribe "RL from human feedback"', ctx)
    assert quoted.text == 'alice subscribed this channel to "RL from human feedback".'
    plain = handle("subscribe papers about robot grasping with tactile sensors", ctx)
    assert '"papers about robot grasping with tactile sensors"' in plain.text
    named = handle("subscribe offline reinforcement learning", ctx)  # an alias: no note
    assert "Offline RL (`offline-rl`)" in named.text
    assert not any("I took" in line for r in (quoted, plain, named) for line in r.lines)
    # both followed; unsubscribe takes the text as typed before the topic it names
    assert handle("unsubscribe RL from human feedback", ctx).text.endswith(
        'from "RL from human feedback".'
    )


def test_the_me_form_says_it_with_me(ctx: Context) -> None:
    reply = handle("subscribe --me RL from human feedback", ctx)
    assert reply.ephemeral and "rlhf" in reply.text
    assert "`/papers unsubscribe --me rlhf`" in reply.lines[0]


def test_a_one_word_typo_is_still_an_unknown_id(ctx: Context) -> None:
    reply = handle("subscribe ofline-rl", ctx)
    assert reply.error and "Did you mean `offline-rl`?" in reply.lines
    assert channel_store.active_subscriptions(ctx.db, CHANNEL) == []
