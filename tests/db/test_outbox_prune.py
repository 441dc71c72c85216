"""Pruning the outbox (the store must hold a year): a sent message's payload is
emptied once it is `PAPERBOY_OUTBOX_KEEP_DAYS` old; its row, and every column anything
reads again (papers, platform id, state, times), stays. Pending, sending, paused and given
up messages are never touched."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bot.delivery import deliver_channel
from bot.local import LocalPoster
from bot.ratelimits import SendLimits
from bot.scheduler import PRUNE_FIRST_MINUTES, PRUNE_HOURS, DigestScheduler
from bot.services import Services
from config.settings import SettingsError, load_settings
from db import digests as digest_store
from db import open_db, outbox
from db.store import Store
from digests.channels import ChannelRef
from digests.commands import handle
from digests.digest import ensure_channel
from digests.ingest import ingest_files
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import Clock
from tests.fakes.delivery import Poster, VirtualTime

CHANNEL = "slack:T0001/C0001"
OLD = NOW - timedelta(days=40)  # older than the default 30 days
RECENT = NOW - timedelta(days=3)
CUT = stamp(NOW - timedelta(days=30))


@pytest.fixture
def db(tmp_path: Path) -> Store:
    return open_db(tmp_path / "paperboy.db")


def queue(db: Store, week: str, parts: int, at: datetime, channel: str = CHANNEL) -> int:
    """A digest of `parts` messages queued at `at`, each carrying one paper id; its id."""
    ensure_channel(db, channel, load_settings({}, dotenv=None), at)
    row = digest_store.insert_digest(db, channel, week, stamp(at), [], [])
    messages = [
        ({"text": f"{week} part {part}", "blocks": ["x" * 500]}, [f"{week}-p{part}"])
        for part in range(1, parts + 1)
    ]
    outbox.enqueue(db, channel, int(row["id"]), messages, stamp(at))
    return int(row["id"])


def rows(db: Store) -> dict[tuple[str, int], dict[str, Any]]:
    """Every outbox row by (its digest's week, part)."""
    return {
        (str(row["week"]), int(row["part"])): dict(row)
        for row in db.query("select o.*, d.week from outbox o join digests d on d.id = o.digest_id")
    }


def part_id(db: Store, digest_id: int, part: int) -> int:
    return int(
        db.execute(
            "select id from outbox where digest_id = ? and part = ?", [digest_id, part]
        ).fetchone()[0]
    )


def send(db: Store, digest_id: int, part: int, at: datetime) -> None:
    assert outbox.mark_sent(db, part_id(db, digest_id, part), f"ts-{digest_id}-{part}", stamp(at))


def every_state(db: Store) -> None:
    """Old messages in every state, a recent sent one, and an old one already emptied."""
    send(db, queue(db, "2026-W40", 2, OLD), 1, OLD)  # part 2 stays pending
    send(db, queue(db, "2026-W41", 1, OLD), 1, OLD)
    digest = queue(db, "2026-W42", 1, OLD)
    outbox.mark_failed(db, part_id(db, digest, 1), "msg_blocks_too_long")
    digest = queue(db, "2026-W43", 1, OLD)
    [claimable] = db.query("select * from outbox where id = ?", [part_id(db, digest, 1)])
    assert outbox.claim(db, claimable, "host:1", stamp(NOW))
    queue(db, "2026-W44", 1, OLD, channel="slack:T0001/C0002")
    outbox.pause_channel(db, "slack:T0001/C0002", "channel_not_found")
    send(db, queue(db, "2026-W48", 1, RECENT), 1, RECENT)


def test_only_sent_messages_older_than_the_cut_lose_their_payloads(db: Store) -> None:
    every_state(db)
    before = rows(db)
    assert outbox.prunable(db, CUT)[0] == 2
    assert outbox.prune_sent(db, CUT) == 2
    after = rows(db)
    assert set(after) == set(before)  # no row deleted
    emptied = {key for key in after if after[key]["payload"] != before[key]["payload"]}
    assert emptied == {("2026-W40", 1), ("2026-W41", 1)}
    for key in emptied:
        assert after[key]["payload"] == outbox.PRUNED_PAYLOAD
        # everything but the payload is as it was: papers, platform id, state, times
        assert {**after[key], "payload": None} == {**before[key], "payload": None}
    states = {key: after[key]["state"] for key in after if key not in emptied}
    assert states == {
        ("2026-W40", 2): "pending",
        ("2026-W42", 1): "failed",  # given up: kept whole, it explains the failure
        ("2026-W43", 1): "sending",
        ("2026-W44", 1): "paused",
        ("2026-W48", 1): "sent",  # sent 3 days ago
    }
    assert outbox.prunable(db, CUT) == (0, 0)
    assert outbox.prune_sent(db, CUT) == 0  # again: nothing left to empty


def test_readers_of_a_sent_message_still_work_after_its_payload_is_emptied(
    db: Store,
) -> None:
    """Status's last delivery and the catch-up's "queued already" decode the payload."""
    digest = queue(db, "2026-W40", 1, OLD)
    send(db, digest, 1, OLD)
    assert outbox.prune_sent(db, CUT) == 1
    last = outbox.last_delivery(db, CHANNEL)
    assert last is not None
    assert (last["state"], last["payload"], last["paper_ids"]) == ("sent", {}, ["2026-W40-p1"])
    assert [m["part"] for m in outbox.messages_for_digest(db, digest)] == [1]
    assert outbox.claimed_paper_ids(db, CHANNEL) == {"2026-W40-p1"}


def test_a_prune_goes_in_batches_and_a_stop_ends_it_between_them(
    db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 old sent messages (a pending one among them) in batches of 3: three write
    transactions of at most 3 updates each; a stop after the first leaves the rest."""
    for week in range(30, 38):
        send(db, queue(db, f"2026-W{week}", 1, OLD), 1, OLD)
        if week == 33:
            queue(db, "2026-W33b", 1, OLD)  # pending, between them
    real = db.write
    changed: list[int] = []  # payloads emptied by each write transaction

    def emptied(database: Store) -> int:
        return int(
            database.execute("select count(*) from outbox where payload = '{}'").fetchone()[0]
        )

    def counted() -> Any:
        before = emptied(db)
        context = real()

        class Spy:
            def __enter__(self) -> Store:
                return context.__enter__()

            def __exit__(self, *exc: Any) -> Any:
                done = context.__exit__(*exc)
                changed.append(emptied(db) - before)
                return done

        return Spy()

    monkeypatch.setattr(db, "write", counted)
    assert outbox.prune_sent(db, CUT, batch=3, stop=lambda: len(changed) == 1) == 3
    assert sum(r["payload"] == "{}" for r in rows(db).values()) == 3
    assert outbox.prune_sent(db, CUT, batch=3) == 5
    assert changed == [3, 3, 2]  # the stopped run's one batch, then two more
    assert rows(db)[("2026-W33b", 1)]["payload"] != "{}"
    assert all(row["payload"] == "{}" for row in rows(db).values() if row["state"] == "sent")


def test_a_prune_gives_back_the_pages_not_only_the_bytes(db: Store) -> None:
    """A digest message (a few KB) fills most of a page: emptied in place, each row would
    keep its page, nearly empty, for good (new rows go at the end of the table). Pruned,
    the rows share pages again, and the pages freed are reused by later writes."""
    try:
        db.execute("select count(*) from dbstat").fetchone()
    except Exception:
        pytest.skip("this SQLite has no dbstat table")

    def pages() -> int:
        query = "select count(*) from dbstat where name = 'outbox'"
        return int(db.execute(query).fetchone()[0])

    ensure_channel(db, CHANNEL, load_settings({}, dotenv=None), OLD)
    for week in range(1, 61):
        row = digest_store.insert_digest(db, CHANNEL, f"2025-W{week:02d}", stamp(OLD), [], [])
        big = [({"blocks": ["x" * 3000]}, [f"p{week}"])]
        outbox.enqueue(db, CHANNEL, int(row["id"]), big, stamp(OLD))
        send(db, int(row["id"]), 1, OLD)
    assert pages() >= 60  # a page a message
    assert outbox.prune_sent(db, CUT, batch=25) == 60
    assert pages() <= 5
    assert outbox.claimed_paper_ids(db, CHANNEL) == {f"p{week}" for week in range(1, 61)}


def test_a_row_whose_digest_is_missing_is_pruned_too(db: Store) -> None:
    """A row the foreign keys would refuse today (its digest gone, written with the checks
    off) is rewritten as it was: the prune neither stops at it nor drops it."""
    send(db, queue(db, "2026-W40", 1, OLD), 1, OLD)
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute("update outbox set digest_id = 999")
    db.execute("PRAGMA foreign_keys = ON")
    assert outbox.prune_sent(db, CUT) == 1
    [row] = db.query("select digest_id, payload, paper_ids from outbox")
    assert row == {"digest_id": 999, "payload": "{}", "paper_ids": '["2026-W40-p1"]'}
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


async def test_a_later_part_still_threads_under_a_pruned_part_one(db: Store) -> None:
    """Part 1 went out 40 days ago, then the channel was paused (its part 2 held) and is
    resumed today: part 2 goes out under part 1's platform id, part 1's payload pruned."""
    digest = queue(db, "2026-W40", 2, OLD)
    send(db, digest, 1, OLD)
    outbox.pause_channel(db, CHANNEL, "not_in_channel")
    assert outbox.prune_sent(db, CUT) == 1
    outbox.resume_channel(db, CHANNEL)
    time = VirtualTime()

    class Threads(Poster):
        threads: ClassVar[list[str | None]] = []

        async def send(
            self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
        ) -> str:
            self.threads.append(thread_of)
            return await super().send(channel, payload, thread_of)

    poster = Threads(SendLimits(5.0, monotonic=time.monotonic, sleep=time.sleep))
    [result] = await time.run([deliver_channel(db, poster, CHANNEL, NOW)])
    assert result.sent == 1
    assert poster.posted == ["2026-W40 part 2"]  # paused: its payload was kept
    assert poster.threads == [f"ts-{digest}-1"]


# --- through the scheduler: never the same paper twice -------------------------------


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


def services_for(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock, **env: str
) -> Services:
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW - timedelta(days=30))
    settings = load_settings(
        {"PAPERBOY_LOCAL_DIR": str(tmp_path / "out"), "PAPERBOY_FIRST_DIGEST_DAYS": "60", **env},
        dotenv=None,
    )
    return Services(db_path, settings, catalog, clock=clock)


def picked(services: Services, channel: str) -> list[set[str]]:
    """Each digest's papers, oldest digest first."""
    found: dict[int, set[str]] = {}
    for row in services.db().query(
        "select digest_id, paper_id from digest_items where channel = ? order by digest_id",
        [channel],
    ):
        found.setdefault(int(row["digest_id"]), set()).add(str(row["paper_id"]))
    return list(found.values())


async def test_a_digest_after_a_prune_repeats_no_paper(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock
) -> None:
    """Five weeks after a digest, its message pruned, the channel turns the backlog on
    (archive papers fill its digests) and follows a third topic: its next digest has the
    new topic's papers, and none of the first digest's (a prune that dropped the rows, or
    their papers, would send them again: from the archive, or as picked but undelivered)."""
    services = services_for(tmp_path, seed_paths, catalog, clock)
    channel = "local:lab"
    for text in ("subscribe offline-rl", "subscribe robotics"):
        assert not handle(text, services.context(channel, "tester")).error
    poster = {"local": LocalPoster(services.settings.local_dir, clock)}
    scheduler = DigestScheduler(services, poster)
    await scheduler.run_digest(channel)  # week 1: sent
    [first] = picked(services, channel)
    assert first
    clock.now = NOW + timedelta(days=35)
    assert await scheduler.prune_outbox() == 1  # week 1's message, 35 days old
    payloads = [r["payload"] for r in services.db().query("select payload from outbox")]
    assert payloads == ["{}"]
    for text in ("backlog on", "subscribe llm-reasoning-agents"):
        assert not handle(text, services.context(channel, "tester")).error
    await scheduler.run_digest(channel)
    [_, second] = picked(services, channel)
    assert second  # the new topic's papers
    assert not first & second


async def test_the_scheduler_prunes_with_the_setting_and_zero_keeps_everything(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock
) -> None:
    services = services_for(tmp_path, seed_paths, catalog, clock, PAPERBOY_OUTBOX_KEEP_DAYS="7")
    db = services.db()
    send(db, queue(db, "2026-W48", 1, NOW - timedelta(days=8)), 1, NOW - timedelta(days=8))
    send(db, queue(db, "2026-W49", 1, NOW - timedelta(days=6)), 1, NOW - timedelta(days=6))
    forever = DigestScheduler(
        Services(
            services.db_path,
            load_settings({"PAPERBOY_OUTBOX_KEEP_DAYS": "0"}, dotenv=None),
            catalog,
            clock=clock,
        ),
        {},
    )
    assert await forever.prune_outbox() == 0
    assert await DigestScheduler(services, {}).prune_outbox() == 1  # the one 8 days old
    assert [r["week"] for r in rows(db).values() if r["payload"] == "{}"] == ["2026-W48"]


async def test_a_stop_ends_the_schedulers_prune_between_batches(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The prune runs in a thread the exit may abandon: it looks at the scheduler's stop
    between batches, and a halted scheduler starts none."""
    services = services_for(tmp_path, seed_paths, catalog, clock)
    db = services.db()
    for week in (40, 41, 42):
        send(db, queue(db, f"2026-W{week}", 1, OLD), 1, OLD)
    scheduler = DigestScheduler(services, {})
    real = outbox.prune_sent

    def one_a_batch(database: Store, before: str, **kwargs: Any) -> int:
        stop = kwargs["stop"]

        def halting() -> bool:  # the stop comes after the first batch
            query = "select count(*) from outbox where payload = '{}'"
            if database.execute(query).fetchone()[0]:
                scheduler.halt()
            return bool(stop())

        return real(database, before, batch=1, stop=halting)

    monkeypatch.setattr(outbox, "prune_sent", one_a_batch)
    assert await scheduler.prune_outbox() == 1
    assert await scheduler.prune_outbox() == 0  # halted: none starts


async def test_the_running_scheduler_prunes_once_a_day(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, clock: Clock
) -> None:
    services = services_for(tmp_path, seed_paths, catalog, clock)
    scheduler = DigestScheduler(services, {})
    await scheduler.start()
    try:
        job = scheduler.scheduler.get_job("outbox-prune")
        assert job is not None and job.func == scheduler._prune
        assert job.trigger.interval == timedelta(hours=PRUNE_HOURS)
        # A run that starts late (the loop busy when it is due) still runs: APScheduler's
        # default skips one more than a second late, and that day's prune with it.
        assert job.misfire_grace_time >= 3600
        wait = job.next_run_time - datetime.now(UTC)
        assert (
            timedelta(minutes=PRUNE_FIRST_MINUTES - 1)
            < wait
            <= timedelta(minutes=PRUNE_FIRST_MINUTES)
        )
    finally:
        await scheduler.stop(timeout=0.1)
    await asyncio.sleep(0)


# --- the command and the setting --------------------------------------------------------


def old_sent_database(path: Path) -> Store:
    database = open_db(path)
    send(database, queue(database, "2026-W40", 1, OLD), 1, OLD)
    send(database, queue(database, "2026-W48", 1, RECENT), 1, RECENT)
    return database


def test_the_prune_command(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("bot.cli.prune.now", lambda: NOW)
    path = tmp_path / "x.db"
    database = old_sent_database(path)
    dry = run("prune", "--dry-run", "--db", str(path))
    assert dry.exit_code == 0, dry.output
    assert dry.output.startswith(
        "Would empty the payloads of 1 message sent more than 30 days ago "
        "(before 2026-10-31 09:00 UTC): "
    )
    assert "Nothing changed (--dry-run)." in dry.output
    assert outbox.prunable(database, CUT)[0] == 1
    done = run("prune", "--db", str(path))
    assert done.exit_code == 0, done.output
    assert done.output.startswith("Emptied the payloads of 1 message sent more than 30 days ago")
    assert outbox.prunable(database, CUT)[0] == 0
    again = run("prune", "--db", str(path))
    assert again.output.startswith("No message sent more than 30 days ago (before 2026-10-31")
    assert "nothing to prune" in again.output
    shorter = run("prune", "--days", "2", "--db", str(path))
    assert "Emptied the payloads of 1 message sent more than 2 days ago" in shorter.output


def test_the_prune_command_follows_the_setting(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("bot.cli.prune.now", lambda: NOW)
    path = tmp_path / "x.db"
    database = old_sent_database(path)
    kept = run("prune", "--db", str(path), PAPERBOY_OUTBOX_KEEP_DAYS="0")
    assert kept.exit_code == 0
    assert kept.output.startswith("PAPERBOY_OUTBOX_KEEP_DAYS=0 keeps sent messages forever")
    week = run("prune", "--db", str(path), PAPERBOY_OUTBOX_KEEP_DAYS="2")
    assert "2 messages sent more than 2 days ago" in week.output
    assert outbox.prunable(database, stamp(NOW))[0] == 0
    bad = run("prune", "--db", str(path), PAPERBOY_OUTBOX_KEEP_DAYS="a month")
    assert bad.exit_code == 2
    assert bad.output.strip() == (
        "error: PAPERBOY_OUTBOX_KEEP_DAYS='a month' is not valid: must be a whole number "
        "of days, from 0 (keep forever) to 36500"
    )
    zero = run("prune", "--days", "0", "--db", str(path))
    assert zero.exit_code == 2 and "--days" in zero.output and "Traceback" not in zero.output


def test_the_prune_command_needs_a_database(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = run("prune", "--db", str(tmp_path / "none.db"))
    assert missing.exit_code == 2
    assert missing.output.startswith(f"error: no database at {tmp_path / 'none.db'}")


def test_the_keep_days_setting() -> None:
    assert load_settings({}, dotenv=None).outbox_keep_days == 30
    assert load_settings({"PAPERBOY_OUTBOX_KEEP_DAYS": "0"}, dotenv=None).outbox_keep_days == 0
    assert load_settings({"PAPERBOY_OUTBOX_KEEP_DAYS": "365"}, dotenv=None).outbox_keep_days == 365
    for bad in ("-1", "1.5", "thirty", "36501"):
        with pytest.raises(SettingsError) as caught:
            load_settings({"PAPERBOY_OUTBOX_KEEP_DAYS": bad}, dotenv=None)
        assert str(caught.value) == (
            f"PAPERBOY_OUTBOX_KEEP_DAYS={bad!r} is not valid: must be a whole number of days, "
            "from 0 (keep forever) to 36500"
        )


# --- Pruned rows come back whole: each pruned row is deleted and written back in the
# batch's transaction, so every column must come back as it was, whatever the schema is by
# then, and nothing may hang off an outbox row (a trigger, a foreign key) that a delete
# would set off.


def test_a_column_added_after_a_prune_on_the_same_connection_is_kept(db: Store) -> None:
    """The rows go through a working table made from the outbox's columns. Made once per
    connection, it kept the columns of the first prune: after a migration added one, every
    later prune on that connection failed ("has 15 columns but 16 values were supplied")."""
    send(db, queue(db, "2026-W40", 1, OLD), 1, OLD)
    assert outbox.prune_sent(db, CUT) == 1
    db.execute("alter table outbox add column note text")  # a later migration's column
    digest = queue(db, "2026-W41", 1, OLD)
    send(db, digest, 1, OLD)
    db.execute("update outbox set note = 'kept' where digest_id = ?", [digest])
    assert outbox.prune_sent(db, CUT) == 1
    [row] = db.query("select payload, note from outbox where digest_id = ?", [digest])
    assert row == {"payload": outbox.PRUNED_PAYLOAD, "note": "kept"}


def test_platform_ids_and_numeric_looking_text_come_back_byte_for_byte(db: Store) -> None:
    """Every column goes through the working table and back. A column of numeric affinity
    on the way would turn a Slack ts "1700000000.123450" into 1700000000.12345 (a part 2
    then threads under a ts Slack does not know) and a text "0012" into 12."""
    digest = queue(db, "2026-W40", 3, OLD)
    for part in (1, 2, 3):
        send(db, digest, part, OLD)
    odd = {
        1: ("1700000000.123450", "0012", 2.5),  # Slack ts, text that looks like a number
        2: ("1180000000000000000", "1e3", "many"),  # Discord id, text in an integer column
        3: ("1700000000.000100", None, None),
    }
    for part, (platform_id, claimed_by, attempts) in odd.items():
        db.execute(
            "update outbox set platform_id = ?, claimed_by = ?, attempts = ?, "
            "last_error = ? where digest_id = ? and part = ?",
            [platform_id, claimed_by, attempts, b"\x00\xff" if part == 1 else None, digest, part],
        )
    columns = [str(row[1]) for row in db.execute("PRAGMA table_info(outbox)")]
    every = ", ".join(f'"{name}", typeof("{name}")' for name in columns if name != "payload")

    def snapshot() -> list[tuple[object, ...]]:
        return db.execute(f"select {every} from outbox order by id").fetchall()

    before = snapshot()
    assert outbox.prune_sent(db, CUT) == 3
    assert snapshot() == before
    assert [row["platform_id"] for row in db.query("select platform_id from outbox")] == [
        "1700000000.123450",
        "1180000000000000000",
        "1700000000.000100",
    ]


def test_a_row_another_prune_emptied_meanwhile_is_counted_once(
    db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ids are read outside the write lock; `paperboy prune` may empty the same rows
    before this batch takes the lock (the bot's daily run). The batch checks them again
    in its transaction: the other prune's rows are not rewritten nor counted again."""
    for week in (40, 41):
        send(db, queue(db, f"2026-W{week}", 1, OLD), 1, OLD)
    other = open_db(tmp_path / "paperboy.db")
    real = db.write
    meanwhile: list[int] = []

    def late() -> object:
        if not meanwhile:  # the other prune goes first
            meanwhile.append(outbox.prune_sent(other, CUT))
        return real()

    monkeypatch.setattr(db, "write", late)
    assert outbox.prune_sent(db, CUT) == 0
    assert meanwhile == [2]
    payloads = [row["payload"] for row in db.query("select payload from outbox")]
    assert payloads == [outbox.PRUNED_PAYLOAD] * 2


def test_foreign_keys_are_back_on_after_a_batch_that_failed(db: Store, tmp_path: Path) -> None:
    """The checks are off for each batch's transaction only: a batch that cannot take
    the write lock (another writer holds it past the busy timeout) leaves them on, so the
    connection's next writes are checked again."""
    send(db, queue(db, "2026-W40", 1, OLD), 1, OLD)
    other = open_db(tmp_path / "paperboy.db")
    db.execute("PRAGMA busy_timeout = 50")
    other.conn.execute("BEGIN IMMEDIATE")  # holds the write lock
    try:
        with pytest.raises(Exception, match="locked"):
            outbox.prune_sent(db, CUT)
    finally:
        other.conn.rollback()
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert not db.conn.in_transaction
    assert outbox.prune_sent(db, CUT) == 1  # the next run goes on


# --- nothing may hang off an outbox row ---------------------------------------------------


def hanging_off_outbox(db: Store) -> list[str]:
    """What a delete of an outbox row would set off: triggers on the table, foreign keys
    pointing at it (a cascade, when the checks are on), an index kept from its content."""
    found = [
        f"trigger {row['name']}"
        for row in db.query(
            "select name from sqlite_master where type = 'trigger' and tbl_name = 'outbox'"
        )
    ]
    for table in db.sqlite.table_names():
        for key in db.execute(f'PRAGMA foreign_key_list("{table}")'):
            if str(key[2]).lower() == "outbox":
                found.append(f"foreign key {table}.{key[3]} -> outbox")
    for row in db.query("select name, sql from sqlite_master where type = 'table'"):
        sql = str(row["sql"] or "").lower().replace(" ", "")
        if "virtualtable" in sql and ("content=outbox" in sql or "content='outbox'" in sql):
            found.append(f"index {row['name']} on outbox's content")
    return found


def test_nothing_hangs_off_an_outbox_row() -> None:
    """`prune_sent` deletes each pruned row and writes it back (the only way to give its
    pages back). A trigger on outbox would see every pruned message deleted and added
    again, and a foreign key to outbox.id (ON DELETE CASCADE) would take its rows with
    it whenever the checks stay on. A migration adding one must change the prune first
    (e.g. fall back to an update in place: 34 MB of pages a week instead of 7 MB)."""
    assert hanging_off_outbox(open_db(":memory:")) == []


def test_the_check_above_finds_what_it_looks_for(db: Store) -> None:
    db.execute("create table clicks (message_id integer references outbox(id) on delete cascade)")
    db.execute(
        "create trigger outbox_gone after delete on outbox begin "
        "insert into clicks (message_id) values (old.id); end"
    )
    db.execute(
        "create virtual table outbox_search using fts5(payload, content='outbox', "
        "content_rowid='id')"
    )
    assert hanging_off_outbox(db) == [
        "trigger outbox_gone",
        "foreign key clicks.message_id -> outbox",
        "index outbox_search on outbox's content",
    ]
    # And why: the trigger fires for every pruned row.
    send(db, queue(db, "2026-W40", 1, OLD), 1, OLD)
    assert outbox.prune_sent(db, CUT) == 1
    assert db.execute("select count(*) from clicks").fetchone()[0] == 1


# --- the scheduler's daily run ------------------------------------------------------------


async def test_a_busy_database_stops_the_daily_prune_with_one_warning(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another writer holds the lock past the busy timeout: that day's prune ends with one
    warning line (no traceback, nothing raised to the job), and the next run goes on."""
    services = services_for(tmp_path, seed_paths, catalog, Clock(NOW))
    db = services.db()
    send(db, queue(db, "2026-W40", 1, OLD), 1, OLD)
    monkeypatch.setattr("db.store.BUSY_TIMEOUT_MS", 50)  # the prune thread's connection
    scheduler = DigestScheduler(services, {})
    holder = open_db(tmp_path / "paperboy.db")
    holder.conn.execute("BEGIN IMMEDIATE")
    try:
        with caplog.at_level(logging.WARNING, logger="bot.scheduler"):
            assert await scheduler.prune_outbox() == 0
    finally:
        holder.conn.rollback()
    lines = [r for r in caplog.records if r.name == "bot.scheduler"]
    assert [(r.levelname, r.getMessage()) for r in lines] == [
        ("WARNING", "outbox prune: stopped this time (database is locked); the next one goes on")
    ]
    assert not any(r.exc_info for r in lines)
    assert await scheduler.prune_outbox() == 1


# --- what a prune writes ------------------------------------------------------------------


@pytest.mark.parametrize("setting", [1, 0])
def test_a_prune_writes_its_rows_not_zeros_over_every_freed_payload_page(
    tmp_path: Path, setting: int
) -> None:
    """With SQLite's `secure_delete` on (Debian's build has it so), every page a
    pruned payload frees is overwritten with zeros, through the write-ahead log: 324 MB
    written to prune a week's 139 MB at 10,000 channels, and while a reader holds a
    snapshot (a search index rebuild reads in one transaction) the `-wal` grows by all of
    it and keeps that size. The prune lowers it to FAST for its batches (b-tree pages are
    still cleared; the freed overflow pages keep their bytes until reused or a VACUUM),
    and puts the connection's setting back."""
    db = open_db(tmp_path / "paperboy.db")
    db.execute(f"PRAGMA secure_delete = {setting}")
    ensure_channel(db, CHANNEL, load_settings({}, dotenv=None), OLD)
    for week in range(1, 41):
        row = digest_store.insert_digest(db, CHANNEL, f"2025-W{week:02d}", stamp(OLD), [], [])
        big = [({"blocks": ["x" * 12_000]}, [f"p{week}"])]  # 3 overflow pages each
        outbox.enqueue(db, CHANNEL, int(row["id"]), big, stamp(OLD))
        send(db, int(row["id"]), 1, OLD)
    reader = sqlite3.connect(tmp_path / "paperboy.db", isolation_level=None)
    reader.execute("begin")
    reader.execute("select count(*) from outbox").fetchone()  # no checkpoint restarts the log

    def frames() -> int:
        return int(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])

    try:
        before = frames()
        assert outbox.prune_sent(db, CUT) == 40
        written = frames() - before
    finally:
        reader.close()
    assert written < 40  # with zeros over the 120 freed overflow pages: 126 frames
    assert db.execute("PRAGMA secure_delete").fetchone()[0] == setting


def test_a_batch_binds_few_parameters_as_sqlite_before_3_32_allows(db: Store) -> None:
    """SQLite before 3.32 (Ubuntu 20.04 has 3.31) allows 999 bound parameters per
    statement (db/papers.py keeps to 900). A batch named its 1,000 ids one parameter each:
    there, every batch failed with "too many SQL variables", and the daily run logged a
    warning and pruned nothing, day after day."""
    db.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    digest = queue(db, "2026-W40", 1, OLD)
    db.conn.executemany(
        "insert into outbox (channel, digest_id, part, payload, paper_ids, state, attempts, "
        "created_at, sent_at, platform_id) values (?, ?, ?, '{\"text\": \"x\"}', '[]', "
        "'sent', 1, ?, ?, ?)",
        [
            (CHANNEL, digest, part, stamp(OLD), stamp(OLD), f"ts-{part}")
            for part in range(2, outbox.PRUNE_BATCH + 2)
        ],
    )
    db.conn.commit()
    send(db, digest, 1, OLD)
    assert outbox.prune_sent(db, CUT) == outbox.PRUNE_BATCH + 1
    assert outbox.prunable(db, CUT) == (0, 0)
