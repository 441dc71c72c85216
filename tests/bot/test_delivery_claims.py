"""Who records a send's outcome: only the sender whose claim holds the
message. A sender whose claim was taken over (it ran out: a clock stepped forward, a
stalled process) leaves the message to the one that has it now."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.delivery import TransientError, deliver_channel
from bot.ratelimits import SendLimits
from db import open_db, processes
from db.store import Store
from digests.channels import ChannelRef
from tests.conftest import NOW
from tests.fakes.delivery import Poster, VirtualTime, queue, slack_payload

CHANNEL = "slack:T0001/C0001"


@pytest.fixture
def db(tmp_path: Path) -> Store:
    return open_db(tmp_path / "outbox.db")


class OvertakenPoster(Poster):
    """While the first send is under way, another sender takes its message over and has
    it `sending` (still sending it) or `sent` (done, with its own platform id)."""

    def __init__(self, time: VirtualTime, db: Store, theirs: str, fails: bool) -> None:
        error = TransientError("HTTP 500: error")
        super().__init__(SendLimits(5.0, monotonic=time.monotonic, sleep=time.sleep))
        self.answers = [error] if fails else []
        self.db, self.theirs = db, theirs

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        if self.theirs == "sending":
            update = "claimed_by = 'elsewhere:1', claimed_until = '2999-01-01T00:00:00+00:00'"
        else:
            update = "state = 'sent', platform_id = 'theirs', claimed_by = null"
        self.db.execute(f"update outbox set {update}, attempts = attempts + 1 where part = 1")
        self.theirs = "done"  # only during the first send
        return await super().send(channel, payload, thread_of)


@pytest.mark.parametrize("theirs", ["sending", "sent"])
@pytest.mark.parametrize("fails", [False, True], ids=["our send posts", "ours is given up"])
async def test_a_sender_whose_claim_was_taken_over_records_nothing(
    db: Store, theirs: str, fails: bool
) -> None:
    """Our send posted, or failed with its last attempt (given up, with the parts after
    it): either way part 1 stays as the other sender left it, and part 2, which must go
    after part 1, is neither sent nor given up by us. Marking part 1 sent would take the
    other's claim (its outcome unrecorded) or replace its platform id; marking it failed
    would count undelivered a message another is sending, or has sent."""
    time = VirtualTime()
    queue(db, [CHANNEL], 2, slack_payload)
    poster = OvertakenPoster(time, db, theirs, fails)
    [result] = await time.run([deliver_channel(db, poster, CHANNEL, NOW, max_attempts=1)])
    assert (result.state, result.reason, result.sent) == (
        "retrying",
        "sent elsewhere",
        int(not fails),
    )
    first, second = db.query("select * from outbox order by part")
    if theirs == "sending":
        assert (first["state"], first["claimed_by"], first["platform_id"]) == (
            "sending", "elsewhere:1", None,
        )  # fmt: skip
    else:
        assert (first["state"], first["platform_id"]) == ("sent", "theirs")
    assert first["last_error"] is None
    assert (second["state"], second["attempts"], second["claimed_by"]) == ("pending", 0, None)
    assert poster.posted == ([] if fails else [f"{CHANNEL} part 1"])


async def test_the_claims_holder_records_its_outcome(db: Store) -> None:
    """The same sends with no takeover: sent, and given up with the parts after it."""
    time = VirtualTime()
    queue(db, [CHANNEL], 2, slack_payload)
    poster = Poster(SendLimits(5.0, monotonic=time.monotonic, sleep=time.sleep))
    [result] = await time.run([deliver_channel(db, poster, CHANNEL, NOW)])
    assert (result.state, result.sent) == ("done", 2)
    assert [r["state"] for r in db.query("select state from outbox")] == ["sent", "sent"]
    other = "slack:T0001/C0002"
    queue(db, [other], 2, slack_payload)
    poster.answers = [TransientError("HTTP 500: error")]
    [result] = await time.run([deliver_channel(db, poster, other, NOW, max_attempts=1)])
    assert result.state == "failed"
    rows = db.query("select state from outbox where channel = ? order by part", [other])
    assert [r["state"] for r in rows] == ["failed", "failed"]


@pytest.mark.parametrize("silent", [False, True], ids=["its process beats", "silent"])
async def test_a_claim_of_a_process_on_another_machine_ends_when_its_heartbeat_does(
    db: Store, silent: bool
) -> None:
    """A message claimed by a process on another machine (its pid means nothing here)
    is taken over once that process stopped heartbeating, not when its claim runs out."""
    time = VirtualTime()
    queue(db, [CHANNEL], 1, slack_payload)
    far = "far-host/pid:[4026531836]:7"
    db.execute(
        "update outbox set state = 'sending', claimed_by = ?, "
        "claimed_until = '2999-01-01T00:00:00+00:00'",
        [far],
    )
    beat = processes.database_now(db) - timedelta(minutes=5 if silent else 0)
    processes.register(db, far, "far-host", 7, "all", beat)
    poster = Poster(SendLimits(5.0, monotonic=time.monotonic, sleep=time.sleep))
    gone_after = timedelta(seconds=30)
    await time.run([deliver_channel(db, poster, CHANNEL, NOW, gone_after=gone_after)])
    assert poster.posted == ([f"{CHANNEL} part 1"] if silent else [])
    assert db.query("select state from outbox") == [{"state": "sent" if silent else "sending"}]
