"""Personal digests (issue 13), what their users see: the leftovers of a first build.

- In a Slack direct message that is not with the app (two people's DM, or a group DM),
  a command acts on the asker's own digest, and its answer must be theirs alone:
  `backlog on` and `feedback reset` there were posted for the other person too
  (`in_channel`), and a group DM was read as a channel the app can never post to.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest

from bot.services import Services
from config.settings import load_settings
from db import feedback as feedback_store
from db import open_db
from db.channels import get_channel
from digests.ingest import ingest_files
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.slack_helpers import BOT_TOKEN, signed_headers, slash_body, start_http
from tests.test_personal_delivery import topics_of

ALICE = "slack:T0001/@U0001"
BOB = "slack:T0001/@U0002"
CHANNEL = "slack:T0001/C0001"
IM = "D0000IM02"  # Alice and Bob's direct message: the app is no member
MPIM = "G0000MP03"  # a group DM (Slack: channel_name `mpdm-…`)
AT = "2026-11-30T08:00:00+00:00"


@pytest.fixture
def services(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> Services:
    """Slack on the fake; only admins may change a channel (U0001 is none)."""
    db_path = tmp_path / "paperboy.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW - timedelta(days=30))
    settings = load_settings(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_API_URL": fake_slack.api_url,
            "PAPERBOY_SLACK_MANAGERS": "admins",
        },
        dotenv=None,
    )
    return Services(db_path, settings, catalog, clock=lambda: NOW)


async def slash(
    http: Any, fake: FakeSlack, text: str, *, channel: str, name: str, user: str = "U0001"
) -> dict[str, Any]:
    """`/papers TEXT` by `user` in conversation `channel` named `name` (as Slack names
    them: `directmessage`, `mpdm-…`, or the channel's name), over the HTTP endpoint."""
    fields = dict(parse_qsl(slash_body(text, fake.response_url(), user=user, channel=channel)))
    body = urlencode(fields | {"channel_name": name})
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 200
    answer: dict[str, Any] = json.loads(await response.text())
    return answer


def _vote(services: Services, channel: str, paper_id: str, value: int) -> None:
    feedback_store.record_vote(
        services.db(), channel, "offline-rl", paper_id, "U0001", value, None, AT
    )


# --- 4. answers on one's own digest are private, wherever they are typed ----------------


async def test_in_a_dm_between_two_people_answers_on_ones_own_digest_are_private(
    services: Services, fake_slack: FakeSlack
) -> None:
    http = await start_http(services, fake_slack)
    try:
        followed = await slash(
            http, fake_slack, "subscribe offline-rl", channel=IM, name="directmessage"
        )
        assert followed["response_type"] == "ephemeral"
        assert "You now follow Offline RL" in followed["text"]
        backlog = await slash(http, fake_slack, "backlog on", channel=IM, name="directmessage")
        assert backlog["response_type"] == "ephemeral", backlog
        assert backlog["text"].startswith("You turned the backlog on")
        papers = [str(row["id"]) for row in services.db().query("select id from papers limit 2")]
        _vote(services, ALICE, papers[0], 1)
        _vote(services, ALICE, papers[1], -1)
        reset = await slash(
            http, fake_slack, "feedback reset offline-rl", channel=IM, name="directmessage"
        )
        assert reset["response_type"] == "ephemeral", reset
        assert "You cleared your feedback on Offline RL (2 votes)" in reset["text"]
    finally:
        await http.close()
    assert topics_of(services, ALICE) == ["offline-rl"]
    assert (get_channel(services.db(), ALICE) or {}).get("backlog")
    assert get_channel(services.db(), f"slack:T0001/{IM}") is None  # never a channel


async def test_a_group_dm_acts_on_ones_own_digest_privately(
    services: Services, fake_slack: FakeSlack
) -> None:
    """A group DM was read as a channel: `backlog on` asked for an admin (refused to
    U0001), and an admin's subscribe there made a digest the app cannot post."""
    http = await start_http(services, fake_slack)
    try:
        mpdm = "mpdm-alice--bob--carol-1"
        backlog = await slash(http, fake_slack, "backlog on", channel=MPIM, name=mpdm)
        assert backlog["response_type"] == "ephemeral", backlog
        assert backlog["text"].startswith("You turned the backlog on"), backlog["text"]
        mine = await slash(http, fake_slack, "subscribe rlhf", channel=MPIM, name=mpdm)
        assert mine["response_type"] == "ephemeral" and "You now follow" in mine["text"]
        bobs = await slash(
            http, fake_slack, "subscribe --me robotics", channel=MPIM, name=mpdm, user="U0002"
        )
        assert bobs["response_type"] == "ephemeral"
        # no admin check for one's own digest
        assert not [call for call in fake_slack.calls if call.method == "users.info"]
    finally:
        await http.close()
    assert topics_of(services, ALICE) == ["rlhf"] and topics_of(services, BOB) == ["robotics"]
    assert get_channel(services.db(), f"slack:T0001/{MPIM}") is None


async def test_a_channels_change_is_still_told_to_the_channel(
    services: Services, fake_slack: FakeSlack
) -> None:
    services.settings = dataclasses.replace(services.settings, slack_managers="anyone")
    http = await start_http(services, fake_slack)
    try:
        answer = await slash(http, fake_slack, "backlog on", channel="C0001", name="papers")
    finally:
        await http.close()
    assert answer["response_type"] == "in_channel"
    assert (get_channel(services.db(), CHANNEL) or {}).get("backlog")
