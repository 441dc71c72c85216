"""Cadence and freshness: daily, weekdays and weekly digests of what is new.

All on a fake clock: period keys across timezones and DST, what counts as new (stored or
published after the previous digest), the first digest's lookback, the backlog and its
"from the archive" mark, empty digests, cadence changes, catch-up, and digest items.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.local import LocalPoster
from bot.scheduler import DigestScheduler
from bot.services import Services
from config.settings import Settings, load_settings
from db import channels as store
from db import open_db
from db.store import Store
from digests.commands import Context, handle
from digests.commands.grammar import VERBS_BY_NAME
from digests.digest import Digest, DigestItem, build_digest, ensure_channel
from digests.ingest import ingest_files
from digests.lookup import item_fields, short_authors, shown_venue
from digests.render import discord, limits, slack
from digests.render.text import digest_text
from digests.schedule import Schedule, ScheduleError, parse_when, period_key
from digests.timestamps import stamp
from digests.topics import Catalog, custom_topic
from tests.conftest import NOW
from tests.fakes.clock import Clock
from tests.fakes.digest import deliver_all
from tests.fakes.scheduler import fires, local_lines

CHANNEL = "local:lab"
LONG_AGO = NOW - timedelta(days=60)


# --- period keys and fire times --------------------------------------------------------


def test_daily_fires_at_local_time_across_dst_and_keys_each_local_date() -> None:
    # Berlin leaves summer time on Sunday 25 October 2026: 09:00 is 07:00 UTC, then 08:00.
    daily = Schedule("mon", "09:00", "Europe/Berlin", "daily")
    times = fires(daily, datetime(2026, 10, 23, 12, 0, tzinfo=UTC), 4)
    assert times == [
        datetime(2026, 10, 24, 7, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 8, 0, tzinfo=UTC),
        datetime(2026, 10, 26, 8, 0, tzinfo=UTC),
        datetime(2026, 10, 27, 8, 0, tzinfo=UTC),
    ]
    assert [daily.key(t) for t in times] == ["2026-10-24", "2026-10-25", "2026-10-26", "2026-10-27"]
    # New York springs forward on 8 March 2026: one fire per day, no day skipped.
    new_york = Schedule("mon", "08:00", "America/New_York", "daily")
    spring = fires(new_york, datetime(2026, 3, 7, 0, 0, tzinfo=UTC), 3)
    assert [new_york.key(t) for t in spring] == ["2026-03-07", "2026-03-08", "2026-03-09"]
    assert [t.hour for t in spring] == [13, 12, 12]


def test_keys_follow_the_channel_timezone_and_weekly_keys_are_unchanged() -> None:
    late = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)  # already Tuesday in Tokyo
    assert period_key(late, "Asia/Tokyo", "daily") == "2026-12-01"
    assert period_key(late, "America/Los_Angeles", "weekdays") == "2026-11-30"
    assert period_key(late, "UTC", "weekly") == "2026-W49"
    sunday = datetime(2026, 12, 6, 23, 30, tzinfo=UTC)  # Monday 7 Dec in Tokyo: next ISO week
    assert period_key(sunday, "Asia/Tokyo", "weekly") == "2026-W50"
    assert Schedule("mon", "09:00", "UTC").key(NOW) == "2026-W49"  # the default cadence


def test_weekdays_fire_monday_to_friday_only() -> None:
    weekdays = Schedule("mon", "09:00", "Europe/Berlin", "weekdays")
    times = fires(weekdays, datetime(2026, 11, 30, 0, 0, tzinfo=UTC), 6)
    assert [t.strftime("%a %d") for t in times] == [
        "Mon 30", "Tue 01", "Wed 02", "Thu 03", "Fri 04", "Mon 07",
    ]  # fmt: skip
    saturday = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    assert weekdays.last_at_or_before(saturday) == datetime(2026, 12, 4, 8, 0, tzinfo=UTC)
    daily = Schedule("mon", "09:00", "Europe/Berlin", "daily")
    assert daily.last_at_or_before(saturday) == datetime(2026, 12, 5, 8, 0, tzinfo=UTC)
    assert daily.last_at_or_before(datetime(2026, 12, 5, 7, 59, tzinfo=UTC)).day == 4


def test_parse_when() -> None:
    assert parse_when("daily") == ("daily", None)
    assert parse_when("Weekdays") == ("weekdays", None)
    assert parse_when("monday") == ("weekly", "mon")
    with pytest.raises(ScheduleError, match="daily, weekdays or a weekday"):
        parse_when("fortnightly")


# --- what is new -----------------------------------------------------------------------


@pytest.fixture
def world(fresh_db: Store, seed_paths: list[Path], settings: Settings) -> Store:
    """The 38 seed papers, all stored long ago."""
    ingest_files(fresh_db, seed_paths, now=LONG_AGO)
    return fresh_db


@pytest.fixture
def big(settings: Settings) -> Settings:
    return replace(settings, digest_size=50)


def subscribe_all(db: Store, settings: Settings, catalog: Catalog, at: datetime = NOW) -> None:
    ensure_channel(db, CHANNEL, settings, at)
    for topic in catalog.ids:
        store.add_subscription(db, CHANNEL, topic, None, "tester", stamp(at))


def matching_ids(db: Store, catalog: Catalog, settings: Settings) -> list[str]:
    """Seed papers that some catalog topic picks, in a stable order."""
    from db.papers import decode
    from digests.digest import select_items

    papers = [decode(row) for row in db.query("select * from papers order by id")]
    items = select_items(papers, list(catalog.topics), threshold=catalog.threshold, per_topic=50)
    return sorted(str(item.paper["id"]) for item in items)


def set_times(db: Store, paper_id: str, added: datetime, published: datetime | None = None) -> None:
    db.execute(
        "update papers set added_at = ?, published_at = ? where id = ?",
        [stamp(added), stamp(published) if published else None, paper_id],
    )


def ids(digest: Digest) -> set[str]:
    return {str(item.paper["id"]) for item in digest.items}


def test_the_first_digest_looks_back_seven_days(
    world: Store, catalog: Catalog, big: Settings
) -> None:
    six, eight = matching_ids(world, catalog, big)[:2]
    set_times(world, six, NOW - timedelta(days=6))
    set_times(world, eight, NOW - timedelta(days=8))
    subscribe_all(world, big, catalog)
    first = build_digest(world, CHANNEL, NOW, catalog=catalog, settings=big)
    assert ids(first) == {six}  # the 2026 papers stored 60 days ago are not "new"
    assert first.since == stamp(NOW - timedelta(days=7))
    longer = replace(big, first_digest_days=9)
    preview = build_digest(
        world, "local:other", NOW, catalog=catalog, settings=longer, preview=True
    )
    assert preview.items == ()  # no topics there; the lookback is a setting
    subscribe_other = ensure_channel(world, "local:other", longer, NOW)
    assert subscribe_other
    for topic in catalog.ids:
        store.add_subscription(world, "local:other", topic, None, "t", stamp(NOW))
    wider = build_digest(world, "local:other", NOW, catalog=catalog, settings=longer, preview=True)
    assert ids(wider) == {six, eight}


def test_new_since_the_previous_digest_stored_or_published(
    world: Store, catalog: Catalog, big: Settings
) -> None:
    previous_at = NOW - timedelta(days=7)
    ensure_channel(world, CHANNEL, big, previous_at)
    # The previous digest reached the channel (the channel followed nothing then).
    previous = build_digest(world, CHANNEL, previous_at, catalog=catalog, settings=big)
    deliver_all(world, previous)
    fetched_late, backfill, unmatched, merged, stored_now = matching_ids(world, catalog, big)[:5]
    # An arXiv paper published before the previous digest, first stored after it: new.
    set_times(world, fetched_late, previous_at + timedelta(days=1), previous_at - timedelta(days=2))
    # A backfill: published long before the previous digest, stored after it: not new.
    set_times(world, backfill, previous_at + timedelta(days=1), previous_at - timedelta(days=30))
    # Stored before the previous digest, which did not pick it: not new (archive).
    set_times(world, unmatched, previous_at - timedelta(days=1))
    # Loaded from a list long ago, then published on arXiv after the previous digest: new.
    set_times(world, merged, LONG_AGO, previous_at + timedelta(days=2))
    set_times(world, stored_now, NOW - timedelta(hours=1))
    subscribe_all(world, big, catalog, at=NOW - timedelta(days=1))
    digest = build_digest(world, CHANNEL, NOW, catalog=catalog, settings=big)
    assert digest.since == stamp(previous_at)
    assert ids(digest) == {fetched_late, merged, stored_now}
    assert not any(item.from_archive for item in digest.items)


def test_a_digest_that_never_reached_the_channel_is_not_the_previous_one(
    world: Store, catalog: Catalog, big: Settings
) -> None:
    paper = matching_ids(world, catalog, big)[0]
    set_times(world, paper, NOW - timedelta(days=2))
    subscribe_all(world, big, catalog, at=NOW - timedelta(days=3))
    printed = build_digest(world, CHANNEL, NOW - timedelta(days=1), catalog=catalog, settings=big)
    assert ids(printed) == {paper}  # recorded, only printed: never queued
    later = build_digest(world, CHANNEL, NOW + timedelta(days=7), catalog=catalog, settings=big)
    assert ids(later) == {paper}  # offered again, not lost
    deliver_all(world, later)
    last = build_digest(world, CHANNEL, NOW + timedelta(days=14), catalog=catalog, settings=big)
    assert ids(last) == set()  # and never twice once delivered


def test_a_paper_stored_in_the_second_a_digest_was_built_is_in_the_next(
    world: Store, catalog: Catalog, big: Settings
) -> None:
    """Stamps are to the second: a paper stored just after a digest's query, in the same
    second, has `added_at == built_at`. It was not in that digest; it must be in the next
    (papers of that second that the digest did take are never repeated: they are claimed)."""
    taken, late = matching_ids(world, catalog, big)[:2]
    subscribe_all(world, big, catalog, at=NOW - timedelta(days=3))
    set_times(world, taken, NOW - timedelta(days=1))
    first = build_digest(world, CHANNEL, NOW, catalog=catalog, settings=big)
    assert ids(first) == {taken}
    deliver_all(world, first)
    set_times(world, late, NOW)  # stored after the query ran, in the same second
    set_times(world, taken, NOW)  # (say, merged into: `added_at` is the digest's second too)
    second = build_digest(world, CHANNEL, NOW + timedelta(days=7), catalog=catalog, settings=big)
    assert ids(second) == {late}


# --- the backlog -----------------------------------------------------------------------


def test_the_backlog_fills_empty_slots_with_marked_archive_papers(
    world: Store, catalog: Catalog, settings: Settings
) -> None:
    small = replace(settings, digest_size=2)
    ensure_channel(world, CHANNEL, small, NOW)
    store.add_subscription(world, CHANNEL, "offline-rl", None, "t", stamp(NOW))
    ranked = build_digest(
        world, CHANNEL, NOW, catalog=catalog, settings=replace(small, first_digest_days=90),
        preview=True,
    )  # fmt: skip
    assert len(ranked.items) == 2
    fresh = str(ranked.items[1].paper["id"])
    set_times(world, fresh, NOW - timedelta(days=1))
    off = build_digest(world, CHANNEL, NOW, catalog=catalog, settings=small, preview=True)
    assert ids(off) == {fresh} and not off.items[0].from_archive
    ctx = Context(world, CHANNEL, "alice", NOW, small, catalog)
    reply = handle("backlog on", ctx)
    assert reply.changed and not reply.ephemeral and "backlog on" in reply.text
    assert handle("backlog on", ctx).text == "The backlog is already on in this channel."
    on = build_digest(world, CHANNEL, NOW, catalog=catalog, settings=small)
    assert [item.from_archive for item in on.items] == [False, True]  # new first
    assert str(on.items[0].paper["id"]) == fresh
    archive_id = str(on.items[1].paper["id"])
    # Recorded with the mark; shown in every format.
    assert [item.from_archive for item in build_digest(
        world, CHANNEL, NOW, catalog=catalog, settings=small).items] == [False, True]  # fmt: skip
    text = digest_text(on)
    assert text.count("from the archive") == 2  # the count line and the item
    assert "1 new paper and 1 from the archive" in text
    [slack_message] = slack.digest_messages(on)
    archive_section = [
        b["text"]["text"] for b in slack_message.blocks
        if b["type"] == "section" and "from the archive_" in b["text"]["text"]
    ]  # fmt: skip
    assert len(archive_section) == 1
    [discord_message] = discord.digest_messages(replace(on, channel="discord:1234567/7654321"))
    marked = [e for e in discord_message.embeds if "From the archive" in e["description"]]
    assert [e["footer"]["text"] for e in marked] == [f"id {archive_id}"]
    handle("backlog off", ctx)
    assert store.get_channel(world, CHANNEL)["backlog"] == 0  # type: ignore[index]


def test_backlog_is_a_change_gated_like_subscribe() -> None:
    assert VERBS_BY_NAME["backlog"].changes and VERBS_BY_NAME["subscribe"].changes
    assert VERBS_BY_NAME["backlog"].params[0].choices == ("on", "off")


# --- empty digests ---------------------------------------------------------------------


def empty_digest(week: str = "2026-11-30") -> Digest:
    topics = (custom_topic("diffusion policy"),)
    return Digest(CHANNEL, week, topics, (), stamp(NOW), recorded=False)


def test_an_empty_digest_is_one_short_line_or_nothing() -> None:
    daily = empty_digest()
    text = digest_text(daily)
    assert text == (
        "Paperboy digest for local:lab, Mon 30 Nov 2026: Nothing new for your topics today "
        '("diffusion policy").'
    )
    [notice] = slack.digest_messages(daily)
    assert len(notice.blocks) == 1 and "Nothing new for your topics today" in notice.text
    [message] = discord.digest_messages(replace(daily, channel="discord:1234567/7654321"))
    assert "\n" not in message.content and message.embeds == []
    assert "this week" in digest_text(empty_digest("2026-W49"))
    assert slack.digest_messages(daily, empty="skip") == []
    assert discord.digest_messages(daily, empty="skip") == []
    from bot.send import platform_messages

    assert platform_messages(daily, "local", "skip") == []
    assert len(platform_messages(daily, "local", "notice")) == 1


# --- cadence changes and catch-up ------------------------------------------------------


def test_changing_cadence_mid_week_neither_repeats_a_period_nor_skips_papers(
    world: Store, catalog: Catalog, big: Settings
) -> None:
    monday = NOW  # Monday 30 Nov 2026, 09:00 UTC
    a, b, c = matching_ids(world, catalog, big)[:3]
    set_times(world, a, monday - timedelta(days=1))
    subscribe_all(world, big, catalog, at=monday - timedelta(days=2))
    weekly = build_digest(world, CHANNEL, monday, catalog=catalog, settings=big)
    assert weekly.week == "2026-W49" and ids(weekly) == {a}
    deliver_all(world, weekly)
    store.set_schedule(world, CHANNEL, None, "11:00", "UTC", "t", stamp(monday), cadence="daily")
    set_times(world, b, monday + timedelta(minutes=30))
    # Monday's daily digest: Monday is covered by the weekly digest built on it.
    same_day = build_digest(
        world, CHANNEL, monday + timedelta(hours=2), catalog=catalog, settings=big
    )
    assert same_day.digest_id == weekly.digest_id
    tuesday = build_digest(
        world, CHANNEL, monday + timedelta(days=1, hours=2), catalog=catalog, settings=big
    )
    assert tuesday.week == "2026-12-01" and ids(tuesday) == {b}  # nothing skipped
    deliver_all(world, tuesday)
    # Back to weekly on Wednesday: week 49 has its digest (Monday's) already.
    set_times(world, c, monday + timedelta(days=1, hours=3))
    store.set_schedule(world, CHANNEL, "mon", "09:00", "UTC", "t", stamp(monday), cadence="weekly")
    wednesday = build_digest(
        world, CHANNEL, monday + timedelta(days=2), catalog=catalog, settings=big
    )
    assert wednesday.digest_id == weekly.digest_id
    next_week = build_digest(
        world, CHANNEL, monday + timedelta(days=7), catalog=catalog, settings=big
    )
    assert next_week.week == "2026-W50" and ids(next_week) == {c}
    count = world.execute("select count(*) from digests where channel = ?", [CHANNEL]).fetchone()[0]
    assert count == 3


def test_a_daily_digest_is_built_once_in_a_repeated_dst_hour(
    world: Store, catalog: Catalog, big: Settings
) -> None:
    ensure_channel(world, CHANNEL, big, LONG_AGO)
    store.set_schedule(
        world, CHANNEL, None, "02:30", "Europe/Berlin", "t", stamp(LONG_AGO), "daily"
    )
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 02:30 CET, the hour again
    one = build_digest(world, CHANNEL, first, catalog=catalog, settings=big)
    two = build_digest(world, CHANNEL, second, catalog=catalog, settings=big)
    assert one.week == "2026-10-25" and one.digest_id == two.digest_id


@pytest.fixture
def services(tmp_path: Path, seed_paths: list[Path], catalog: Catalog) -> Services:
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW - timedelta(days=3))
    settings = load_settings({"PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox")}, dotenv=None)
    return Services(db_path, settings, catalog, clock=Clock(NOW))


def chat(services: Services, text: str, channel: str = CHANNEL) -> str:
    reply = handle(text, services.context(channel, "tester"))
    assert not reply.error, reply.text
    return reply.text + "\n" + "\n".join(reply.lines)


async def test_catch_up_of_a_daily_digest_once(services: Services) -> None:
    clock: Any = services.clock
    clock.now = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    chat(services, "subscribe robotics")
    reply = chat(services, "schedule daily 09:00 Europe/Berlin")
    assert "daily at 09:00 (Europe/Berlin)" in reply
    clock.now = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)  # due Tue 08:00 UTC; up at 11:00
    poster = {"local": LocalPoster(services.settings.local_dir, clock)}
    assert await DigestScheduler(services, poster).catch_up() == [CHANNEL]
    [line] = local_lines(services, "lab")
    assert "Tue 1 Dec 2026" in line["text"]
    keys = [row["week"] for row in services.db().query("select week from digests")]
    assert keys == ["2026-12-01"]
    clock.now += timedelta(minutes=5)  # restarted: nothing again
    assert await DigestScheduler(services, poster).catch_up() == []
    assert len(local_lines(services, "lab")) == 1


async def test_weekdays_catch_up_respects_the_grace_and_a_cadence_change(
    services: Services,
) -> None:
    clock: Any = services.clock
    clock.now = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    chat(services, "subscribe robotics")
    chat(services, "schedule weekdays 09:00 UTC")
    clock.now = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)  # Saturday: due Friday, 27 h ago
    poster = {"local": LocalPoster(services.settings.local_dir, clock)}
    assert await DigestScheduler(services, poster).catch_up() == []
    # A daily digest built Tuesday 09:00, then weekly on Tuesdays 08:00 from 10:00 on:
    # the week's moment (Tuesday 08:00) is covered by the digest built after it.
    clock.now = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
    scheduler = DigestScheduler(services, poster)
    await scheduler.run_digest(CHANNEL)
    assert len(local_lines(services, "lab")) == 1
    clock.now = datetime(2026, 12, 8, 10, 0, tzinfo=UTC)
    chat(services, "schedule tuesday 08:00 UTC")
    assert await DigestScheduler(services, poster).catch_up() == []
    assert len(local_lines(services, "lab")) == 1


async def test_papers_fetched_before_a_digest_are_in_it(services: Services) -> None:
    """The sources fetched before a digest stamp their papers when the fetch runs, after
    the moment the digest fired: a digest built as of that moment left them all out."""
    clock: Any = services.clock
    clock.now = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    chat(services, "subscribe robotics")
    chat(services, "schedule daily 23:59 UTC")
    poster = {"local": LocalPoster(services.settings.local_dir, clock)}
    scheduler = DigestScheduler(services, poster)
    db = services.db()
    from db.papers import decode
    from digests.digest import select_items

    papers = [decode(row) for row in db.query("select * from papers order by id")]
    robotics = [services.catalog.get("robotics")]
    picked = select_items(papers, robotics, threshold=services.catalog.threshold, per_topic=3)  # type: ignore[list-item]
    fetched, first_page, late_page = (str(item.paper["id"]) for item in picked)
    with db.conn:  # committed: the digest is built on another thread's connection
        db.execute("update papers set added_at = ?", [stamp(LONG_AGO)])  # nothing else is new

    async def fetch_robotics(now: datetime, channel: str) -> None:
        clock.now = now + timedelta(seconds=20)  # the fetch took 20 s
        with db.conn:
            db.execute("update papers set added_at = ? where id = ?", [stamp(clock.now), fetched])

    scheduler.fetching.before_digest = fetch_robotics  # type: ignore[method-assign]
    fired = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    await scheduler.run_digest(CHANNEL, now=fired)
    [row] = list(db.query("select * from digests"))
    assert [r["paper_id"] for r in db.query("select paper_id from digest_items")] == [fetched]
    assert row["week"] == "2026-11-30" and row["built_at"] == stamp(fired + timedelta(seconds=20))
    # A fetch that ends past midnight: the digest keeps its date (built as of when it fired).
    late = datetime(2026, 12, 1, 23, 59, 50, tzinfo=UTC)
    await scheduler.run_digest(CHANNEL, now=late)
    rows = list(db.query("select week, built_at from digests order by id"))
    assert [(r["week"], r["built_at"]) for r in rows][1:] == [("2026-12-01", stamp(late))]

    # A fetch the digest stops waiting for: its pages carry its start as `added_at`. The
    # digest is built as of that start, so the pages stored after it are in the next one.
    def store(paper_id: str, added: datetime) -> None:
        with db.conn:
            db.execute("update papers set added_at = ? where id = ?", [stamp(added), paper_id])

    fired = datetime(2026, 12, 2, 23, 0, tzinfo=UTC)
    started = fired + timedelta(seconds=5)
    with db.conn:
        db.execute(
            "insert into sources (name, kind, value, added_at, fetching_by, fetch_started_at) "
            "values ('arxiv:cs.RO', 'arxiv', 'cs.RO', ?, 'other/1', ?)",
            [stamp(LONG_AGO), stamp(started)],
        )

    async def slow_fetch(now: datetime, channel: str) -> None:
        store(first_page, started)
        clock.now = now + timedelta(minutes=5)  # gave up waiting; the fetch goes on

    scheduler.fetching.before_digest = slow_fetch  # type: ignore[method-assign]
    await scheduler.run_digest(CHANNEL, now=fired)
    built = list(db.query("select * from digests order by id"))[-1]
    assert built["built_at"] == stamp(started)
    items = [
        r["paper_id"]
        for r in db.query("select paper_id from digest_items where digest_id = ?", [built["id"]])
    ]
    assert items == [first_page]
    store(late_page, started)  # a page stored after the digest, stamped with the start
    with db.conn:
        db.execute("update sources set fetching_by = null, fetch_started_at = null")
    scheduler.fetching.before_digest = fetch_nothing  # type: ignore[method-assign]
    await scheduler.run_digest(CHANNEL, now=fired + timedelta(days=1))
    built = list(db.query("select * from digests order by id"))[-1]
    items = [
        r["paper_id"]
        for r in db.query("select paper_id from digest_items where digest_id = ?", [built["id"]])
    ]
    assert items == [late_page]
    await scheduler.stop()


async def fetch_nothing(now: datetime, channel: str) -> None:
    return None


# --- digest items ----------------------------------------------------------------------


def test_authors_first_three_then_et_al() -> None:
    assert short_authors(["Ann", "Bob", "Cy", "Di"]) == "Ann, Bob, Cy et al."
    assert short_authors(["Ann", "Bob", "Cy"]) == "Ann, Bob, Cy"
    assert short_authors([]) == "" and short_authors(None) == ""
    assert len(short_authors(["x" * 5000] * 5)) < 300


def test_venue_or_arxiv_or_nothing() -> None:
    assert shown_venue({"venue": "ICLR", "year": 2025}) == "ICLR 2025"
    arxiv = "https://arxiv.org/abs/2611.01234"
    assert shown_venue({"venue": None, "published_at": stamp(NOW), "arxiv_url": arxiv}) == "arXiv"
    assert shown_venue({"venue": None, "arxiv_url": arxiv}) == ""  # from a file
    assert shown_venue({"venue": None, "published_at": stamp(NOW)}) == ""  # a journal's feed
    assert shown_venue({"venue": None}) == ""


def arxiv_paper(**extra: Any) -> dict[str, Any]:
    return {
        "id": "p0123456789",
        "title": "Offline policies from preferences",
        "venue": None,
        "year": 2026,
        "tldr": "We learn offline policies from preferences.",
        "abstract": "We learn offline policies from preferences.",
        "authors": ["Ann Author", "Bob Builder", "Cy Coder", "Di Doer"],
        "url": "https://arxiv.org/abs/2611.01234",
        "arxiv_url": "https://arxiv.org/abs/2611.01234",
        "pdf_url": "https://arxiv.org/pdf/2611.01234",
        "code_url": "https://github.com/example/offline-prefs",
        "published_at": stamp(NOW - timedelta(days=1)),
        **extra,
    }


def test_items_show_authors_venue_and_links_in_every_format() -> None:
    topic = custom_topic("preferences")
    paper = arxiv_paper()
    digest = Digest(
        CHANNEL, "2026-11-30", (topic,), (DigestItem(paper, (topic,), 3.0),), stamp(NOW),
        recorded=False,
    )  # fmt: skip
    text = digest_text(digest)
    assert "Ann Author, Bob Builder, Cy Coder et al." in text and "Di Doer" not in text
    assert "arXiv · " in text
    for link in (paper["url"], paper["pdf_url"], paper["code_url"]):
        assert link in text
    [message] = slack.digest_messages(digest)
    assert limits.slack_problems(message.payload()) == []
    section = next(b["text"]["text"] for b in message.blocks if "Bob Builder" in str(b))
    assert f"<{paper['pdf_url']}|PDF>" in section and f"<{paper['code_url']}|code>" in section
    [dmessage] = discord.digest_messages(replace(digest, channel="discord:1234567/7654321"))
    [embed] = dmessage.embeds
    assert f"[PDF]({paper['pdf_url']})" in embed["description"]
    assert embed["fields"][0] == {"name": "Venue", "value": "arXiv", "inline": True}
    # A file paper with no venue and no links: no empty Venue field (Discord refuses it).
    bare = {**paper, "published_at": None, "url": None, "pdf_url": None, "code_url": None}
    [bare_message] = discord.digest_messages(
        replace(digest, channel="discord:1234567/7654321", items=(DigestItem(bare, (topic,), 3.0),))
    )
    assert limits.discord_problems(bare_message.payload()) == []
    assert [f["name"] for f in bare_message.embeds[0]["fields"]] == ["Topics"]


def test_the_title_links_to_the_papers_page_not_its_code() -> None:
    topic = custom_topic("preferences")
    forum = "https://openreview.net/forum?id=abc123"
    for paper, page in (
        (arxiv_paper(url=None), "https://arxiv.org/abs/2611.01234"),
        (arxiv_paper(url=None, arxiv_url=None, openreview_url=forum), forum),
    ):
        digest = Digest(
            CHANNEL, "2026-11-30", (topic,), (DigestItem(paper, (topic,), 3.0),), stamp(NOW),
            recorded=False,
        )  # fmt: skip
        [message] = slack.digest_messages(digest)
        assert f"*<{page}|Offline policies from preferences>*" in json.dumps(message.blocks)
        [dmessage] = discord.digest_messages(replace(digest, channel="discord:1234567/7654321"))
        assert dmessage.embeds[0]["url"] == page
        assert item_fields(paper)["url"] == page


def test_long_items_keep_every_platform_limit() -> None:
    topic = custom_topic("preferences")
    huge = arxiv_paper(
        authors=["N" * 3000] * 40,
        venue="V" * 2000,
        url="https://example.org/" + "u" * 3000,
        pdf_url="https://example.org/" + "p" * 450,
        code_url="https://example.org/" + "c" * 450,
        tldr="t " * 3000,
    )
    items = tuple(
        DigestItem({**huge, "id": f"p{i:010d}"}, (topic,), 3.0, from_archive=bool(i % 2))
        for i in range(60)
    )
    digest = Digest(CHANNEL, "2026-11-30", (topic,), items, stamp(NOW), recorded=False)
    messages = slack.digest_messages(digest)
    for message in messages:
        assert limits.slack_problems(message.payload()) == []
    shown = json.dumps([message.payload() for message in messages])
    # Within the limits, and still every item's links: a long venue is cut, not the links.
    assert shown.count("|PDF>") == shown.count("|code>") == 60
    dmessages = discord.digest_messages(replace(digest, channel="discord:1234567/7654321"))
    for dmessage in dmessages:
        assert limits.discord_problems(dmessage.payload()) == []
    dshown = json.dumps([dmessage.payload() for dmessage in dmessages])
    assert dshown.count("[PDF](") == dshown.count("[code](") == 60
    assert shown_venue(huge).endswith("…") and len(shown_venue(huge)) <= 100


def test_json_carries_every_field_the_text_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(item_fields(arxiv_paper())) >= {
        "url", "pdf_url", "code_url", "tldr", "authors", "venue", "year",
    }  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PAPERBOY_DB", raising=False)
    runner = CliRunner()
    db = str(tmp_path / "j.db")

    def run(*args: str) -> str:
        result = runner.invoke(main, [*args, "--db", db], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    samples = Path(__file__).resolve().parents[2] / "digests" / "samples"
    run("ingest", str(samples / "iclr2025.txt"))
    run("chat", "--channel", CHANNEL, "subscribe offline-rl")
    fresh = json.loads(run("digest", "--channel", CHANNEL, "--preview", "--format", "json"))
    assert fresh["items"] and not any(item["from_archive"] for item in fresh["items"])
    item = fresh["items"][0]
    assert item["venue"] == "ICLR 2025" and item["year"] == 2025 and item["tldr"]
    with sqlite3.connect(db) as conn:  # everything stored long ago
        conn.execute("update papers set added_at = '2026-01-01T00:00:00+00:00'")
    stale = json.loads(run("digest", "--channel", CHANNEL, "--preview", "--format", "json"))
    assert stale["items"] == []
    run("chat", "--channel", CHANNEL, "backlog on")
    archive = json.loads(run("digest", "--channel", CHANNEL, "--preview", "--format", "json"))
    assert archive["items"] and all(item["from_archive"] for item in archive["items"])
    text = run("digest", "--channel", CHANNEL, "--preview")
    assert "from the archive" in text


async def test_discord_backlog_needs_manage_channels(bot: Any, fake_discord: Any) -> None:
    from bot.discordbot.commands import NEEDS_MANAGE_CHANNELS
    from tests.fakes.discord_interactions import CHANNEL as DISCORD_CHANNEL
    from tests.fakes.discord_interactions import MANAGE_CHANNELS, dispatch, interaction

    def backlog() -> int:
        row = store.get_channel(open_db(bot.services.db_path), DISCORD_CHANNEL)
        return int(row["backlog"]) if row else 0

    await dispatch(bot, fake_discord, interaction("backlog", {"state": "on"}, permissions=0))
    [refused] = fake_discord.callbacks()
    assert refused["data"]["content"] == NEEDS_MANAGE_CHANNELS and backlog() == 0
    await dispatch(
        bot, fake_discord, interaction("backlog", {"state": "on"}, permissions=MANAGE_CHANNELS)
    )
    assert backlog() == 1


def test_list_and_preview_tell_the_cadence_and_backlog(
    seeded_db: Store, settings: Settings, catalog: Catalog
) -> None:
    ctx = Context(seeded_db, CHANNEL, "alice", NOW, settings, catalog)
    handle("subscribe offline-rl", ctx)
    changed = handle("schedule weekdays 8:30 Europe/Berlin", ctx)
    assert (
        changed.changed and "weekdays (Monday to Friday) at 08:30 (Europe/Berlin)" in changed.text
    )
    assert "next on Tue 1 Dec 2026, 08:30 CET" in changed.lines[0]
    listed = handle("list", ctx)
    assert any("Backlog: off" in line for line in listed.lines)
    preview = handle("digest", ctx)
    assert preview.text.startswith("The digest for Mon 30 Nov 2026 (a preview")
    assert preview.digest is not None and preview.digest.items  # stored at NOW: new
    bad = handle("schedule fortnightly 09:00", ctx)
    assert bad.error and "daily, weekdays or a weekday" in bad.text
    assert store.get_channel(seeded_db, CHANNEL)["cadence"] == "weekdays"  # type: ignore[index]
