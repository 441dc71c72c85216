"""digests/actions.py: the button codec and `apply_action`, against hostile input."""

from __future__ import annotations

import re
from typing import Any

import pytest

from db import channels as store
from db import digests as digest_store
from db import feedback, saved
from db.store import Store
from digests import actions
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, apply_action, custom_id, item_ref
from tests.conftest import NOW

CHANNEL = "slack:T1/C1"
OTHER = "slack:T1/C2"
KEY = "slack:T1/U0AAA1"


def record(db: Store, channel: str, papers: list[str], topics: list[list[str]]) -> int:
    store.ensure_channel(db, channel, channel.split(":")[0], {}, NOW.isoformat())
    items = [
        {"paper_id": p, "topics": t, "score": 1.0} for p, t in zip(papers, topics, strict=True)
    ]
    week = f"2026-W{49 + db.execute('select count(*) from digests').fetchone()[0]}"
    return int(digest_store.insert_digest(db, channel, week, NOW.isoformat(), ["a"], items)["id"])


@pytest.fixture
def setup(seeded_db: Store) -> tuple[Store, int, int, list[str]]:
    papers = [str(r[0]) for r in seeded_db.execute("select id from papers order by id limit 4")]
    store.ensure_channel(seeded_db, CHANNEL, "slack", {}, NOW.isoformat())
    store.add_subscription(seeded_db, CHANNEL, "b", None, "U9", NOW.isoformat())
    mine = record(seeded_db, CHANNEL, papers[:3], [["a", "b"], ["a"], []])
    theirs = record(seeded_db, OTHER, papers[3:], [["a"]])
    return seeded_db, mine, theirs, papers


def click(db: Store, action: str, value: Any, **kwargs: Any) -> actions.ActionResult:
    args: dict[str, Any] = {"channel": CHANNEL, "user": "U1", "user_key": KEY}
    args.update(kwargs)
    return apply_action(db, action=action, value=value, now=NOW, **args)


def tables(db: Store) -> tuple[list[Any], list[Any]]:
    return (
        db.execute("select * from feedback order by id").fetchall(),
        db.execute("select * from saved order by rowid").fetchall(),
    )


def test_codec_round_trip() -> None:
    assert item_ref(123, "p380c62ca5bf30379") == "123:p380c62ca5bf30379"
    text = custom_id(VOTE_DOWN, 123, "p380c62ca5bf30379")
    assert text == "pb:down:123:p380c62ca5bf30379" and len(text) <= 100
    assert actions.parse_custom_id(text) == (VOTE_DOWN, "123:p380c62ca5bf30379")
    assert re.fullmatch(actions.CUSTOM_ID_TEMPLATE, custom_id(SAVE, 1, "p1"))
    assert actions.parse_item_ref("123:p1") == (123, "p1")
    longest = custom_id(VOTE_DOWN, 10**18 - 1, "p" + "f" * 39)
    assert actions.parse_custom_id(longest) is not None and len(longest) <= 100
    for bad in ("pb:up:0:p1", "pb:like:1:p1", "other:1:p1", "pb:up:1:p1\n", "pb:up:１:p1", 5):
        assert actions.parse_custom_id(bad) is None, bad
    with pytest.raises(ValueError):
        item_ref(0, "p1")
    with pytest.raises(ValueError):
        custom_id("paperboy_like", 1, "p1")


def test_user_keys() -> None:
    assert actions.user_key("slack", "T0123", "U0456") == "slack:T0123/U0456"
    assert (
        actions.user_key("discord", "999999", "123456789012345678") == "discord:123456789012345678"
    )
    assert actions.user_key("local", None, "ana") == "local:ana"
    for bad in (("slack", None, "U1"), ("irc", None, "x"), ("discord", None, "abc")):
        with pytest.raises(ValueError):
            actions.user_key(*bad)


def test_votes_count_once_and_the_other_vote_replaces(setup: Any) -> None:
    db, mine, _, papers = setup
    first = click(db, VOTE_UP, item_ref(mine, papers[0]))
    assert (first.error, first.changed, first.paper_id, first.counts) == (
        False,
        True,
        papers[0],
        (1, 0),
    )
    again = click(db, VOTE_UP, item_ref(mine, papers[0]))
    assert (again.error, again.changed, again.counts) == (False, False, (1, 0))
    other_user = click(
        db, VOTE_UP, item_ref(mine, papers[0]), user="U2", user_key="slack:T1/U0AAA2"
    )
    assert other_user.counts == (2, 0)
    flipped = click(db, VOTE_DOWN, item_ref(mine, papers[0]))
    assert (flipped.changed, flipped.counts) == (True, (1, 1))
    # The vote went to "b": the first of the item's topics ["a", "b"] the channel follows.
    assert feedback.net_votes(db, CHANNEL) == {}  # -1 and +1 on "b" cancel out
    rows = feedback.channel_feedback(db, CHANNEL)
    assert {(r["topic_id"], r["user"], r["vote"], r["digest_id"]) for r in rows} == {
        ("b", "U1", -1, mine),
        ("b", "U2", 1, mine),
    }
    # No topic followed: the item's first topic.
    click(db, VOTE_UP, item_ref(mine, papers[1]))
    assert feedback.net_votes(db, CHANNEL)["a"] == {papers[1]: 1}
    assert actions.digest_counts(db, CHANNEL, mine) == {
        papers[0]: (1, 1),
        papers[1]: (1, 0),
        papers[2]: (0, 0),
    }
    assert actions.digest_counts(db, OTHER, mine) == {}


