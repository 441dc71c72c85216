"""Clicks on a Slack digest's buttons, over HTTP, through the real path.

A digest is recorded and its Block Kit posted to the fake Web API with the real client;
a click is a signed `block_actions` payload (the fields Slack sends, as in Slack's
interactivity reference) on that posted message, to Paperboy's HTTP endpoint. No test
here is timed: "acknowledged first" is shown by holding the click's work.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.slack import app as slack_app
from bot.slack.actions import ClickHandlers
from bot.slack.app import click_handlers
from bot.slack.home import HOME_UNSAVE, HOME_UNSUBSCRIBE, handle_home_action
from db import feedback, open_db, saved
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, item_ref
from digests.digest import Digest
from digests.render import limits
from digests.render import slack as slack_render
from digests.replies import Attachment, Reply, info
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_buttons import (
    CHANNEL,
    CHANNEL_ID,
    TEAM,
    Env,
    click,
    click_payload,
    env,
    ephemeral_click,
    form,
    hold_apply,
    item_blocks,
    paper_of,
    post_digest,
    record_digest,
    settle,
    updates,
    votes,
)
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    assert_valid_blocks,
    make_services,
    signed_headers,
    slash_body,
    socket_mode,
)
from tests.fakes.waiting import eventually


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


async def test_a_registered_prefix_gets_its_clicks(env: Env, fake_slack: FakeSlack) -> None:
    _, http, _, ts = env
    seen: list[str] = []

    async def home(services: Any, client: Any, payload: Any, action: Any, lane: Any) -> None:
        seen.append(action["action_id"])

    http.endpoint.click_handlers.register("paperboy_home_", home)
    with pytest.raises(ValueError):
        http.endpoint.click_handlers.register("paperboy_", home)  # would take the item buttons
    payload = click_payload(fake_slack, ts, VOTE_UP)
    payload["actions"][0]["action_id"] = "paperboy_home_unsave"
    del payload["message"]  # a Home tab click has no message
    payload["container"] = {"type": "view", "view_id": "V0001"}
    assert await click(http, payload) == 200
    await settle(http)
    assert seen == ["paperboy_home_unsave"]


async def test_building_the_app_registers_the_home_buttons(env: Env) -> None:
    """No list fills itself on import: each app built (the Socket Mode app's factory, the
    HTTP endpoint) has the Home's buttons, and a bare ClickHandlers has none."""
    _, http, _, _ = env
    assert ClickHandlers().get(HOME_UNSAVE) is None
    for handlers in (click_handlers(), http.endpoint.click_handlers):
        assert handlers.get(HOME_UNSAVE) is handle_home_action
        assert handlers.get(HOME_UNSUBSCRIBE) is handle_home_action
        assert handlers.get(VOTE_UP) is None


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
    manifest = (Path(__file__).resolve().parents[3] / "deploy" / "slack-manifest.yml").read_text()
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


# --- more clicks over signed HTTP ---------------------------------------------------

__all__ = ["env"]


async def test_a_click_on_a_commands_ephemeral_digest_counts_and_is_answered(
    env: Env,
    fake_slack: FakeSlack,
) -> None:
    """`/papers digest` once the digest is built answers with it, ephemerally, buttons
    included. Slack sends a click there without the message (it is the user's only):
    the vote counts, nothing tries to chat.update an ephemeral message (Slack cannot),
    and the clicker is answered through response_url."""
    services, http, digest, _ = env
    messages = slack_app.payloads(info("This week's digest (already built):", digest=digest))
    assert all(m["response_type"] == "ephemeral" for m in messages)
    shown = [b for m in messages for b in m["blocks"]]
    assert any(b["type"] == "actions" for b in shown)  # the reply carries buttons
    for with_message in (False, True):
        fake_slack.responses.clear()
        action = VOTE_UP if not with_message else SAVE
        payload, paper = ephemeral_click(fake_slack, shown, action, with_message=with_message)
        assert await click(http, payload) == 200
        await settle(http)
        assert updates(fake_slack) == []
        [answer] = fake_slack.responses
        assert answer["response_type"] == "ephemeral" and answer["replace_original"] is False
        if action == VOTE_UP:
            assert votes(services) == [(paper, "U0001", 1)]
            assert "Noted" in answer["text"]
        else:
            db = open_db(services.db_path)
            rows = db.query('select paper_id from saved where "user" = ?', [f"slack:{TEAM}/U0001"])
            assert [r["paper_id"] for r in rows] == [paper]


