"""The Slack Home tab's view (`bot.slack.home.build_home`) and its buttons' checks, on a
database alone: what it shows, its limits, its escaping, and forged button values."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.slack import home
from db import home as home_store
from db.channels import active_subscriptions, add_subscription, set_schedule
from db.digests import insert_digest
from db.saved import is_saved, save, saved_papers
from db.store import Store
from digests.digest import ensure_channel
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW

TEAM = "T0001"
ME = "U0001"
OTHER = "U0002"
MINE = f"slack:{TEAM}/@{ME}"
THEIRS = f"slack:{TEAM}/@{OTHER}"
AT = stamp(NOW)


def key(user: str = ME, team: str = TEAM) -> str:
    return f"slack:{team}/{user}"


def blocks_of(view: dict[str, Any]) -> list[dict[str, Any]]:
    assert view["type"] == "home"
    blocks: list[dict[str, Any]] = view["blocks"]
    assert 0 < len(blocks) <= 100
    for block in blocks:
        Block.parse(block).validate_json()  # type: ignore[union-attr]
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
    return blocks


def text_of(view: dict[str, Any]) -> str:
    return json.dumps(view, ensure_ascii=False)


def buttons(view: dict[str, Any], action_id: str) -> list[str]:
    return [
        block["accessory"]["value"]
        for block in view["blocks"]
        if block.get("accessory", {}).get("action_id") == action_id
    ]


def paper_ids(db: Store, count: int) -> list[str]:
    return [
        str(row["id"]) for row in db.query("select id from papers order by id limit ?", [count])
    ]


def subscribe(db: Store, channel: str, topic: str, by: str, settings: Any) -> int:
    ensure_channel(db, channel, settings, NOW)
    return int(add_subscription(db, channel, topic, None, by, AT)["id"])


def test_home_shows_topics_channels_saved_papers_and_last_digest(
    seeded_db: Store, catalog: Catalog, settings: Any
) -> None:
    db = seeded_db
    sub = subscribe(db, MINE, "rlhf", "@alice", settings)
    subscribe(db, "slack:T0001/C0001", "offline-rl", "@alice", settings)
    home_store.record_manager(db, "slack:T0001/C0001", key(), AT)
    first, second, third = paper_ids(db, 3)
    save(db, key(), first, "2026-11-29T10:00:00Z")
    save(db, key(), second, "2026-11-30T10:00:00Z")
    save(db, key(OTHER), third, AT)  # someone else's
    items = [{"paper_id": third, "topics": ["rlhf"], "score": 5.0}]
    insert_digest(db, MINE, "2026-W49", AT, ["rlhf"], items)

    view = home.build_home(db, TEAM, ME, catalog=catalog)

    blocks_of(view)
    text = text_of(view)
    assert "RLHF" in text and "`rlhf`" in text  # my topic
    assert buttons(view, home.HOME_UNSUBSCRIBE) == [str(sub)]
    assert "<#C0001>" in text and "Offline RL" in text  # the channel I manage
    assert buttons(view, home.HOME_UNSAVE) == [second, first]  # newest save first
    assert "Saved papers (2)" in text
    assert "2026-W49" in text  # my last personal digest, with its paper
    title = str(db.sqlite.table("papers").get(third)["title"])[:30]
    assert title in text
    for empty in (home.EMPTY_TOPICS, home.EMPTY_CHANNELS, home.EMPTY_SAVED, home.EMPTY_DIGEST):
        assert json.dumps(empty, ensure_ascii=False)[1:-1] not in text


def test_a_user_with_nothing_sees_a_helpful_empty_home(
    seeded_db: Store, catalog: Catalog, settings: Any
) -> None:
    subscribe(seeded_db, THEIRS, "rlhf", "@bob", settings)  # another user's things
    save(seeded_db, key(OTHER), paper_ids(seeded_db, 1)[0], AT)
    view = home.build_home(seeded_db, TEAM, ME, catalog=catalog)
    blocks_of(view)
    text = text_of(view)
    for empty in (home.EMPTY_TOPICS, home.EMPTY_CHANNELS, home.EMPTY_SAVED, home.EMPTY_DIGEST):
        assert json.dumps(empty, ensure_ascii=False)[1:-1] in text
    assert "subscribe --me" in text
    assert buttons(view, home.HOME_UNSAVE) == buttons(view, home.HOME_UNSUBSCRIBE) == []


def add_papers(db: Store, count: int, title: str = "Paper {n}") -> list[str]:
    ids = [f"p{n:016x}" for n in range(1, count + 1)]
    db.sqlite.table("papers").insert_all(
        {
            "id": paper,
            "title": title.format(n=n),
            "abstract": f"Abstract {n}.",
            "abstract_text": f"Abstract {n}.",
            "url": f"https://arxiv.org/abs/2611.{n:05d}",
            "added_at": AT,
        }
        for n, paper in enumerate(ids, start=1)
    )
    return ids


def test_limits_hold_for_500_saved_papers_and_long_lists(
    fresh_db: Store, catalog: Catalog, settings: Any
) -> None:
    db = fresh_db
    ids = add_papers(db, 500, title="A long title about offline reinforcement learning {n} " * 4)
    for n, paper in enumerate(ids):
        save(db, key(), paper, f"2026-11-{1 + n // 24:02d}T{n % 24:02d}:00:00Z")
    topics = [topic.id for topic in catalog.topics][:25]
    assert len(topics) > home.SHOWN_TOPICS
    for topic in topics:
        subscribe(db, MINE, topic, "@alice", settings)
    for n in range(40):
        channel = f"slack:T0001/C{n:04d}"
        for topic in topics:
            subscribe(db, channel, topic, "@alice", settings)
        home_store.record_manager(db, channel, key(), AT)
    items = [{"paper_id": paper, "topics": [topics[0]], "score": 1.0} for paper in ids[:100]]
    insert_digest(db, MINE, "2026-W49", AT, topics, items)

    view = home.build_home(db, TEAM, ME, catalog=catalog)

    blocks = blocks_of(view)
    text = text_of(view)
    assert len(buttons(view, home.HOME_UNSAVE)) == home.SHOWN_SAVED
    assert buttons(view, home.HOME_UNSAVE)[0] == ids[-1]  # the newest save
    assert f"…and {500 - home.SHOWN_SAVED} more saved papers" in text
    # `/papers saved` lists 20 of them, not all: the export is the way to all 500.
    assert "`/papers saved export` gives them all" in text and "saved` lists them all" not in text
    assert "Saved papers (500)" in text
    assert f"…and {len(topics) - home.SHOWN_TOPICS} more topics" in text
    assert f"…and {40 - home.SHOWN_CHANNELS} more channels" in text
    assert f"…and {100 - home.SHOWN_DIGEST_ITEMS} more" in text
    assert len(blocks) <= home.MAX_BLOCKS


def test_lines_are_cut_whole_with_a_count() -> None:
    lines = [f"<https://example.org/{n}|paper {n}>" for n in range(500)]
    text = home._lines(lines, limit=300)
    assert len(text) <= 300
    kept = text.split("\n")
    assert kept[-1] == f"…and {500 - (len(kept) - 1)} more"
    assert all(line in lines for line in kept[:-1])  # no link cut in two


def test_user_text_and_paper_titles_are_escaped(
    fresh_db: Store, catalog: Catalog, settings: Any
) -> None:
    db = fresh_db
    [paper] = add_papers(db, 1, title="<!channel> & <https://evil.example|click> *me*")
    save(db, key(), paper, AT)
    ensure_channel(db, MINE, settings, NOW)
    add_subscription(db, MINE, "custom-x", "<!here> ping & <@U0999>", "@alice", AT)
    view = home.build_home(db, TEAM, ME, catalog=catalog)
    blocks_of(view)
    text = text_of(view)
    assert "<!channel>" not in text and "<!here>" not in text and "<@U0999>" not in text
    assert "&lt;!channel&gt; &amp;" in text
    assert "&lt;!here&gt; ping &amp; &lt;@U0999&gt;" in text


def test_managed_channels_legacy_names_and_boundaries(
    seeded_db: Store, catalog: Catalog, settings: Any
) -> None:
    db = seeded_db
    subscribe(db, "slack:T0001/C0001", "rlhf", "@alice", settings)  # before user ids
    ensure_channel(db, "slack:T0001/C0002", settings, NOW)
    set_schedule(db, "slack:T0001/C0002", "mon", "09:00", "UTC", "@alice", AT)
    subscribe(db, "slack:T0001/C0003", "rlhf", "@bob", settings)
    subscribe(db, "slack:T0002/C0004", "rlhf", "@alice", settings)  # another workspace
    later = "2026-12-01T00:00:00Z"  # managers recorded from then on
    home_store.record_manager(db, "slack:T0002/C0005", key(team="T0001"), later)  # wrong team
    subscribe(db, MINE, "rlhf", "@alice", settings)  # my own digest is not a channel I manage
    home_store.record_manager(db, MINE, key(), later)
    # After managers are recorded by key, a name is no evidence (it may be a later owner's).
    ensure_channel(db, "slack:T0001/C0006", settings, NOW)
    add_subscription(db, "slack:T0001/C0006", "rlhf", None, "@alice", "2026-12-02T00:00:00Z")

    def managed(*names: str) -> list[str]:
        rows = home_store.managed_channels(db, key(), "slack:T0001/", names)
        return [str(row["id"]) for row in rows]

    assert managed() == []
    assert managed("@alice") == ["slack:T0001/C0001", "slack:T0001/C0002"]
    assert managed("@bob") == ["slack:T0001/C0003"]
    view = home.build_home(db, TEAM, ME, catalog=catalog, legacy_names=["@alice", ME])
    text = text_of(view)
    assert "<#C0001>" in text and "<#C0002>" in text and "Mondays at 09:00" in text
    assert "C0003" not in text and "C0004" not in text and "C0005" not in text
    assert "C0006" not in text


def test_record_manager_is_one_row_per_user_and_channel(fresh_db: Store) -> None:
    home_store.record_manager(fresh_db, "slack:T0001/C0001", key(), "2026-11-29T00:00:00Z")
    home_store.record_manager(fresh_db, "slack:T0001/C0001", key(), AT)
    home_store.record_manager(fresh_db, "slack:T0001/C0002", key(ME + "X"), AT)  # U0001X
    assert home_store.recorded_channels(fresh_db, key()) == ["slack:T0001/C0001"]
    managers = "select count(*) from app_state where key like 'manages %'"
    assert fresh_db.execute(managers).fetchone()[0] == 2
    since = fresh_db.execute(
        "select value from app_state where key = ?", [home_store.RECORDED_SINCE]
    )
    assert since.fetchone()[0] == "2026-11-29T00:00:00Z"  # the first record's, kept


def test_unsave_only_ever_touches_the_clickers_list(seeded_db: Store) -> None:
    db = seeded_db
    mine, theirs = paper_ids(db, 2)
    save(db, key(), mine, AT)
    save(db, key(OTHER), theirs, AT)

    forged = home.unsave(db, TEAM, ME, theirs)  # another user's saved paper
    assert forged == home.Outcome(home.NOT_YOURS, changed=False)
    assert is_saved(db, key(OTHER), theirs)
    for bad in ("", "x", f"{mine} ", f"{mine}' or 1=1 --", "p" + "0" * 40):
        assert not home.unsave(db, TEAM, ME, bad).changed
    assert home.unsave(db, "T0002", ME, mine) == forged  # same id, another workspace
    assert is_saved(db, key(), mine)

    assert home.unsave(db, TEAM, ME, mine).changed
    assert saved_papers(db, key()) == []
    assert not home.unsave(db, TEAM, ME, mine).changed  # a second click: nothing to do


def test_unsubscribe_only_ever_removes_the_clickers_own_topic(
    seeded_db: Store, settings: Any
) -> None:
    db = seeded_db
    mine = subscribe(db, MINE, "rlhf", "@alice", settings)
    theirs = subscribe(db, THEIRS, "rlhf", "@bob", settings)
    channel = subscribe(db, "slack:T0001/C0001", "rlhf", "@alice", settings)

    for value in (str(theirs), str(channel), "", "abc", f"{mine} ", "1 or 1=1", "9" * 13):
        assert home.unsubscribe(db, TEAM, ME, value, NOW) == home.Outcome(
            home.NOT_YOURS, changed=False
        )
    assert home.unsubscribe(db, "T0002", ME, str(mine), NOW).changed is False
    assert len(active_subscriptions(db, THEIRS)) == 1
    assert len(active_subscriptions(db, "slack:T0001/C0001")) == 1
    assert len(active_subscriptions(db, MINE)) == 1

    done = home.unsubscribe(db, TEAM, ME, str(mine), NOW)
    assert done.changed and "rlhf" in done.text
    assert active_subscriptions(db, MINE) == []
    assert home.unsubscribe(db, TEAM, ME, str(mine), NOW).changed is False  # already gone


@pytest.mark.parametrize(("team", "user"), [("T0001", "alice"), ("t1", ME), ("T0001", "U1/x")])
def test_build_home_refuses_ids_that_are_not_slacks(
    fresh_db: Store, catalog: Catalog, team: str, user: str
) -> None:
    with pytest.raises(ValueError):
        home.build_home(fresh_db, team, user, catalog=catalog)


def test_long_lines_are_cut_with_the_right_counts(
    fresh_db: Store, catalog: Catalog, settings: Any
) -> None:
    """A digest whose 10 shown items do not fit one section must not count the "…and 90
    more" line as one item ("…and 5 more" for 94 left out); a channel following 25 long
    free-text topics must not lose its whole "Follows:" line to "…and 1 more"."""
    db = fresh_db
    ids = add_papers(db, 100, title="R&D " * 60 + "{n}")  # each `&` escaped to 5 characters
    ensure_channel(db, MINE, settings, NOW)
    items = [{"paper_id": paper, "topics": ["rlhf"], "score": 1.0} for paper in ids]
    insert_digest(db, MINE, "2026-W49", AT, ["rlhf"], items)
    channel = "slack:T0001/C0001"
    ensure_channel(db, channel, settings, NOW)
    for n in range(25):
        add_subscription(db, channel, f"custom-{n}", f"{n} " + "<" * 96, "@alice", AT)
    home_store.record_manager(db, channel, key(), AT)

    blocks = blocks_of(home.build_home(db, TEAM, ME, catalog=catalog))
    sections = [block["text"]["text"] for block in blocks if block["type"] == "section"]
    [digest] = [text for text in sections if "2026-W49" in text]
    numbered = [line for line in digest.split("\n") if line[:1].isdigit()]
    assert 0 < len(numbered) < home.SHOWN_DIGEST_ITEMS  # cut by length, not by count
    assert digest.endswith(f"\n…and {100 - len(numbered)} more")
    [managed] = [text for text in sections if "<#C0001>" in text]
    follows = managed.split("\n")[1]
    assert follows.startswith("Follows: “0 &lt;&lt;")
    shown = follows.count("“")
    assert 0 < shown < 25 and follows.endswith(f", …and {25 - shown} more")


def test_a_stored_channel_id_that_is_not_slacks_is_shown_as_text(
    fresh_db: Store, catalog: Catalog, settings: Any
) -> None:
    """The channel id goes into `<#…>` only once checked: one stored by a path that does
    not validate (the database is not checked) could close the link and ping."""
    db = fresh_db
    odd = "slack:T0001/C1>|x <!channel>"
    ensure_channel(db, "slack:T0001/C0001", settings, NOW)
    db.sqlite.table("channels").insert(
        {**db.sqlite.table("channels").get("slack:T0001/C0001"), "id": odd}
    )
    home_store.record_manager(db, odd, key(), AT)
    text = text_of(home.build_home(db, TEAM, ME, catalog=catalog))
    assert "C1&gt;|x &lt;!channel&gt;" in text and "<!channel>" not in text


def test_a_cut_text_never_ends_inside_an_entity(
    fresh_db: Store, catalog: Catalog, settings: Any
) -> None:
    """The Unsubscribe dialog of a free-text topic of 100 `<` (400 characters escaped)
    is cut to 300 outside an entity: cut inside one, Slack shows "&…" literally."""
    ensure_channel(fresh_db, MINE, settings, NOW)
    add_subscription(fresh_db, MINE, "custom-x", "<" * 100, "@alice", AT)
    view = home.build_home(fresh_db, TEAM, ME, catalog=catalog)
    [button] = [b["accessory"] for b in blocks_of(view) if "accessory" in b]
    question = button["confirm"]["text"]["text"]
    assert len(question) <= home.MAX_CONFIRM_TEXT and question.endswith("&lt;…")
