"""Issue 13: clicks on a Slack digest's buttons, over HTTP, through the real path.

A digest is recorded and its Block Kit posted to the fake Web API with the real client;
a click is a signed `block_actions` payload (the fields Slack sends, as in Slack's
interactivity reference) on that posted message, to Paperboy's HTTP endpoint. No test
here is timed: "acknowledged first" is shown by holding the click's work.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.services import Services
from bot.slack import actions as slack_actions
from bot.slack import app as slack_app
from bot.slack.client import make_client
from db import feedback, open_db, saved
from db.channels import add_subscription
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, item_ref
from digests.commands.replies import Attachment, Reply
from digests.digest import Digest, build_digest, ensure_channel
from digests.render import slack as slack_render
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.slack_helpers import (
    BOT_TOKEN,
    HttpClient,
    assert_valid_blocks,
    make_services,
    signed_headers,
    slash_body,
    start_http,
)
from tests.waiting import eventually

TEAM, CHANNEL_ID = "T0001", "C0001"
CHANNEL = f"slack:{TEAM}/{CHANNEL_ID}"


def record_digest(services: Services, channel: str = CHANNEL, topic: str = "offline-rl") -> Digest:
    db = open_db(services.db_path)
    ensure_channel(db, channel, services.settings, NOW)
    add_subscription(db, channel, topic, None, "test", NOW.isoformat())
    digest = build_digest(db, channel, NOW, catalog=services.catalog, settings=services.settings)
    assert digest.recorded and digest.digest_id is not None and len(digest.items) >= 2
    return digest


async def post_digest(fake: FakeSlack, digest: Digest, channel_id: str = CHANNEL_ID) -> str:
    """The digest's first message, posted with the real client; its ts."""
    message = slack_render.digest_messages(digest)[0]
    client = make_client(BOT_TOKEN, fake.api_url)
    posted = await client.chat_postMessage(channel=channel_id, **message.payload())
    return str(posted["ts"])


def item_blocks(fake: FakeSlack, ts: str, channel_id: str = CHANNEL_ID) -> list[dict[str, Any]]:
    blocks = fake.messages[(channel_id, ts)]["blocks"]
    return [b for b in blocks if b["type"] == "actions"]


def click_payload(
    fake: FakeSlack,
    ts: str,
    action_id: str,
    item: int = 0,
    *,
    user: str = "U0001",
    channel_id: str = CHANNEL_ID,
    value: str | None = None,
    response: str = "click",
) -> dict[str, Any]:
    """A `block_actions` payload as Slack sends it for a click on the message's item."""
    message = fake.messages[(channel_id, ts)]
    block = item_blocks(fake, ts, channel_id)[item]
    button = next(e for e in block["elements"] if e["action_id"] == action_id)
    action = {
        "action_id": action_id,
        "block_id": block["block_id"],
        "text": button["text"],
        "type": "button",
        "action_ts": "1764480000.123456",
    }
    if "url" in button:
        action["url"] = button["url"]
    else:
        action["value"] = button["value"] if value is None else value
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": channel_id,
            "is_ephemeral": False,
        },
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": TEAM, "domain": "lab"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel_id, "name": "papers"},
        "message": {
            "type": "message",
            "subtype": "bot_message",
            "user": "UBOT",
            "bot_id": "B0001",
            "ts": ts,
            "text": message["text"],
            "blocks": message["blocks"],
        },
        "state": {"values": {}},
        "response_url": fake.response_url(response),
        "actions": [action],
    }


def form(payload: dict[str, Any] | str) -> str:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return urlencode({"payload": text})


async def click(http: HttpClient, payload: dict[str, Any] | str) -> int:
    body = form(payload)
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    return response.status


def paper_of(block: dict[str, Any]) -> str:
    return str(slack_render.item_paper(block["block_id"]))


def votes(services: Services) -> list[tuple[str, str, int]]:
    db = open_db(services.db_path)
    return [
        (str(r["paper_id"]), str(r["user"]), int(r["vote"]))
        for r in db.query("select paper_id, user, vote from feedback order by id")
    ]


def updates(fake: FakeSlack) -> list[dict[str, Any]]:
    return fake.posted("chat.update")


@pytest.fixture
async def env(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack):  # type: ignore[no-untyped-def]
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    http = await start_http(services, fake_slack)
    digest = record_digest(services)
    ts = await post_digest(fake_slack, digest)
    yield services, http, digest, ts
    await http.close()