async def test_a_vote_on_an_ephemeral_message_that_has_one_is_not_chat_updated(
    env: Env,
    fake_slack: FakeSlack,
) -> None:
    """Should Slack include the message, still no chat.update (an ephemeral message is
    not the bot's to update: Slack answers message_not_found): the answer says the vote
    was noted, not that the count could not be shown."""
    services, http, digest, _ = env
    shown = [b for m in slack_app.payloads(info("x", digest=digest)) for b in m["blocks"]]
    payload, paper = ephemeral_click(fake_slack, shown, VOTE_UP, with_message=True)
    assert await click(http, payload) == 200
    await settle(http)
    assert updates(fake_slack) == []
    assert votes(services) == [(paper, "U0001", 1)]
    [answer] = fake_slack.responses
    assert "Noted" in answer["text"] and "could not show" not in answer["text"]


async def test_a_normal_click_still_updates(env: Env, fake_slack: FakeSlack) -> None:
    _, http, _, ts = env
    assert await click(http, click_payload(fake_slack, ts, VOTE_UP)) == 200
    await settle(http)
    assert len(updates(fake_slack)) == 1 and fake_slack.responses == []


HOSTILE = [
    "value dict",
    "value number",
    "value null",
    "value huge",
    "junk blocks",
    "block_id not a string",
    "text not a string",
    "enterprise null team",
    "five actions",
    "view container",
    "paperboy_item of a paper not in the digest",
]


@pytest.mark.parametrize("case", HOSTILE)
async def test_hostile_signed_clicks_never_fail_and_never_miscount(
    env: Env,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
    case: str,
) -> None:
    """Shapes a signed payload could have: each is refused (400) or answered with a
    clear line, never 'something went wrong' (an exception), never a wrong count."""
    services, http, _, ts = env
    payload: Any = click_payload(fake_slack, ts, VOTE_UP)
    action = payload["actions"][0]
    counts_one = False
    if case == "value dict":
        action["value"] = {"digest": 1}
    elif case == "value number":
        action["value"] = 12
    elif case == "value null":
        action["value"] = None
    elif case == "value huge":
        action["value"] = "1:" + "p" * 100_000
    elif case == "junk blocks":
        payload["message"]["blocks"] = [*payload["message"]["blocks"], "x", 3, None, [], {}]
        counts_one = True
    elif case == "block_id not a string":
        payload["message"]["blocks"].append({"type": "actions", "block_id": ["x"]})
        counts_one = True  # copied back as Slack sent it: Slack refuses the update
    elif case == "text not a string":
        payload["message"]["text"] = {"a": 1}
        counts_one = True
    elif case == "enterprise null team":
        payload["team"] = None
        payload["enterprise"] = {"id": "E0001", "name": "org"}
        counts_one = True  # user.team_id is the workspace
    elif case == "five actions":
        payload["actions"] = [dict(action) for _ in range(5)]
        counts_one = True  # the same vote five times counts once
    elif case == "view container":
        payload["container"] = {"type": "view", "view_id": "V0001"}
        del payload["message"]
    else:
        extra = {
            "type": "actions",
            "block_id": "paperboy_item:p0123456789abcdef",
            "elements": [
                {
                    "type": "button",
                    "action_id": "paperboy_up",
                    "text": {"type": "plain_text", "text": "👍 99"},
                    "value": "1:p0123456789abcdef",
                }
            ],
        }
        payload["message"]["blocks"].insert(3, extra)
        counts_one = True
    with caplog.at_level(logging.INFO):
        status = await click(http, payload)
        await settle(http)
    assert status in (200, 400, 413)  # 413: the HTTP server's body limit
    assert "something went wrong" not in json.dumps(fake_slack.responses)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(votes(services)) == (1 if counts_one else 0)
    if case == "block_id not a string":
        assert "your vote counts" in fake_slack.responses[-1]["text"]
    elif counts_one:
        assert len(updates(fake_slack)) == 1
        repeats = 4 if case == "five actions" else 0
        assert [r["text"] for r in fake_slack.responses] == [
            "👍 Already counted for offline-rl."
        ] * repeats


