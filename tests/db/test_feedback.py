"""db/feedback.py: one vote per (channel, topic, paper, user), counts, net votes, reset;
and m013 leaving existing rows alone."""

from __future__ import annotations

from sqlite_utils import Database

from db import feedback
from db.store import Store

AT = "2026-11-30T09:00:00+00:00"
LATER = "2026-11-30T10:00:00+00:00"
CHANNEL = "slack:T1/C1"


def test_a_repeated_vote_counts_once_and_the_other_vote_replaces(store: Store) -> None:
    assert feedback.record_vote(store, CHANNEL, "offline-rl", "p1", "U1", 1, 7, AT)
    assert not feedback.record_vote(store, CHANNEL, "offline-rl", "p1", "U1", 1, 7, LATER)
    assert feedback.counts(store, CHANNEL, ["p1"]) == {"p1": (1, 0)}
    assert feedback.record_vote(store, CHANNEL, "offline-rl", "p1", "U1", -1, 8, LATER)
    assert feedback.counts(store, CHANNEL, ["p1"]) == {"p1": (0, 1)}
    (row,) = feedback.channel_feedback(store, CHANNEL)
    assert (row["vote"], row["digest_id"], row["created_at"], row["updated_at"]) == (
        -1,
        8,
        AT,
        LATER,
    )


def test_a_vote_is_plus_or_minus_one(store: Store) -> None:
    import pytest

    with pytest.raises(ValueError):
        feedback.record_vote(store, CHANNEL, "t", "p1", "U1", 2, 1, AT)
    assert store.execute("select count(*) from feedback").fetchone()[0] == 0


def test_counts_are_per_channel_and_count_users(store: Store) -> None:
    feedback.record_vote(store, CHANNEL, "a", "p1", "U1", 1, 1, AT)
    feedback.record_vote(store, CHANNEL, "b", "p1", "U1", 1, 1, AT)  # same user, 2 topics
    feedback.record_vote(store, CHANNEL, "a", "p1", "U2", -1, 1, AT)
    feedback.record_vote(store, "slack:T1/C2", "a", "p1", "U3", 1, 2, AT)
    assert feedback.counts(store, CHANNEL, ["p1", "p2"]) == {"p1": (1, 1), "p2": (0, 0)}
    assert feedback.counts(store, CHANNEL, []) == {}


def test_net_votes_by_topic_and_reset(store: Store) -> None:
    for user, vote in (("U1", 1), ("U2", 1), ("U3", -1)):
        feedback.record_vote(store, CHANNEL, "a", "p1", user, vote, 1, AT)
    feedback.record_vote(store, CHANNEL, "a", "p2", "U1", -1, 1, AT)
    feedback.record_vote(store, CHANNEL, "a", "p3", "U1", 1, 1, AT)
    feedback.record_vote(store, CHANNEL, "a", "p3", "U2", -1, 1, AT)  # cancels out
    feedback.record_vote(store, CHANNEL, "b", "p4", "U1", 1, 1, AT)
    feedback.record_vote(store, "local:other", "a", "p9", "U1", 1, 1, AT)
    assert feedback.net_votes(store, CHANNEL) == {"a": {"p1": 1, "p2": -1}, "b": {"p4": 1}}
    both = feedback.net_votes_of(store, [CHANNEL, "local:other", "local:none"])
    assert set(both) == {CHANNEL, "local:other"}
    assert both["local:other"] == {"a": {"p9": 1}}
    assert feedback.net_votes_of(store, []) == {}
    assert [r["topic_id"] for r in feedback.channel_feedback(store, CHANNEL, "b")] == ["b"]
    assert feedback.reset(store, CHANNEL, "a") == 6
    assert feedback.net_votes(store, CHANNEL) == {"b": {"p4": 1}}
    assert feedback.net_votes(store, "local:other") == {"a": {"p9": 1}}
    assert feedback.reset(store, CHANNEL, "a") == 0


def test_channel_feedback_carries_the_title(seeded_db: Database) -> None:
    paper = seeded_db.execute("select id, title from papers limit 1").fetchone()
    feedback.record_vote(seeded_db, CHANNEL, "a", paper[0], "U1", 1, 1, AT)
    feedback.record_vote(seeded_db, CHANNEL, "a", "gone", "U1", 1, 1, LATER)
    rows = feedback.channel_feedback(seeded_db, CHANNEL)
    assert [(r["paper_id"], r["title"]) for r in rows] == [("gone", None), (paper[0], paper[1])]


def test_m013_adds_tables_and_leaves_existing_rows_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database at m012 with rows migrates to m013 without any existing row changing
    (the bench caches, 5 GB at 1M papers, migrate in place)."""
    from db.migrations import migrations

    path = tmp_path / "old.db"
    db = Database(path)
    migrations.apply(db, stop_before="m013_feedback_and_saved")
    assert not db["feedback"].exists()
    db.execute(
        "insert into papers (id, title, abstract, abstract_text, added_at) "
        "values ('p1', 'T', 'A', 'a', ?)",
        [AT],
    )
    db.conn.commit()
    before = {t: list(db[t].rows) for t in ("papers", "search_changes")}
    migrations.apply(db)
    assert db["feedback"].exists() and db["saved"].exists()
    assert {t: list(db[t].rows) for t in ("papers", "search_changes")} == before
