"""db/digests.py on both backends: one digest per channel and period (two builders racing
on PostgreSQL get one digest), its items read back as written, failed builds counted."""

from __future__ import annotations

import threading

import pytest

from db import digests
from db.store import Store

CHANNEL = "slack:T1/C1"
AT = "2026-11-30T09:00:00+00:00"


def channel(db: Store, name: str = CHANNEL) -> None:
    db.execute("insert into channels (id, platform, created_at) values (?, 'slack', ?)", [name, AT])


def paper(db: Store, paper_id: str) -> None:
    db.execute(
        "insert into papers (id, title, abstract, abstract_text, added_at) values (?, ?, '', '', ?)",
        [paper_id, f"Title {paper_id}", AT],
    )


def test_a_digest_reads_back_as_written_and_a_second_one_for_the_week_is_the_first(
    store: Store,
) -> None:
    channel(store)
    paper(store, "p1")
    paper(store, "p2")
    items = [
        {"paper_id": "p2", "topics": ["rl"], "score": 2.5, "from_archive": True},
        {"paper_id": "p1", "topics": ["rl", "nlp"], "score": 1.0},
    ]
    written = digests.insert_digest(store, CHANNEL, "2026-W49", AT, ["rl"], items)
    assert digests.get_digest(store, CHANNEL, "2026-W49") == written
    assert [item["paper_id"] for item in written["items"]] == ["p2", "p1"]
    again = digests.insert_digest(store, CHANNEL, "2026-W49", "2026-12-01T00:00:00+00:00", [], [])
    assert again == written
    assert store.execute("select count(*) from digests").fetchone()[0] == 1
    assert digests.last_digest(store, CHANNEL) == written
    assert digests.last_digest_with(store, CHANNEL, "p1") == written
    assert digests.item_paper_ids(store, CHANNEL, written["id"]) == ["p2", "p1"]
    assert digests.picked_paper_ids(store, CHANNEL, AT) == {"p1", "p2"}
    assert digests.digest_channel(store, written["id"]) == CHANNEL


def test_failed_builds_count_per_moment(store: Store) -> None:
    channel(store)
    assert digests.record_failure(store, CHANNEL, "d1", "boom", "n1", "t1") == 1
    assert digests.record_failure(store, CHANNEL, "d1", "again", "n2", "t2") == 2
    (row,) = digests.failures(store, CHANNEL)
    assert (row["attempts"], row["first_failed_at"], row["last_error"]) == (2, "t1", "again")
    assert digests.record_failure(store, CHANNEL, "d2", "other", "n3", "t3") == 1
    (row,) = digests.failures(store)
    assert (row["due_at"], row["first_failed_at"], row["next_attempt_at"]) == ("d2", "t3", "n3")
    assert digests.due_failures(store, "n3") == [row]
    digests.clear_failure(store, CHANNEL, "d2")
    assert digests.failures(store) == []


@pytest.mark.parametrize("builders", [2, 8])
def test_builders_racing_on_postgresql_record_one_digest_and_all_return_it(
    postgres_server,
    builders: int,  # type: ignore[no-untyped-def]
) -> None:
    name = postgres_server.fresh_database()
    stores = [Store.connect(postgres_server.url(name)) for _ in range(builders)]
    try:
        channel(stores[0])
        paper(stores[0], "p1")
        start = threading.Barrier(builders)
        results: list[dict[str, object]] = []

        def build(db: Store, n: int) -> None:
            start.wait()
            item = {"paper_id": "p1", "topics": [str(n)], "score": float(n)}
            results.append(digests.insert_digest(db, CHANNEL, "2026-W49", AT, [str(n)], [item]))

        threads = [threading.Thread(target=build, args=(db, n)) for n, db in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(results) == builders
        assert stores[0].execute("select count(*) from digests").fetchone()[0] == 1
        assert stores[0].execute("select count(*) from digest_items").fetchone()[0] == 1
        stored = digests.get_digest(stores[0], CHANNEL, "2026-W49")
        assert all(result == stored for result in results)
    finally:
        for db in stores:
            db.close()
        postgres_server.drop(name)
