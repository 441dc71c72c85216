"""Review of the outbox prune (issue 13): each pruned row is deleted and written back in
the batch's transaction, so every column must come back as it was, whatever the schema
is by then, and nothing may hang off an outbox row (a trigger, a foreign key) that a
delete would set off."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database

from db import open_db, outbox
from tests.test_outbox_prune import CUT, OLD, queue, send


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_db(tmp_path / "paperboy.db")


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
