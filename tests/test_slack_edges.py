"""Slack edge cases left from issue 13: clicks in channels shared between workspaces.

Which fields of a `block_actions` payload name which workspace (see docs/architecture.md,
"Slack Connect"): `team.id` is the workspace the app is installed in (for a message's
button, also when the clicker belongs to another workspace: slackapi/bolt-js#1614, where
Slack support confirmed it, and the payload in slackapi/java-slack-sdk#1041);
`user.team_id` is the clicker's own workspace, or their org's id (E...) in an Enterprise
org; with an org-wide install `team` is null and `is_enterprise_install` true. A digest
is found by the conversation (`channel.id`, one id in every workspace the channel is
shared with), whichever of these the payload carries; a button of another channel's
digest is still refused. Each payload here is signed and sent to the HTTP endpoint or
over Socket Mode (bolt), against the fake Web API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from db import feedback, open_db, saved
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, item_ref
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.slack_helpers import make_services, socket_mode
from tests.test_slack_actions import (
    CHANNEL,
    CHANNEL_ID,
    TEAM,
    Env,
    click,
    click_payload,
    env,
    item_blocks,
    paper_of,
    post_digest,
    record_digest,
    settle,
    updates,
    votes,
)
from tests.waiting import eventually

__all__ = ["env"]  # the fixture, shared with tests/test_slack_actions.py

OTHER_TEAM = "T0009"  # the workspace the channel is shared with (Slack Connect)
GUEST = "U0009"  # a member of OTHER_TEAM
ORG = "E0001"


def shaped(payload: dict[str, Any], shape: str) -> dict[str, Any]:
    """The payload of a click by GUEST, with the team fields of one case:

    - "connect": as Slack documents a message button in a Slack Connect channel: `team`
      the installing workspace, `user.team_id` the guest's own;
    - "guest team": `team` too names the guest's workspace (as Slack does for a view's
      interactions in a shared channel, bolt-js#1614);
    - "org install": an org-wide install: `team` null, the org in `enterprise`;
    - "org user": the same, `user.team_id` the org's id (an Enterprise org's user)."""
    payload["user"]["id"] = GUEST
    payload["user"]["team_id"] = OTHER_TEAM
    if shape == "guest team":
        payload["team"] = {"id": OTHER_TEAM, "domain": "partner"}
    elif shape in ("org install", "org user"):
        payload["team"] = None
        payload["enterprise"] = {"id": ORG, "name": "Org"}
        payload["is_enterprise_install"] = True
        if shape == "org user":
            payload["user"]["team_id"] = ORG
    else:
        assert shape == "connect"
    return payload


SHAPES = ["connect", "guest team", "org install", "org user"]


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_guest_of_a_shared_channel_votes_and_saves(
    env: Env, fake_slack: FakeSlack, shape: str
) -> None:
    services, http, _, ts = env
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    assert await click(http, shaped(click_payload(fake_slack, ts, VOTE_UP), shape)) == 200
    await settle(http)
    assert votes(services) == [(paper, GUEST, 1)]
    assert feedback.counts(open_db(services.db_path), CHANNEL, [paper])[paper] == (1, 0)
    [update] = updates(fake_slack)
    assert (update["channel"], update["ts"]) == (CHANNEL_ID, ts)
    texts = [e["text"]["text"] for e in item_blocks(fake_slack, ts)[0]["elements"][:2]]
    assert texts == ["👍 1", "👎 0"]
    assert fake_slack.responses == []  # no "another channel's digest"
    assert await click(http, shaped(click_payload(fake_slack, ts, SAVE), shape)) == 200
    await settle(http)
    assert "Saved" in fake_slack.responses[-1]["text"]
    # The guest's own list: in their workspace; in an org (an org-wide install), the
    # digest's: there user.team_id is the org's id, or one workspace of the org whichever
    # the member clicks in (bolt-js#1875; tests/test_slack_edges_review.py).
    owner = TEAM if shape in ("org install", "org user") else OTHER_TEAM
    db = open_db(services.db_path)
    assert [row["id"] for row in saved.saved_papers(db, f"slack:{owner}/{GUEST}")] == [paper]
    assert db.execute("select count(*) from saved").fetchone()[0] == 1


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("team", [TEAM, OTHER_TEAM])
async def test_a_shared_channel_still_refuses_another_channels_button(
    env: Env, fake_slack: FakeSlack, shape: str, team: str
) -> None:
    """A button whose value names a digest of another channel (of either workspace)."""
    services, http, _, ts = env
    other = record_digest(services, f"slack:{team}/C0002")
    assert other.digest_id is not None
    value = item_ref(other.digest_id, str(other.items[0].paper["id"]))
    for action in (VOTE_UP, SAVE):
        payload = shaped(click_payload(fake_slack, ts, action, value=value), shape)
        assert await click(http, payload) == 200
        await settle(http)
        assert "another channel" in fake_slack.responses[-1]["text"]
    assert votes(services) == [] and updates(fake_slack) == []
    db = open_db(services.db_path)
    assert db.execute("select count(*) from saved").fetchone()[0] == 0


@pytest.mark.parametrize("shape", ["guest team", "org install"])
async def test_a_personal_digest_takes_only_its_users_clicks_whatever_the_team(
    env: Env, fake_slack: FakeSlack, shape: str
) -> None:
    services, http, _, _ = env
    personal = f"slack:{TEAM}/@{GUEST}"  # the guest's own digest, subscribed in TEAM
    digest = record_digest(services, personal)
    dm = "D00000042"
    ts = await post_digest(fake_slack, digest, channel_id=dm)
    paper = paper_of(item_blocks(fake_slack, ts, dm)[0])
    payload = shaped(click_payload(fake_slack, ts, VOTE_UP, channel_id=dm), shape)
    assert await click(http, payload) == 200
    await settle(http)
    db = open_db(services.db_path)
    assert feedback.counts(db, personal, [paper])[paper] == (1, 0)
    # Another user's click there (a forged one: they cannot see that DM) is refused.
    forged = shaped(click_payload(fake_slack, ts, VOTE_DOWN, channel_id=dm), shape)
    forged["user"]["id"] = "U0002"
    assert await click(http, forged) == 200
    await settle(http)
    assert "another channel" in fake_slack.responses[-1]["text"]
    assert feedback.counts(db, personal, [paper])[paper] == (1, 0)


async def test_a_guests_click_over_socket_mode(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    digest = record_digest(services)
    ts = await post_digest(fake_slack, digest)
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    async with socket_mode(services, fake_slack):
        await fake_slack.send_envelope(
            {
                "envelope_id": "0b7e6a3c-1f8e-4b5f-9d3a-000000000091",
                "type": "interactive",
                "accepts_response_payload": False,
                "payload": shaped(click_payload(fake_slack, ts, VOTE_UP), "org install"),
            }
        )
        assert await eventually(lambda: updates(fake_slack))
    assert votes(services) == [(paper, GUEST, 1)]
    assert fake_slack.responses == []


def test_the_manifest_lets_papers_be_typed_in_the_apps_dm() -> None:
    """A read-only Messages tab has no message box, so no `/papers` there either."""
    manifest = Path(__file__).resolve().parent.parent / "deploy" / "slack-manifest.yml"
    features = manifest.read_text().split("features:", 1)[1].split("oauth_config:", 1)[0]
    assert "messages_tab_enabled: true" in features
    assert "messages_tab_read_only_enabled: false" in features
    assert "messages_tab_read_only_enabled: true" not in features
