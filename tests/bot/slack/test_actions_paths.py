"""Slack clicks through Socket Mode (the fake's websocket), and the whole path:
a digest delivered through the outbox to the fake Web API, its 👍/👎 clicked as signed
`block_actions` on the posted message, the votes stored, and the channel's next digest,
delivered the same way, ranked by them."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bot.send import send_digest
from bot.slack.client import make_client
from bot.slack.poster import SlackPoster
from db import open_db
from db.channels import add_subscription
from digests.actions import VOTE_DOWN, VOTE_UP
from digests.digest import ensure_channel
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import FakeTime
from tests.fakes.learning import NEXT, NEXT_WEEK, RECOMMENDERS, ROBOTS, TOPIC, ingest
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_buttons import (
    CHANNEL,
    CHANNEL_ID,
    click,
    click_payload,
    hold_apply,
    item_blocks,
    paper_of,
    post_digest,
    record_digest,
    settle,
    updates,
    votes,
)
from tests.fakes.slack_requests import BOT_TOKEN, make_services, socket_mode, start_http
from tests.fakes.waiting import eventually

QUIET_ID = "C0002"
QUIET = f"slack:T0001/{QUIET_ID}"  # follows the same topic, gives no feedback
TITLE = re.compile(r"Paper ([a-z]+-[a-z0-9]+)")


async def test_a_click_over_socket_mode(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    digest = record_digest(services)
    ts = await post_digest(fake_slack, digest)
    async with socket_mode(services, fake_slack):
        for number, action in enumerate((VOTE_UP, VOTE_UP, "paperboy_pdf"), start=1):
            if action == "paperboy_pdf":
                item_blocks(fake_slack, ts)[0]["elements"].append(
                    {
                        "type": "button",
                        "action_id": "paperboy_pdf",
                        "text": {"type": "plain_text", "text": "PDF"},
                        "url": "https://arxiv.org/pdf/2401.00001",
                    }
                )
            envelope_id = f"0b7e6a3c-1f8e-4b5f-9d3a-00000000000{number}"
            await fake_slack.send_envelope(
                {
                    "envelope_id": envelope_id,
                    "type": "interactive",
                    "accepts_response_payload": False,
                    "payload": click_payload(fake_slack, ts, action),
                }
            )
            assert await eventually(lambda n=number: len(fake_slack.socket_acks) >= n)
            assert fake_slack.socket_acks[-1]["envelope_id"] == envelope_id
            if action == VOTE_UP and number == 1:
                assert await eventually(lambda: updates(fake_slack))
        assert await eventually(lambda: fake_slack.responses)  # the repeat: "Already counted"
        paper = paper_of(item_blocks(fake_slack, ts)[0])
        assert votes(services) == [(paper, "U0001", 1)]  # counted once
        assert len(updates(fake_slack)) == 1
        texts = [e["text"]["text"] for e in item_blocks(fake_slack, ts)[0]["elements"][:2]]
        assert texts == ["👍 1", "👎 0"]
        assert "Already counted" in fake_slack.responses[0]["text"]
        assert len(fake_slack.responses) == 1  # the PDF click: acknowledged, nothing else


def posted_titles(fake: FakeSlack, channel_id: str, since: int) -> list[str]:
    """The paper keys of the digest items posted to a channel, in order."""
    found = []
    for message in fake.accepted()[since:]:
        if message["channel"] != channel_id:
            continue
        for block in message["blocks"]:
            if block["type"] == "section" and (match := TITLE.search(block["text"]["text"])):
                found.append(match.group(1))
    return found


async def test_clicks_rerank_the_next_digest(
    tmp_path: Path, catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, [], catalog, fake_slack)
    services = replace(services, settings=replace(services.settings, digest_size=10))
    db = open_db(services.db_path)
    for channel in (CHANNEL, QUIET):
        ensure_channel(db, channel, services.settings, NOW)
        add_subscription(db, channel, TOPIC, None, "U9", NOW.isoformat())
    papers = {f"robots-{n}": text for n, text in enumerate(ROBOTS)}
    papers.update({f"recsys-{n}": text for n, text in enumerate(RECOMMENDERS)})
    ingest(db, tmp_path, papers, NOW - timedelta(days=1))
    time = FakeTime()
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=time.sleep)
    poster = SlackPoster(client, monotonic=time.monotonic, sleep=time.sleep)

    async def deliver(channel: str, at: datetime) -> None:
        _, result = await send_digest(
            open_db(services.db_path), poster, channel, at,
            catalog=catalog, settings=services.settings,
        )  # fmt: skip
        assert result.state == "done", result

    await deliver(CHANNEL, NOW)
    [(channel_id, ts)] = [key for key in fake_slack.messages if key[0] == CHANNEL_ID]
    assert len(item_blocks(fake_slack, ts)) == 10  # ten items, each with its buttons
    http = await start_http(services, fake_slack)
    try:
        # 👍 each robot paper, 👎 each recommender paper: ten signed clicks on the message.
        sections = [
            b["text"]["text"] for b in fake_slack.messages[(channel_id, ts)]["blocks"]
            if b["type"] == "section" and TITLE.search(b["text"]["text"])
        ]  # fmt: skip
        for item, text in enumerate(sections):
            action = VOTE_UP if "Paper robots-" in text else VOTE_DOWN
            assert await click(http, click_payload(fake_slack, ts, action, item=item)) == 200
            await settle(http)
    finally:
        await http.close()
    stored = db.execute(
        "select vote, count(*) from feedback where channel = ? and \"user\" = 'U0001' group by vote",
        [CHANNEL],
    ).fetchall()
    assert sorted(tuple(row) for row in stored) == [(-1, 5), (1, 5)]
    shown = [b["elements"][0]["text"]["text"] for b in item_blocks(fake_slack, ts)]
    assert sorted(shown) == ["👍 0"] * 5 + ["👍 1"] * 5  # the message shows every vote

    ingest(db, tmp_path, NEXT, NOW + timedelta(days=3))
    before = len(fake_slack.accepted())
    await deliver(CHANNEL, NEXT_WEEK)
    await deliver(QUIET, NEXT_WEEK)
    ranked = [key for key in posted_titles(fake_slack, CHANNEL_ID, before) if key in NEXT]
    assert set(ranked[:2]) == {"robot-a", "robot-b"}, ranked  # like the 👍 ones, first
    quiet = [key for key in posted_titles(fake_slack, QUIET_ID, before) if key in NEXT]
    assert set(quiet[:2]) == {"recsys-a", "recsys-b"}, quiet  # no feedback: as before


async def test_socket_mode_acknowledges_a_click_before_its_work(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Held in its thread, the click's envelope is still acknowledged; released, it counts."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    ts = await post_digest(fake_slack, record_digest(services))
    release = hold_apply(monkeypatch)
    async with socket_mode(services, fake_slack):
        try:
            await fake_slack.send_envelope(
                {
                    "envelope_id": "5f1c2a9e-0000-4000-8000-000000000001",
                    "type": "interactive",
                    "accepts_response_payload": False,
                    "payload": click_payload(fake_slack, ts, VOTE_UP),
                }
            )
            assert await eventually(lambda: fake_slack.socket_acks)
            assert votes(services) == [] and updates(fake_slack) == []
            release.set()
            assert await eventually(lambda: updates(fake_slack))
            assert len(votes(services)) == 1
        finally:
            release.set()
