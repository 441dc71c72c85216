"""`outbox.enqueue`: a digest's messages queued once, and the number the digest has.

It counts instead of reading back what it wrote: the scheduler takes that
number as a build's outcome (`queue_digest`), and a second call, a rebuild or a retry
after its commit, must neither add nor change a row."""

from __future__ import annotations

from db import outbox
from db.store import Store
from digests.timestamps import stamp
from tests.conftest import NOW
from tests.fakes.digest_rows import digest_row

CHANNEL = "slack:T0001/C0001"


def stored(db: Store) -> list[tuple[int, int, str, str, str]]:
    query = "select digest_id, part, payload, paper_ids, state from outbox order by id"
    return [tuple(row) for row in db.execute(query).fetchall()]


def test_enqueue_returns_the_digests_messages_and_queues_them_once(fresh_db: Store) -> None:
    digest_id = digest_row(fresh_db, CHANNEL)
    messages = [({"text": "part 1"}, ["p1", "p2"]), ({"text": "part 2"}, ["p3"])]
    assert outbox.enqueue(fresh_db, CHANNEL, digest_id, messages, stamp(NOW)) == 2
    first = stored(fresh_db)
    assert first == [
        (digest_id, 1, '{"text": "part 1"}', '["p1", "p2"]', "pending"),
        (digest_id, 2, '{"text": "part 2"}', '["p3"]', "pending"),
    ]
    # Again, with other messages (a digest rendered again): the first ones stay, counted.
    again = [({"text": "other"}, ["p9"])] * 3
    assert outbox.enqueue(fresh_db, CHANNEL, digest_id, again, stamp(NOW)) == 2
    assert stored(fresh_db) == first
    assert [row["payload"] for row in outbox.messages_for_digest(fresh_db, digest_id)] == [
        {"text": "part 1"},
        {"text": "part 2"},
    ]


def test_a_digest_with_no_messages_queues_nothing(fresh_db: Store) -> None:
    """An empty digest skipped (`PAPERBOY_EMPTY_DIGEST=skip`): 0, no row."""
    digest_id = digest_row(fresh_db, CHANNEL)
    assert outbox.enqueue(fresh_db, CHANNEL, digest_id, [], stamp(NOW)) == 0
    assert stored(fresh_db) == []
