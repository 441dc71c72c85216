"""Slack edge cases: clicks in channels shared between workspaces.

Which fields of a `block_actions` payload name which workspace (see docs/explanation/guarantees.md,
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

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.dm import DmChannels
from bot.services import Services
from bot.slack import app as slack_app
from bot.slack import home
from bot.slack.client import make_client
from bot.slack.home import HomeRefreshingPoster
from db import feedback, open_db, saved
from db import home as home_store
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, item_ref
from digests.channels import parse_channel
from digests.replies import info
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import FakeTime
from tests.fakes.rate_limits import RateLimits
from tests.fakes.slack_api import Call, FakeSlack
from tests.fakes.slack_buttons import (
    CHANNEL,
    CHANNEL_ID,
    TEAM,
    Env,
    click,
    click_payload,
    env,
    ephemeral_click,
    item_blocks,
    paper_of,
    post_digest,
    record_digest,
    settle,
    updates,
    votes,
)
from tests.fakes.slack_requests import BOT_TOKEN, make_services, socket_mode
from tests.fakes.slash import slash
from tests.fakes.waiting import eventually

__all__ = ["env"]  # the fixture (tests/fakes/slack_buttons.py), used by name

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
    # the member clicks in (bolt-js#1875; tests/bot/slack/test_edges.py).
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
    manifest = Path(__file__).resolve().parents[3] / "deploy" / "slack-manifest.yml"
    features = manifest.read_text().split("features:", 1)[1].split("oauth_config:", 1)[0]
    assert "messages_tab_enabled: true" in features
    assert "messages_tab_read_only_enabled: false" in features
    assert "messages_tab_read_only_enabled: true" not in features


# --- more edge cases of clicks ---------------------------------------------------------


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
    no DM's (C/G): they are not refused as "another channel's digest". Only the user sees an
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
    rows = db.execute('select paper_id from saved where "user" = ?', [f"slack:{TEAM}/{ME}"])
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


# --- App Home refreshes: paced, stopped by a dead token, never failing a delivery -------

TIER_4 = 100 / 60  # views.publish: "100+ per minute" (Slack's method reference)


def opened_homes(services: Services, users: list[str]) -> None:
    db = open_db(services.db_path)
    for user in users:
        home_store.record_home_opened(db, f"slack:{TEAM}/{user}", NOW.isoformat())


def calls_to(fake: FakeSlack, method: str) -> list[Call]:
    return [call for call in fake.calls if call.method == method]


async def test_a_storm_of_refreshes_keeps_under_views_publish_tier_4(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """30 users' personal digests delivered together, each of whom opened their Home:
    30 refreshes at once. Each starts 60/REFRESHES_PER_MINUTE s after the one before: no
    429, each user's Home published once. (With no spacing, 10,000 digests would make
    10,000 views.publish at the speed of Slack's answers, far past Tier 4, and the Homes
    users open themselves would be refused with them.)"""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    users = [f"U{n:04d}" for n in range(100, 130)]
    opened_homes(services, users)
    clock = FakeTime()
    fake_slack.clock = clock.monotonic
    fake_slack.views_limits = RateLimits(
        channel_rate=TIER_4, channel_burst=5, global_rate=TIER_4, global_burst=5,
        clock=clock.monotonic,
    )  # fmt: skip
    loop = asyncio.get_running_loop()
    home._pacing[loop] = home.RefreshPace(monotonic=clock.monotonic, sleep=clock.sleep)
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=clock.sleep)
    tasks = [home.refresh_home(services, client, TEAM, user) for user in users]
    assert all([await task for task in tasks if task is not None])
    assert fake_slack.views_limited == []
    published = calls_to(fake_slack, "views.publish")
    assert sorted(call.args["user_id"] for call in published) == users
    # Each refresh starts its turn 1.2 s after the one before; its publish lands after
    # a users.info, so two may land together, but never faster than the pace overall.
    span = published[-1].at - published[0].at
    assert span >= (len(users) - 1 - home.REFRESHES_AT_ONCE) * 60 / home.REFRESHES_PER_MINUTE
    assert home.REFRESHES_PER_MINUTE <= 100 / 2  # half of Tier 4 left to users' own Homes


@pytest.mark.parametrize("error", ["token_revoked", "invalid_auth", "not_enabled"])
async def test_refreshes_stop_once_slack_refuses_the_token(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
    error: str,
) -> None:
    """The app uninstalled (or its Home tab turned off) with refreshes waiting: the first
    refusal stops them (one warning), rather than each calling users.info and
    views.publish for two warnings apiece; a Home a user opens is still tried."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    users = [f"U{n:04d}" for n in range(100, 110)]
    opened_homes(services, users)
    for _ in users:
        fake_slack.queue("views.publish", {"ok": False, "error": error})
    clock = FakeTime()
    loop = asyncio.get_running_loop()
    pace = home.RefreshPace(at_once=1, monotonic=clock.monotonic, sleep=clock.sleep)
    home._pacing[loop] = pace
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=clock.sleep)
    with caplog.at_level(logging.WARNING, logger="bot.slack.home"):
        tasks = [home.refresh_home(services, client, TEAM, user) for user in users]
        assert [await task for task in tasks if task is not None] == [False] * len(users)
    assert len(calls_to(fake_slack, "views.publish")) == 1
    assert len(calls_to(fake_slack, "users.info")) == 1
    assert pace.stopped == error
    assert len([r for r in caplog.records if "refreshes stop" in r.getMessage()]) == 1
    assert len(caplog.records) <= 2  # the failed publish, and the stop
    # Nothing more goes to Slack for a later change; a Home opened by its user does.
    again = home.refresh_home(services, client, TEAM, users[0])
    assert again is not None and not await again
    assert len(calls_to(fake_slack, "views.publish")) == 1
    await home.publish_home(services, client, TEAM, users[0])
    assert len(calls_to(fake_slack, "views.publish")) == 2


