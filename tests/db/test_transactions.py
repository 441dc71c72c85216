"""The transaction steps a batch of changes uses: savepoints undone or kept, one commit."""

from __future__ import annotations

from db import open_db, transactions
from db.app_state import get_state, set_state


def test_a_savepoint_undone_keeps_the_changes_before_it() -> None:
    db = open_db()
    transactions.begin_immediate(db)
    transactions.savepoint(db, "change")
    set_state(db, "kept", "1", "2026-12-01T09:00:00+00:00")
    transactions.release(db, "change")
    transactions.savepoint(db, "change")
    set_state(db, "undone", "1", "2026-12-01T09:00:00+00:00")
    transactions.undo(db, "change")
    assert transactions.in_transaction(db)
    transactions.commit(db)
    assert not transactions.in_transaction(db)
    assert get_state(db, "kept") == "1" and get_state(db, "undone") is None


def test_a_rollback_undoes_the_whole_transaction() -> None:
    db = open_db()
    transactions.begin_immediate(db)
    set_state(db, "gone", "1", "2026-12-01T09:00:00+00:00")
    transactions.rollback(db)
    assert not transactions.in_transaction(db) and get_state(db, "gone") is None
