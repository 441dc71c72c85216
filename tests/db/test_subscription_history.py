"""A channel's subscription history stays bounded: 300 subscribe/unsubscribe cycles leave
a few rows per topic (the first, the latest removed, the active one, and those a Home
still matches managers' display names against), the next digest is the same as after a
single subscribe, and m014 collapses the rows older databases already hold."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from config.settings import Settings
from db.channels import (
    active_subscriptions,
    add_subscription,
    custom_texts,
    ensure_channel,
    remove_subscription,
)
from db.home import RECORDED_SINCE, managed_channels
from db.migrations import migrations
from digests.commands import Context, handle
from digests.digest import build_digest
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW

CYCLES = 300
SLACK = "slack:T0001/C0001"


def rows(db: Database, channel: str, topic_id: str | None = None) -> list[dict[str, Any]]:
    where, params = "channel = ?", [channel]
    if topic_id is not None:
        where, params = where + " and topic_id = ?", [channel, topic_id]
    return [
        dict(r) for r in db.query(f"select * from subscriptions where {where} order by id", params)
    ]


def cycle(
    db: Database, channel: str, settings: Settings, catalog: Catalog, text: str, n: int
) -> None:
    """`n` subscribe/unsubscribe cycles of `text`, a minute apart, by the command."""
    for i in range(n):
        at = NOW - timedelta(days=3) + timedelta(minutes=2 * i)
        for verb, later in (("subscribe", 0), ("unsubscribe", 1)):
            ctx = Context(db, channel, "alice", at + timedelta(minutes=later), settings, catalog)
            reply = handle(f"{verb} {text}", ctx)
            assert reply.changed, reply


def test_300_cycles_leave_a_bounded_number_of_rows_and_the_same_next_digest(
    seeded_db: Database, settings: Settings, catalog: Catalog
) -> None:
    db = seeded_db
    cycled, once = "local:cycled", "local:once"
    cycle(db, cycled, settings, catalog, "offline-rl", CYCLES)
    cycle(db, cycled, settings, catalog, '"diffusion policy"', CYCLES)
    last = NOW - timedelta(hours=1)
    for channel in (cycled, once):
        for text in ("offline-rl", '"diffusion policy"'):
            reply = handle(
                f"subscribe {text}", Context(db, channel, "bob", last, settings, catalog)
            )
            assert reply.changed, reply
    assert len(rows(db, cycled)) <= 2 * 3, len(rows(db, cycled))  # was 2 * 301
    history = rows(db, cycled, "offline-rl")
    assert [r["removed_at"] is None for r in history] == [False, False, True]
    first, latest, active = history
    assert first["created_at"] == stamp(NOW - timedelta(days=3))  # who first subscribed
    assert latest["removed_at"] == stamp(NOW - timedelta(days=3, minutes=-(2 * CYCLES - 1)))
    # The active row is this subscription's: the scheduler's catch-up and `list` read it.
    assert (active["created_by"], active["created_at"]) == ("bob", stamp(last))
    assert custom_texts(db, cycled) == ["diffusion policy"]
    # What the next digest holds is what a single subscribe gives.
    digests = [
        build_digest(db, channel, NOW, catalog=catalog, settings=settings)
        for channel in (cycled, once)
    ]
    cycled_items, once_items = ([(i.paper["id"], i.topics) for i in d.items] for d in digests)
    assert cycled_items == once_items and cycled_items
    assert digests[0].topics == digests[1].topics
    listed = [
        handle("list", Context(db, channel, "bob", NOW, settings, catalog)).text
        for channel in (cycled, once)
    ]
    assert listed[0] == listed[1]


def test_a_personal_digest_and_a_slack_channel_stay_bounded_too(fresh_db: Database) -> None:
    """A personal digest's rows are bounded with no manager recorded (none ever is for
    one: a Home never lists it as managed); a Slack channel's once one is."""
    db = fresh_db
    personal = "slack:T0001/@U0001"
    defaults = {"weekday": "mon", "time": "09:00", "timezone": "UTC"}
    for channel in (personal, SLACK):
        ensure_channel(db, channel, "slack", defaults, stamp(NOW))

    def cycles(channel: str, start: datetime) -> None:
        for i in range(CYCLES):
            at = stamp(start + timedelta(minutes=i))
            row = add_subscription(db, channel, "offline-rl", None, "@alice", at)
            remove_subscription(db, int(row["id"]), "@alice", at)

    cycles(personal, NOW - timedelta(days=5))
    assert len(rows(db, personal)) <= 3
    # A manager recorded before the cycles, as the first Slack channel change records one.
    db.execute(
        "insert into app_state (key, value, updated_at) values (?, ?, ?)",
        [RECORDED_SINCE, stamp(NOW - timedelta(days=5)), stamp(NOW)],
    )
    cycles(SLACK, NOW - timedelta(days=4))
    assert len(rows(db, SLACK)) <= 3


