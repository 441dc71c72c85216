"""A delivery's times are the clock's when they are taken, not the time it was asked for:
with many channels and a rate limit, a channel can wait long for its delivery slot and
for its turns."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.delivery import PermanentError, deliver_channel
from bot.ratelimits import SendLimits
from config.settings import load_settings
from db import channels as channel_store
from db import open_db
from digests.channels import ChannelRef
from digests.timestamps import stamp
from tests.conftest import NOW
from tests.fakes.delivery import Poster, VirtualTime, queue, slack_payload, states

FIRST, SECOND = "slack:T0001/C0001", "slack:T0001/C0002"


async def test_a_channel_waiting_for_a_delivery_slot_checks_what_is_due_when_it_gets_one(
    tmp_path: Path, catalog: Any
) -> None:
    """One delivery at a time, at 0.2 message a second: the second channel's slot comes
    10 s after the round began. Its message is claimed by a sender elsewhere whose claim
    runs out 5 s in; as of the round's start the claim still held, so a channel judged by
    that time (not the time it gets its slot) would leave the message for the next round."""
    from bot.scheduler import DigestScheduler
    from bot.services import Services

    time = VirtualTime()
    start = time.now
    db_path = tmp_path / "paperboy.db"
    db = open_db(db_path)
    queue(db, [FIRST], 3, slack_payload)
    queue(db, [SECOND], 1, slack_payload)
    db.execute(
        "update outbox set state = 'sending', claimed_by = 'elsewhere:1', claimed_until = ?, "
        "attempts = 1 where channel = ?",
        [stamp(NOW + timedelta(seconds=5)), SECOND],
    )
    settings = load_settings(
        {"PAPERBOY_SLACK_POSTS_PER_SECOND": "0.2", "PAPERBOY_DELIVERY_CONCURRENCY": "1"},
        dotenv=None,
    )
    clock = lambda: NOW + timedelta(seconds=time.now - start)  # noqa: E731
    poster = Poster(SendLimits(0.2, monotonic=time.monotonic, sleep=time.sleep))
    scheduler = DigestScheduler(
        Services(db_path, settings, catalog, clock=clock), {"slack": poster}
    )

    async def deliver() -> Any:
        return await scheduler.deliver_due(NOW)

    [results] = await time.run([deliver()])
    assert [(r.channel, r.state, r.sent) for r in results] == [
        (FIRST, "done", 3),
        (SECOND, "done", 1),
    ]
    assert states(db) == {"sent": 4} and time.now - start >= 10


class FailsSecond(Poster):
    """Posts the first message; the channel is gone by the second."""

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if self.posted:
            raise PermanentError("channel_not_found")
        return await super().send(channel, payload, thread_of)


async def test_a_channel_paused_after_a_wait_for_its_turn_says_since_when(
    tmp_path: Path,
) -> None:
    """At 0.1 message a second the second message's turn is 10 s in: the pause is dated
    then (it was dated when the delivery began)."""
    time = VirtualTime()
    start = time.now
    db = open_db(tmp_path / "outbox.db")
    queue(db, [FIRST], 2, slack_payload)
    clock = lambda: NOW + timedelta(seconds=time.now - start)  # noqa: E731
    poster = FailsSecond(SendLimits(0.1, monotonic=time.monotonic, sleep=time.sleep))
    [result] = await time.run([deliver_channel(db, poster, FIRST, NOW, clock=clock)])
    assert (result.state, result.sent) == ("paused", 1)
    row = channel_store.get_channel(db, FIRST)
    assert row is not None and row["paused_at"] == stamp(NOW + timedelta(seconds=10))
