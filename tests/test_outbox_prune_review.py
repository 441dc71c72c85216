"""Review of the outbox prune (issue 13): each pruned row is deleted and written back in
the batch's transaction, so every column must come back as it was, whatever the schema
is by then, and nothing may hang off an outbox row (a trigger, a foreign key) that a
delete would set off."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from bot.scheduler import DigestScheduler
from config.settings import load_settings
from db import digests as digest_store
from db import open_db, outbox
from digests.digest import ensure_channel
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import Clock
from tests.test_outbox_prune import CHANNEL, CUT, OLD, db, queue, send, services_for

__all__ = ["db"]  # the fixture, shared with tests/test_outbox_prune.py


def test_a_column_added_after_a_prune_on_the_same_connection_is_kept(db: Database) -> None:
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


def test_platform_ids_and_numeric_looking_text_come_back_byte_for_byte(db: Database) -> None:
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
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ids are read outside the write lock; `paperboy prune` may empty the same rows
    before this batch takes the lock (the bot's daily run). The batch checks them again
    in its transaction: the other prune's rows are not rewritten nor counted again."""
    for week in (40, 41):
        send(db, queue(db, f"2026-W{week}", 1, OLD), 1, OLD)
    other = open_db(tmp_path / "paperboy.db")
    real = outbox.write_transaction
    meanwhile: list[int] = []

    def late(database: Database) -> object:
        if database is db and not meanwhile:  # the other prune goes first
            meanwhile.append(outbox.prune_sent(other, CUT))
        return real(database)

    monkeypatch.setattr(outbox, "write_transaction", late)
    assert outbox.prune_sent(db, CUT) == 0
    assert meanwhile == [2]
    payloads = [row["payload"] for row in db.query("select payload from outbox")]
    assert payloads == [outbox.PRUNED_PAYLOAD] * 2


def test_foreign_keys_are_back_on_after_a_batch_that_failed(db: Database, tmp_path: Path) -> None:
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


def hanging_off_outbox(db: Database) -> list[str]:
    """What a delete of an outbox row would set off: triggers on the table, foreign keys
    pointing at it (a cascade, when the checks are on), an index kept from its content."""
    found = [
        f"trigger {row['name']}"
        for row in db.query(
            "select name from sqlite_master where type = 'trigger' and tbl_name = 'outbox'"
        )
    ]
    for table in db.table_names():
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


def test_the_check_above_finds_what_it_looks_for(db: Database) -> None:
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
    monkeypatch.setattr("db.connection.BUSY_TIMEOUT_MS", 50)  # the prune thread's connection
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


def test_a_batch_binds_few_parameters_as_sqlite_before_3_32_allows(db: Database) -> None:
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