async def test_concurrent_clicks_and_a_429_leave_the_message_with_every_count(
    env: Env, fake_slack: FakeSlack
) -> None:
    """Six people click at once on two items, and Slack answers the first chat.update
    with 429 (Retry-After 1): every vote counts once, and the message, whatever order
    the updates ran in, ends with the counts the database has (each update reads them
    afresh under the message's lock; nothing comes from the payload's stale blocks)."""
    services, http, _, ts = env
    fake_slack.queue(
        "chat.update", {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "1"}
    )
    payloads = [
        click_payload(fake_slack, ts, VOTE_UP if n % 3 else VOTE_DOWN, n % 2, user=f"U000{n}")
        for n in range(1, 7)
    ]  # all taken from the message as first posted, as concurrent clicks would be
    statuses = await asyncio.gather(*(click(http, p) for p in payloads))
    assert statuses == [200] * 6
    await settle(http)
    assert len(votes(services)) == 6
    db = open_db(services.db_path)
    blocks = [b for b in fake_slack.messages[(CHANNEL_ID, ts)]["blocks"] if b["type"] == "actions"]
    for block in blocks[:2]:
        paper = paper_of(block)
        up, down = feedback.counts(db, CHANNEL, [paper])[paper]
        assert up + down == 3
        shown = [e["text"]["text"] for e in block["elements"][:2]]
        assert shown == [f"👍 {up}", f"👎 {down}"]
    assert fake_slack.responses == []