def test_rows_a_home_matches_display_names_against_are_kept(fresh_db: Database) -> None:
    """Before the first recorded manager, a Home finds a channel's managers by the display
    names on its rows (db.home.managed_channels): those rows are never pruned."""
    db = fresh_db
    ensure_channel(db, SLACK, "slack", {"weekday": "mon", "time": "09:00"}, stamp(NOW))
    since = NOW - timedelta(days=10)
    for by, days in (("@first", 30), ("@old", 20)):  # two cycles before `since`
        at = stamp(NOW - timedelta(days=days))
        row = add_subscription(db, SLACK, "offline-rl", None, by, at)
        remove_subscription(db, int(row["id"]), by, at)
    db.execute(
        "insert into app_state (key, value, updated_at) values (?, ?, ?)",
        [RECORDED_SINCE, stamp(since), stamp(since)],
    )
    for i in range(CYCLES):
        at = stamp(since + timedelta(minutes=i + 1))
        row = add_subscription(db, SLACK, "offline-rl", None, "@alice", at)
        remove_subscription(db, int(row["id"]), "@alice", at)
    add_subscription(db, SLACK, "offline-rl", None, "@alice", stamp(NOW))
    assert [r["created_by"] for r in rows(db, SLACK)] == ["@first", "@old", "@alice", "@alice"]
    for name in ("@first", "@old"):
        found = managed_channels(db, "slack:T0001/U0009", "slack:T0001/", [name])
        assert [c["id"] for c in found] == [SLACK], name


def test_m014_collapses_the_history_older_databases_hold(tmp_path: Path) -> None:
    """A database at m013 with 200 channels × 2 topics × 100 cycles (40,000 rows, 400
    active): m014 keeps each topic's first, latest removed and active rows, and a Slack
    channel's rows older than the first recorded manager; nothing else changes."""
    db = Database(tmp_path / "old.db")
    migrations.apply(db, stop_before="m014_subscription_history")
    since = NOW - timedelta(days=10)
    db.execute(
        "insert into app_state (key, value, updated_at) values (?, ?, ?)",
        [RECORDED_SINCE, stamp(since), stamp(since)],
    )
    channels = [f"local:c{n}" for n in range(198)] + [SLACK, "slack:T0001/@U0001"]
    db["channels"].insert_all(
        {"id": c, "platform": c.split(":")[0], "created_at": stamp(NOW)} for c in channels
    )
    subscriptions = []
    for channel in channels:
        for topic in ("offline-rl", "custom:diffusion-policy"):
            for i in range(100):
                # The first 3 cycles before `since`, the rest after it.
                at = stamp(since + timedelta(minutes=i - 3))
                subscriptions.append(
                    {"channel": channel, "topic_id": topic, "created_by": f"@u{i}",
                     "created_at": at, "removed_by": f"@u{i}", "removed_at": at}
                )  # fmt: skip
            subscriptions.append(
                {"channel": channel, "topic_id": topic, "created_by": "@now", "created_at": stamp(NOW)}
            )  # fmt: skip
    db["subscriptions"].insert_all(subscriptions, batch_size=5000)
    db.conn.commit()
    active_before = {c: active_subscriptions(db, c) for c in channels}
    other_tables = {t: list(db[t].rows) for t in ("channels", "app_state")}
    started = time.perf_counter()
    migrations.apply(db)
    assert time.perf_counter() - started < 30
    assert {c: active_subscriptions(db, c) for c in channels} == active_before
    assert {t: list(db[t].rows) for t in ("channels", "app_state")} == other_tables
    for channel in channels:
        for topic in ("offline-rl", "custom:diffusion-policy"):
            kept = [r["created_by"] for r in rows(db, channel, topic)]
            if channel == SLACK:  # its 3 rows before `since` are matched by name: kept
                assert kept == ["@u0", "@u1", "@u2", "@u99", "@now"], kept
            else:
                assert kept == ["@u0", "@u99", "@now"], (channel, kept)
    assert db.execute("select count(*) from subscriptions").fetchone()[0] == 199 * 2 * 3 + 2 * 5
    indexes = {i.name for i in db["subscriptions"].indexes}
    assert "subscriptions_history" in indexes