def test_save_goes_to_the_users_list(setup: Any) -> None:
    db, mine, _, papers = setup
    done = click(db, SAVE, item_ref(mine, papers[1]))
    assert (done.error, done.changed, done.paper_id) == (False, True, papers[1])
    assert not click(db, SAVE, item_ref(mine, papers[1])).changed
    assert [r["id"] for r in saved.saved_papers(db, KEY)] == [papers[1]]
    assert saved.saved_papers(db, KEY)[0]["saved_from"] == CHANNEL


HOSTILE = [
    # (action, value, extra kwargs, words expected in the error)
    (VOTE_UP, "{theirs}:{p3}", {}, "another channel"),
    (SAVE, "{theirs}:{p3}", {}, "another channel"),
    (VOTE_UP, "{mine}:{p3}", {}, "not in this digest"),
    (VOTE_UP, "{mine}:pdoesnotexist", {}, "not in this digest"),
    (VOTE_UP, "999999:{p0}", {}, "not in Paperboy's records"),
    (VOTE_UP, "99999999999999999999999:{p0}", {}, "not one of Paperboy's"),  # overflows int64
    (VOTE_UP, "9223372036854775808:{p0}", {}, "not one of Paperboy's"),
    (VOTE_UP, "-1:{p0}", {}, "not one of Paperboy's"),
    (VOTE_UP, "0:{p0}", {}, "not one of Paperboy's"),
    (VOTE_UP, "{mine}:{p0}:extra", {}, "not one of Paperboy's"),
    (VOTE_UP, "{mine}:{p0}' or 1=1 --", {}, "not one of Paperboy's"),
    (VOTE_UP, "{mine}:p\u00e9\u00e9", {}, "not one of Paperboy's"),
    (VOTE_UP, "\u0661\u0662:{p0}", {}, "not one of Paperboy's"),  # Arabic-Indic digits
    (VOTE_UP, "{mine}:" + "p" * 10_000_000, {}, "not one of Paperboy's"),
    (VOTE_UP, "", {}, "not one of Paperboy's"),
    (VOTE_UP, None, {}, "not one of Paperboy's"),
    (VOTE_UP, 12, {}, "not one of Paperboy's"),
    (VOTE_UP, ["{mine}:{p0}"], {}, "not one of Paperboy's"),
    ("paperboy_like", "{mine}:{p0}", {}, "not one of Paperboy's"),
    ("", "{mine}:{p0}", {}, "not one of Paperboy's"),
    (VOTE_UP, "{mine}:{p0}", {"user": ""}, "who clicked"),
    (VOTE_UP, "{mine}:{p0}", {"user": "U1\u202e"}, "who clicked"),
    (VOTE_UP, "{mine}:{p0}", {"user": "U" * 10_000}, "who clicked"),
    (SAVE, "{mine}:{p0}", {"user_key": "slack:T1/U0AAA1/../x"}, "who clicked"),
    (SAVE, "{mine}:{p0}", {"user_key": None}, "who clicked"),
    (VOTE_UP, "{mine}:{p2}", {}, "no topic"),  # an item picked for no topic
    (VOTE_UP, "{mine}:{p0}", {"channel": OTHER}, "another channel"),
]


@pytest.mark.parametrize(("action", "value", "extra", "words"), HOSTILE)
def test_hostile_clicks_change_nothing(
    setup: Any, action: str, value: Any, extra: dict[str, Any], words: str
) -> None:
    db, mine, theirs, papers = setup
    click(db, VOTE_UP, item_ref(mine, papers[1]), user="U7")  # something already there
    click(db, SAVE, item_ref(mine, papers[1]), user="U7", user_key="slack:T1/U0AAA7")
    fill = {"mine": mine, "theirs": theirs, **{f"p{i}": p for i, p in enumerate(papers)}}
    if isinstance(value, str):
        value = value.format(**fill)
    elif isinstance(value, list):
        value = [v.format(**fill) for v in value]
    before = tables(db)
    result = click(db, action, value, **extra)
    assert result.error and not result.changed and result.counts is None
    assert words in result.text and "\n" not in result.text
    assert tables(db) == before


def test_a_vote_names_a_free_text_topic_by_its_text_not_its_slug(seeded_db: Store) -> None:
    """The clicker typed "diffusion policy", never `custom:diffusion-policy`; the answer
    keeps only the text's words (it is sent unescaped: no markup or mention gets in)."""
    paper = str(seeded_db.execute("select id from papers order by id limit 1").fetchone()[0])
    store.ensure_channel(seeded_db, CHANNEL, "slack", {}, NOW.isoformat())
    for slug, text in (
        ("custom:diffusion-policy", "diffusion policy"),
        ("custom:everyone-graph", "<!everyone> *graph*"),
    ):
        store.add_subscription(seeded_db, CHANNEL, slug, text, "U9", NOW.isoformat())
    digest = record(seeded_db, CHANNEL, [paper], [["custom:diffusion-policy"]])
    up = click(seeded_db, VOTE_UP, item_ref(digest, paper))
    assert up.text == '👍 Noted: more papers like this for "diffusion policy".'
    again = click(seeded_db, VOTE_UP, item_ref(digest, paper))
    assert again.text == '👍 Already counted for "diffusion policy".'
    other = record(seeded_db, CHANNEL, [paper], [["custom:everyone-graph"]])
    down = click(seeded_db, VOTE_DOWN, item_ref(other, paper), user="U2")
    assert down.text == '👎 Noted: fewer papers like this for "everyone graph".'
    catalog = record(seeded_db, CHANNEL, [paper], [["offline-rl"]])
    assert "for offline-rl." in click(seeded_db, VOTE_UP, item_ref(catalog, paper), user="U3").text