async def test_a_click_cut_off_by_a_stop_is_not_silently_lost(
    env: Env, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop begins while one click runs and another waits for the same message: the
    waiting one never runs (the change lane takes no work once stopping), and its
    clicker is told so through response_url (it was acknowledged, so Slack shows nothing
    wrong). A click arriving during
    the stop is told the same. The running one completes within the grace."""
    services, http, _, ts = env
    release = hold_apply(monkeypatch)
    first = click_payload(fake_slack, ts, VOTE_UP, user="U0001", response="first")
    second = click_payload(fake_slack, ts, VOTE_UP, 1, user="U0002", response="second")
    assert await click(http, first) == 200
    assert await click(http, second) == 200
    stopping = asyncio.ensure_future(http.endpoint.close(grace=20))
    assert await eventually(lambda: http.endpoint._closing)
    third = click_payload(fake_slack, ts, VOTE_DOWN, user="U0003", response="third")
    assert await click(http, third) == 200
    release.set()
    await stopping
    assert [user for _, user, _ in votes(services)] == ["U0001"]
    told = {
        n: r["text"] for n, r in zip(fake_slack.response_names, fake_slack.responses, strict=True)
    }
    assert set(told) == {"second", "third"}
    assert all("restarting and did not act on that click" in text for text in told.values())


def full_item(
    n: int, digest_id: int, title_chars: int = 200, tldr_chars: int = 300
) -> list[dict[str, Any]]:
    """One digest item as Paperboy renders it with every field at a realistic length
    (by default a 200-character title, a 300-character TL;DR: the view's caps; accented
    author names; arXiv and GitHub links), not one of Paperboy's recorded papers."""
    paper = f"p{n:016x}"
    title = ("Offline Reinforcement Learning with Conservative Value Estimates " * 4)[:title_chars]
    tldr = (
        "A conservative Q-function lower-bounds the policy's value, so offline RL does not overestimate unseen actions; "
        * 3
    )[:tldr_chars]
    abs_url, pdf_url = f"https://arxiv.org/abs/2406.{n:05d}", f"https://arxiv.org/pdf/2406.{n:05d}"
    code = f"https://github.com/some-research-lab/conservative-offline-rl-{n}"
    text = (
        f"*— Offline RL —*\n*<{abs_url}|{title}>*\n"
        "Sébastien Bubeck, Bernhard Schölkopf, Łukasz Kaiser et al.\n_NeurIPS 2024 · Offline RL_\n"
        f"<{abs_url}|paper> · <{pdf_url}|PDF> · <{code}|code>\n{tldr}"
    )
    section = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    links = (("paper", abs_url), ("PDF", pdf_url), ("code", code))
    actions = slack_render.item_actions(digest_id, paper, links)
    assert actions is not None
    return [section, actions]


async def test_a_click_on_a_full_digest_message_is_not_too_large_for_http_mode(
    env: Env, fake_slack: FakeSlack
) -> None:
    """Slack sends the whole message, form-encoded, with every click. A full message
    (50 blocks: 23 items) makes a click body within the 64 KB default of
    PAPERBOY_SLACK_MAX_BODY_BYTES; more per item (buttons, fields) would get Slack 413
    for clicks on full digests, and nothing would count. This test says so first.
    A message also carries at most `limits.SLACK_MESSAGE_TEXT` characters of text, so 23
    items have ~400 each: a 60-character title and no TL;DR besides the other fields
    (23 items with every field at its cap, 841 characters each, were a ~55 KB body, and
    a message Slack refuses with msg_blocks_too_long)."""
    services, http, digest, ts = env
    assert digest.digest_id is not None
    message = fake_slack.messages[(CHANNEL_ID, ts)]
    blocks = message["blocks"]
    footer = blocks.pop()
    while len(blocks) + 2 <= limits.SLACK_MAX_BLOCKS - 1:
        blocks += full_item(len(blocks), digest.digest_id, title_chars=60, tldr_chars=0)
    blocks.append(footer)
    assert len(blocks) == limits.SLACK_MAX_BLOCKS and not limits.slack_problems(message)
    payload = click_payload(fake_slack, ts, VOTE_UP)
    body = form(payload)
    assert 40 * 1024 < len(body.encode()) < 64 * 1024  # ~46 KB: the margin is ~27%
    assert await click(http, payload) == 200
    await settle(http)
    assert len(votes(services)) == 1 and len(updates(fake_slack)) == 1


async def test_a_burst_of_clicks_costs_slack_a_few_updates_not_one_per_click(
    env: Env, fake_slack: FakeSlack
) -> None:
    """While one update of a message waits out a 429, five more votes on it are counted;
    the next update shows them all, so the clicks whose votes it showed send none
    (before: one chat.update per click, 7 calls with the retry, each a call against
    Slack's rate limit while it is already refusing). The message ends right."""
    services, http, _, ts = env
    fake_slack.queue(
        "chat.update", {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "2"}
    )
    first = click_payload(fake_slack, ts, VOTE_UP, user="U0001")
    rest = [click_payload(fake_slack, ts, VOTE_DOWN, 1, user=f"U000{n}") for n in range(2, 7)]
    assert await click(http, first) == 200
    assert await eventually(lambda: len(fake_slack.posted("chat.update")) == 1)
    assert await asyncio.gather(*(click(http, p) for p in rest)) == [200] * 5
    await settle(http)
    assert len(votes(services)) == 6
    calls = len(fake_slack.posted("chat.update"))
    assert calls <= 3  # the 429, its retry, one for the five (two if one came late)
    blocks = [b for b in fake_slack.messages[(CHANNEL_ID, ts)]["blocks"] if b["type"] == "actions"]
    assert [e["text"]["text"] for e in blocks[0]["elements"][:2]] == ["👍 1", "👎 0"]
    assert [e["text"]["text"] for e in blocks[1]["elements"][:2]] == ["👍 0", "👎 5"]
    assert fake_slack.responses == []


async def test_an_updated_items_buttons_get_a_new_block_id(env: Env, fake_slack: FakeSlack) -> None:
    """Slack: "block_id should be unique for each message and each iteration of a
    message. If a message is updated, use a new block_id" (clients may keep a block they
    already have by its id, and show the old count). An item whose counts change gets a
    block_id naming them; the others keep theirs; clicks on the updated message still
    find their item."""
    services, http, _, ts = env
    before = [b["block_id"] for b in item_blocks(fake_slack, ts)]
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    assert await click(http, click_payload(fake_slack, ts, VOTE_UP)) == 200
    await settle(http)
    after = [b["block_id"] for b in item_blocks(fake_slack, ts)]
    assert after[0] == f"{slack_render.ITEM_BLOCK_PREFIX}{paper}:1.0" != before[0]
    assert after[1:] == before[1:]
    assert await click(http, click_payload(fake_slack, ts, VOTE_DOWN)) == 200  # same user
    await settle(http)
    assert item_blocks(fake_slack, ts)[0]["block_id"].endswith(f"{paper}:0.1")
    assert await click(http, click_payload(fake_slack, ts, VOTE_UP, user="U0002")) == 200
    await settle(http)
    assert item_blocks(fake_slack, ts)[0]["block_id"].endswith(f"{paper}:1.1")
    assert votes(services) == [(paper, "U0001", -1), (paper, "U0002", 1)]
    assert len(updates(fake_slack)) == 3


async def test_an_ephemeral_click_over_socket_mode(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """The same click on `/papers digest`'s ephemeral reply, through bolt over the fake's
    websocket: acknowledged, counted, answered; no chat.update."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    digest = record_digest(services)
    shown = [b for m in slack_app.payloads(info("x", digest=digest)) for b in m["blocks"]]
    payload, paper = ephemeral_click(fake_slack, shown, VOTE_UP, with_message=False)
    async with socket_mode(services, fake_slack):
        envelope = {
            "envelope_id": "0b7e6a3c-1f8e-4b5f-9d3a-0000000000e1",
            "type": "interactive",
            "accepts_response_payload": False,
            "payload": payload,
        }
        await fake_slack.send_envelope(envelope)
        # The ack travels the websocket, the answer HTTP: either may reach the fake first.
        assert await eventually(lambda: fake_slack.responses and fake_slack.socket_acks)
        assert fake_slack.socket_acks[-1]["envelope_id"] == envelope["envelope_id"]
        assert votes(services) == [(paper, "U0001", 1)]
        assert "Noted" in fake_slack.responses[0]["text"] and updates(fake_slack) == []
