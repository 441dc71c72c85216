"""Review of the Slack edge cases of issue 13 (tests/test_slack_edges*.py): clicks whose
digest the conversation alone does not name, and the App Home refreshes under load and
failure. Signed requests to the HTTP endpoint and the fake Web API, as in
tests/test_slack_actions.py."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack import app as slack_app
from db import feedback, open_db
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP
from digests.commands.replies import info
from tests.fakes.slack_api import FakeSlack
from tests.test_slack_actions import (
    CHANNEL_ID,
    TEAM,
    Env,
    click,
    env,
    record_digest,
    settle,
    updates,
    votes,
)
from tests.test_slack_actions_review import ephemeral_click

__all__ = ["env"]  # the fixture, shared with tests/test_slack_actions.py

ME, OTHER = "U0001", "U0002"
MINE = f"slack:{TEAM}/@{ME}"


def tables(services: Any) -> tuple[list[Any], list[Any]]:
    db = open_db(services.db_path)
    return (
        [tuple(r) for r in db.execute("select * from feedback order by id")],
        [tuple(r) for r in db.execute("select * from saved order by rowid")],
    )


# --- my own digest shown ephemerally outside my DM --------------------------------------

WHERE = {
    "a channel": (CHANNEL_ID, "papers"),  # `/papers digest --me` typed there
    "a group DM": ("G0000042", "mpdm-me--you--them-1"),  # `/papers digest` typed there
}


@pytest.mark.parametrize("where", list(WHERE))
async def test_my_digest_shown_to_me_alone_takes_my_clicks_wherever_it_is_shown(
    env: Env, fake_slack: FakeSlack, where: str
) -> None:
    """`/papers digest --me` in a channel, or `/papers digest` in a group DM (read as a
    DM: the user's own digest), answers with the user's recorded personal digest,
    ephemerally, buttons included. Its clicks come from that conversation, whose id is
    no DM's (C/G): they were refused as "another channel's digest". Only the user sees an
    ephemeral message, so their own personal digest is theirs to click there; another
    user's click with the same value (forged) is still refused, and a personal digest's
    button on a message everyone sees (not ephemeral) too."""
    services, http, _, _ = env
    mine = record_digest(services, MINE)
    shown = [b for m in slack_app.payloads(info("Your digest", digest=mine)) for b in m["blocks"]]
    conversation, name = WHERE[where]
    payload, paper = ephemeral_click(fake_slack, shown, VOTE_UP, with_message=False)
    payload["channel"] = {"id": conversation, "name": name}
    payload["container"]["channel_id"] = conversation
    assert await click(http, payload) == 200
    await settle(http)
    assert "Noted" in fake_slack.responses[-1]["text"], fake_slack.responses[-1]
    db = open_db(services.db_path)
    assert feedback.counts(db, MINE, [paper])[paper] == (1, 0)
    assert updates(fake_slack) == []  # an ephemeral message is never chat.updated
    saved, _ = ephemeral_click(fake_slack, shown, SAVE, with_message=False)
    saved["channel"], saved["container"]["channel_id"] = payload["channel"], conversation
    assert await click(http, saved) == 200
    await settle(http)
    assert "Saved" in fake_slack.responses[-1]["text"]
    rows = db.execute("select paper_id from saved where user = ?", [f"slack:{TEAM}/{ME}"])
    assert [r[0] for r in rows] == [paper]
    before = tables(services)
    # Someone else's click carrying my digest's value: refused, nothing written.
    for action in (VOTE_DOWN, SAVE):
        forged, _ = ephemeral_click(fake_slack, shown, action, with_message=False)
        forged["channel"], forged["container"]["channel_id"] = payload["channel"], conversation
        forged["user"]["id"] = OTHER
        assert await click(http, forged) == 200
        await settle(http)
        assert "another channel" in fake_slack.responses[-1]["text"]
    # My own click on my digest's button in a message all see there: refused too.
    public, _ = ephemeral_click(fake_slack, shown, VOTE_DOWN, with_message=True)
    public["channel"], public["container"]["channel_id"] = payload["channel"], conversation
    public["container"]["is_ephemeral"] = False
    assert await click(http, public) == 200
    await settle(http)
    assert "another channel" in fake_slack.responses[-1]["text"]
    assert tables(services) == before
    assert votes(services) == [(paper, ME, 1)]