Env = tuple[Services, HttpClient, Digest, str]


async def settle(http: HttpClient) -> None:
    """Wait for the clicks acknowledged so far to finish (the endpoint's background work)."""
    assert await eventually(lambda: not http.endpoint._followups)


def hold_apply(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every click's `apply_action`, in its thread, until the returned event is set."""
    release = threading.Event()
    real = slack_actions.apply_action

    def held(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(slack_actions, "apply_action", held)
    return release


async def test_a_vote_is_counted_and_the_message_shows_it(env: Env, fake_slack: FakeSlack) -> None:
    services, http, digest, ts = env
    first = item_blocks(fake_slack, ts)[0]
    assert await click(http, click_payload(fake_slack, ts, VOTE_UP)) == 200
    await settle(http)
    paper = paper_of(first)
    assert votes(services) == [(paper, "U0001", 1)]
    [update] = updates(fake_slack)
    assert (update["channel"], update["ts"]) == (CHANNEL_ID, ts)
    now = item_blocks(fake_slack, ts)
    assert [e["text"]["text"] for e in now[0]["elements"][:3]] == ["👍 1", "👎 0", "🔖 Save"]
    assert now[1] == item_blocks_before(digest)[1]  # the other items' buttons: as they were
    others = [b for b in fake_slack.messages[(CHANNEL_ID, ts)]["blocks"] if b["type"] != "actions"]
    posted = slack_render.digest_messages(digest)[0].blocks
    assert others == [b for b in posted if b["type"] != "actions"]  # nothing else changed
    assert_valid_blocks(fake_slack.messages[(CHANNEL_ID, ts)]["blocks"])
    assert fake_slack.responses == []  # the count on the message says it all


def item_blocks_before(digest: Digest) -> list[dict[str, Any]]:
    return [b for b in slack_render.digest_messages(digest)[0].blocks if b["type"] == "actions"]


async def test_a_repeated_click_counts_once_and_the_other_vote_replaces(
    env: Env, fake_slack: FakeSlack
) -> None:
    services, http, _, ts = env
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    for _ in range(2):
        assert await click(http, click_payload(fake_slack, ts, VOTE_UP)) == 200
        await settle(http)
    assert votes(services) == [(paper, "U0001", 1)]
    assert len(updates(fake_slack)) == 1
    assert "Already counted" in fake_slack.responses[-1]["text"]
    assert fake_slack.responses[-1]["response_type"] == "ephemeral"
    assert await click(http, click_payload(fake_slack, ts, VOTE_DOWN)) == 200
    await settle(http)
    assert votes(services) == [(paper, "U0001", -1)]
    texts = [e["text"]["text"] for e in item_blocks(fake_slack, ts)[0]["elements"][:2]]
    assert texts == ["👍 0", "👎 1"]
    assert await click(http, click_payload(fake_slack, ts, VOTE_UP, user="U0002")) == 200
    await settle(http)
    counts = feedback.counts(open_db(services.db_path), CHANNEL, [paper])[paper]
    assert counts == (1, 1)
    texts = [e["text"]["text"] for e in item_blocks(fake_slack, ts)[0]["elements"][:2]]
    assert texts == ["👍 1", "👎 1"]


async def test_save_goes_to_the_users_list_and_says_so(env: Env, fake_slack: FakeSlack) -> None:
    services, http, _, ts = env
    paper = paper_of(item_blocks(fake_slack, ts)[1])
    assert await click(http, click_payload(fake_slack, ts, SAVE, item=1)) == 200
    await settle(http)
    rows = saved.saved_papers(open_db(services.db_path), f"slack:{TEAM}/U0001")
    assert [row["id"] for row in rows] == [paper]
    [answer] = fake_slack.responses
    assert answer["response_type"] == "ephemeral" and answer["replace_original"] is False
    assert "Saved" in answer["text"]
    assert updates(fake_slack) == [] and votes(services) == []


@pytest.mark.parametrize("case", ["forged", "unknown digest", "other channel", "not in digest"])
async def test_a_click_that_must_not_count_changes_nothing(
    env: Env, fake_slack: FakeSlack, case: str
) -> None:
    services, http, digest, ts = env
    assert digest.digest_id is not None
    if case == "forged":
        value, expected = "1; drop table feedback", "not one of Paperboy's"
    elif case == "unknown digest":
        value, expected = item_ref(digest.digest_id + 1000, "p0123456789abcdef"), "not in"
    elif case == "other channel":
        other = record_digest(services, f"slack:{TEAM}/C0002")
        assert other.digest_id is not None
        value = item_ref(other.digest_id, str(other.items[0].paper["id"]))
        expected = "another channel"
    else:
        value, expected = item_ref(digest.digest_id, "p0123456789abcdef"), "not in this digest"
    for action in (VOTE_UP, SAVE):
        payload = click_payload(fake_slack, ts, action, value=value)
        assert await click(http, payload) == 200
        await settle(http)
        assert expected in fake_slack.responses[-1]["text"]
    assert votes(services) == []
    assert saved.saved_papers(open_db(services.db_path), f"slack:{TEAM}/U0001") == []
    assert updates(fake_slack) == []


async def test_unsigned_and_replayed_clicks_are_refused(env: Env, fake_slack: FakeSlack) -> None:
    services, http, _, ts = env
    body = form(click_payload(fake_slack, ts, VOTE_UP))
    unsigned = await http.post(
        "/slack/events", data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert unsigned.status == 401
    wrong = await http.post("/slack/events", data=body, headers=signed_headers(body, "nope" * 8))
    assert wrong.status == 401
    assert http.endpoint.clicks == 0 and votes(services) == []
    headers = signed_headers(body)
    assert (await http.post("/slack/events", data=body, headers=headers)).status == 200
    await settle(http)
    before = (votes(services), len(fake_slack.calls), len(fake_slack.responses))
    replay = await http.post("/slack/events", data=body, headers=headers)
    assert replay.status == 200  # acknowledged, and nothing runs again
    await settle(http)
    assert http.endpoint.clicks == 1
    assert (votes(services), len(fake_slack.calls), len(fake_slack.responses)) == before


@pytest.mark.parametrize(
    "mangle",
    [
        "not json",
        "no actions",
        "actions not a list",
        "no user",
        "no message",
        "bad ts",
        "foreign response_url",
        "channel mismatch",
    ],
)
async def test_a_signed_but_malformed_click_gets_400_and_changes_nothing(
    env: Env, fake_slack: FakeSlack, mangle: str
) -> None:
    services, http, _, ts = env
    payload: Any = click_payload(fake_slack, ts, VOTE_UP)
    if mangle == "not json":
        payload = "{not json"
    elif mangle == "no actions":
        payload["actions"] = []
    elif mangle == "actions not a list":
        payload["actions"] = {"action_id": VOTE_UP}
    elif mangle == "no user":
        del payload["user"]
    elif mangle == "no message":
        del payload["message"]
    elif mangle == "bad ts":
        payload["container"]["message_ts"] = "../../etc"
    elif mangle == "foreign response_url":
        payload["response_url"] = "http://169.254.169.254/latest/meta-data"
    else:
        payload["container"]["channel_id"] = "C0999"
    assert await click(http, payload) == 400
    await settle(http)
    assert http.endpoint.clicks == 0
    assert votes(services) == [] and updates(fake_slack) == [] and fake_slack.responses == []


async def test_link_buttons_are_acknowledged_and_ignored(
    env: Env, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    services, http, _, ts = env
    block = item_blocks(fake_slack, ts)[0]
    block["elements"].append(
        {
            "type": "button",
            "action_id": "paperboy_pdf",
            "text": {"type": "plain_text", "text": "PDF"},
            "url": "https://arxiv.org/pdf/2401.00001",
        }
    )
    payload = click_payload(fake_slack, ts, "paperboy_pdf")
    assert payload["actions"][0]["url"] and "value" not in payload["actions"][0]
    assert await click(http, payload) == 200
    await settle(http)
    assert http.endpoint.clicks == 1
    assert votes(services) == [] and updates(fake_slack) == [] and fake_slack.responses == []


async def test_the_click_is_acknowledged_before_its_work_runs(
    env: Env, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held in the change lane, the click is still acknowledged; released, it counts."""
    services, http, _, ts = env
    release = hold_apply(monkeypatch)
    try:
        assert await click(http, click_payload(fake_slack, ts, VOTE_UP)) == 200
        assert votes(services) == [] and http.endpoint._followups
    finally:
        release.set()
    await settle(http)
    assert len(votes(services)) == 1 and len(updates(fake_slack)) == 1


async def test_a_failed_message_update_is_logged_and_the_vote_stands(
    env: Env, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    services, http, _, ts = env
    fake_slack.queue("chat.update", {"ok": False, "error": "cant_update_message"})
    with caplog.at_level(logging.WARNING, logger="bot.slack.actions"):
        assert await click(http, click_payload(fake_slack, ts, VOTE_UP)) == 200
        await settle(http)
    assert len(votes(services)) == 1
    assert "cant_update_message" in caplog.text and BOT_TOKEN not in caplog.text
    [answer] = fake_slack.responses
    assert "your vote counts" in answer["text"]


async def test_a_registered_prefix_gets_its_clicks(
    env: Env, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, http, _, ts = env
    monkeypatch.setattr(slack_actions, "_handlers", [])
    seen: list[str] = []

    async def home(services: Any, client: Any, payload: Any, action: Any, lane: Any) -> None:
        seen.append(action["action_id"])

    slack_actions.register("paperboy_home_", home)
    with pytest.raises(ValueError):
        slack_actions.register("paperboy_", home)  # would take over the item buttons
    payload = click_payload(fake_slack, ts, VOTE_UP)
    payload["actions"][0]["action_id"] = "paperboy_home_unsave"
    del payload["message"]  # a Home tab click has no message
    payload["container"] = {"type": "view", "view_id": "V0001"}
    assert await click(http, payload) == 200
    await settle(http)
    assert seen == ["paperboy_home_unsave"]


async def test_an_attachment_goes_to_the_users_dm(
    env: Env, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, http, _, _ = env
    bib = "@misc{key2024, title = {A {LaTeX} $\\alpha$ title}}\n"
    reply = Reply("2 saved papers as BibTeX", attachment=Attachment("saved.bib", bib))
    monkeypatch.setattr(slack_app, "handle", lambda text, ctx: reply)
    body = slash_body("saved export", fake_slack.response_url())
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    answer = json.loads(await response.text())
    assert answer["response_type"] == "ephemeral"
    assert "I sent `saved.bib` to your direct messages" in json.dumps(answer, ensure_ascii=False)
    [upload] = fake_slack.uploads
    assert upload["content"].decode() == bib and upload["name"] == "saved.bib"
    assert upload["channel_id"] == fake_slack.dms["U0001"]
    fake_slack.queue("conversations.open", {"ok": False, "error": "missing_scope"})
    again = slash_body("saved export", fake_slack.response_url("r2"))  # not a replay
    response = await http.post("/slack/events", data=again, headers=signed_headers(again))
    failed = json.dumps(json.loads(await response.text()))
    assert "could not send you" in failed and "missing_scope" in failed
    assert len(fake_slack.uploads) == 1


def test_the_manifest_turns_interactivity_on() -> None:
    manifest = (
        Path(__file__).resolve().parent.parent / "deploy" / "slack-manifest.yml"
    ).read_text()
    settings = manifest[manifest.index("settings:") :]
    assert "interactivity:\n    is_enabled: true" in settings
    assert "- files:write " in manifest  # saved export's upload
    assert "request_url: https://YOUR-HOST/slack/events" in manifest  # HTTP mode, documented


async def test_a_click_in_a_direct_message_is_on_the_users_own_digest(
    env: Env, fake_slack: FakeSlack
) -> None:
    services, http, _, _ = env
    personal = f"slack:{TEAM}/@U0001"
    digest = record_digest(services, personal)
    dm = "D00000042"
    ts = await post_digest(fake_slack, digest, channel_id=dm)
    paper = paper_of(item_blocks(fake_slack, ts, dm)[0])
    payload = click_payload(fake_slack, ts, VOTE_UP, channel_id=dm)
    assert await click(http, payload) == 200
    await settle(http)
    db = open_db(services.db_path)
    assert feedback.counts(db, personal, [paper])[paper] == (1, 0)
    # Someone else's click there (they cannot see that DM; a forged one) is refused.
    other = click_payload(fake_slack, ts, VOTE_DOWN, channel_id=dm, user="U0002")
    assert await click(http, other) == 200
    await settle(http)
    assert "another channel" in fake_slack.responses[-1]["text"]
    assert feedback.counts(db, personal, [paper])[paper] == (1, 0)
    assert len(updates(fake_slack)) == 1