async def test_a_refresh_that_cannot_start_never_fails_the_delivery(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The message is posted when the refresh starts: a send that raised then would be
    retried by the outbox, and the digest posted twice."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)

    def broken(*args: object) -> None:
        raise RuntimeError("a bug in the refresh")

    monkeypatch.setattr(home, "refresh_home", broken)
    db = open_db(services.db_path)
    poster = HomeRefreshingPoster(
        make_client(BOT_TOKEN, fake_slack.api_url), services=services, dms=DmChannels(lambda: db)
    )
    with caplog.at_level(logging.ERROR, logger="bot.slack.home"):
        sent = await poster.send(parse_channel(MINE), {"text": "Your digest"}, None)
    assert sent and len(fake_slack.posted()) == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"could not start the Home refresh of {MINE}"
    ]


# --- a save goes to the list the clicker sees in the workspace they clicked in ----------


async def test_an_org_members_save_is_in_their_papers_saved_where_they_clicked(
    env: Env, fake_slack: FakeSlack
) -> None:
    """In an Enterprise org, `user.team_id` need not be the workspace of the click: a
    member of three workspaces got the same team_id from all three (slackapi/bolt-js#1875),
    while `team.id` is the click's workspace. A save filed under `user.team_id`
    (`slack:T0003/U0001`) would be missing from `/papers saved` typed in the workspace of
    the digest, and from the Home opened there (both `slack:T0001/U0001`). In an org the
    list is the workspace's the click came from; outside one, a Slack Connect guest's own."""
    services, http, _, ts = env
    payload = click_payload(fake_slack, ts, SAVE)
    payload["user"]["team_id"] = "T0003"  # another workspace of the same org
    payload["enterprise"] = {"id": "E0001", "name": "Org"}
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    assert await click(http, payload) == 200
    await settle(http)
    assert "Saved" in fake_slack.responses[-1]["text"]
    answer = await slash(http, fake_slack, "saved", channel=CHANNEL_ID, name="papers")
    shown = json.dumps(answer, ensure_ascii=False) + json.dumps(fake_slack.responses[-1:])
    title = str(
        open_db(services.db_path)
        .execute("select title from papers where id = ?", [paper])
        .fetchone()[0]
    )
    assert title[:40] in shown, shown[:300]


async def test_a_long_429_holds_the_refreshes_instead_of_losing_each(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """A 429 whose Retry-After (120 s) is longer than the client waits out: the refresh
    fails. The next ones wait RATE_LIMITED_PAUSE first, rather than go on 1.2 s apart
    into the same limit, each refused and lost."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    users = ["U0100", "U0101", "U0102"]
    opened_homes(services, users)
    fake_slack.queue(
        "views.publish", {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "120"}
    )
    clock = FakeTime()
    fake_slack.clock = clock.monotonic
    loop = asyncio.get_running_loop()
    home._pacing[loop] = home.RefreshPace(at_once=1, monotonic=clock.monotonic, sleep=clock.sleep)
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=clock.sleep)
    tasks = [home.refresh_home(services, client, TEAM, user) for user in users]
    # Which user's refresh starts first (and meets the 429) is the tasks' order: not fixed.
    assert sorted([await task for task in tasks if task is not None]) == [False, True, True]
    first, second, _ = calls_to(fake_slack, "views.publish")
    assert second.at - first.at >= home.RATE_LIMITED_PAUSE
