"""db/saved.py: a user's reading list."""

from __future__ import annotations

from db import saved
from db.store import Store

USER = "slack:T1/U1"


def two_papers(db: Store) -> tuple[str, str]:
    first, second = (row[0] for row in db.execute("select id from papers order by id limit 2"))
    return str(first), str(second)


def test_save_twice_keeps_the_first_and_lists_newest_first(seeded_db: Store) -> None:
    first, second = two_papers(seeded_db)
    assert saved.save(seeded_db, USER, first, "2026-11-30T09:00:00+00:00", "slack:T1/C1")
    assert not saved.save(seeded_db, USER, first, "2026-11-30T11:00:00+00:00")
    assert saved.save(seeded_db, USER, second, "2026-11-30T10:00:00+00:00")
    rows = saved.saved_papers(seeded_db, USER)
    assert [r["id"] for r in rows] == [second, first]
    assert rows[1]["saved_at"] == "2026-11-30T09:00:00+00:00"
    assert rows[1]["saved_from"] == "slack:T1/C1" and rows[0]["saved_from"] is None
    assert isinstance(rows[0]["authors"], list)  # decoded like get_paper
    assert saved.is_saved(seeded_db, USER, first)
    assert saved.saved_papers(seeded_db, "discord:123456") == []


def test_unsave(seeded_db: Store) -> None:
    first, second = two_papers(seeded_db)
    saved.save(seeded_db, USER, first, "2026-11-30T09:00:00+00:00")
    saved.save(seeded_db, "local:other", first, "2026-11-30T09:00:00+00:00")
    assert saved.unsave(seeded_db, USER, first)
    assert not saved.unsave(seeded_db, USER, first)
    assert not saved.unsave(seeded_db, USER, second)
    assert saved.saved_papers(seeded_db, USER) == []
    assert [r["id"] for r in saved.saved_papers(seeded_db, "local:other")] == [first]
