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
