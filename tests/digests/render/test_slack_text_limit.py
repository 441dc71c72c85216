"""Slack's limit on the text of one message's blocks together (`msg_blocks_too_long`).

Slack refuses a message whose blocks carry too much text in all, a limit it does not
document (near 12,000 characters: see `digests.render.limits.SLACK_MESSAGE_TEXT`). The
renderer packs digests and replies by that text as well as by the 50 blocks; the fake
Web API refuses as Slack does; and a refusal gives that one message up at once, without
pausing the channel or losing its papers.
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block

from bot.send import send_digest
from bot.slack.app import fit
from bot.slack.client import make_client
from bot.slack.poster import MESSAGE_REFUSALS
from db import open_db
from db.channels import get_channel
from db.outbox import claimed_paper_ids
from digests.digest import Digest
from digests.ingest import ingest_files
from digests.render import limits, slack
from digests.render.escape import slack_escape
from digests.render.view import digest_view
from digests.replies import Reply
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import FakeTime
from tests.fakes.render import make_digest, paper
from tests.fakes.slack_api import MAX_BLOCKS_TEXT, FakeSlack, blocks_text
from tests.fakes.slack_delivery import CHANNEL, clock, follow, poster_for, send, services
from tests.fakes.slack_requests import BOT_TOKEN

__all__ = ["clock", "services"]  # fixtures, imported for their tests

TITLE = "Conservative Offline Reinforcement Learning for Dexterous Robot Grasping, "
TLDR = "A conservative value estimate keeps the learned policy near the data it saw; "


def long_rows(count: int) -> list[dict[str, Any]]:
    """Papers whose sections have every field near its cap (a 200-character title, a
    300-character TL;DR, PDF and code links): ~750 characters of text an item."""
    rows = []
    for n in range(count):
        title = (f"{n} " + TITLE * 3)[:200]
        row = paper(f"We study offline reinforcement learning, variant {n} of many.", title)
        row["pdf_url"] = f"https://arxiv.org/pdf/2401.{n:05d}"
        row["code_url"] = f"https://github.com/some-lab/offline-rl-{n}"
        row["tldr"] = (TLDR * 5)[:300]
        rows.append(row)
    return rows


def recorded(digest: Digest, digest_id: int = 7) -> Digest:
    return replace(digest, recorded=True, digest_id=digest_id)


def valid(message: slack.SlackMessage) -> None:
    assert limits.slack_problems(message.payload()) == []
    assert limits.slack_text_size(message.blocks) <= limits.SLACK_MESSAGE_TEXT
    assert len(message.blocks) <= limits.SLACK_MAX_BLOCKS
    for block in message.blocks:
        Block.parse(block).validate_json()  # type: ignore[union-attr]


def test_a_digest_of_long_items_is_packed_by_text_as_well_as_blocks(catalog: Catalog) -> None:
    """23 items fit 50 blocks; with ~800 characters each they are ~19,000 characters of
    text, which Slack refuses. Each message stays within the text budget, every item
    whole (its section and its buttons together), in order, none lost."""
    rows = long_rows(23)
    digest = recorded(make_digest(rows, [catalog.get("offline-rl")]))
    messages = slack.digest_messages(digest)
    assert len(messages) >= 2
    for number, message in enumerate(messages):
        valid(message)
        blocks = message.blocks
        assert (blocks[0]["type"] == "header") == (number == 0)
        assert (blocks[-1]["type"] == "context") == (number == len(messages) - 1)
        actions = [i for i, b in enumerate(blocks) if b["type"] == "actions"]
        for index in actions:  # each item's buttons right after its section, same message
            assert blocks[index - 1]["type"] == "section"
        ids = [slack.item_paper(blocks[i]["block_id"]) for i in actions]
        assert ids == list(message.paper_ids)
    shown = [paper_id for m in messages for paper_id in m.paper_ids]
    assert sorted(shown) == sorted(row["id"] for row in rows)
    assert len(shown) == len(set(shown))
    # packed greedily: each message but the last could not take its next item
    for message, after in itertools.pairwise(messages):
        next_item = [b for b in after.blocks if b["type"] in ("section", "actions")]
        room = limits.SLACK_MESSAGE_TEXT - limits.slack_text_size(message.blocks)
        assert limits.slack_text_size(next_item[:2]) > room or len(message.blocks) >= 48


def test_the_renderer_counts_an_items_text_as_limits_does(catalog: Catalog) -> None:
    """The renderer counts an item's text from its known shape (section text, button
    labels), not by walking every key: the same count as `limits.slack_text_size`."""
    rows = [*long_rows(3), paper("A short one.", "Short")]
    digest = recorded(make_digest(rows, [catalog.get("offline-rl")]))
    view = digest_view(digest, slack_escape)
    for digest_id in (7, None):
        for item in view.items:
            unit = slack._item(item, digest_id)
            assert len(unit.blocks) == (1 if digest_id is None else 2)
            assert unit.size == limits.slack_text_size(unit.blocks) > 0
    for message in slack.digest_messages(digest):
        assert limits.slack_text_size(message.blocks) == sum(
            len(text) for text in re_texts(message.blocks)
        )


def re_texts(value: Any) -> list[str]:
    """Every string under a "text" key, found by a route of its own (JSON's object hook)."""
    found: list[str] = []

    def hook(obj: dict[str, Any]) -> dict[str, Any]:
        if isinstance(obj.get("text"), str):
            found.append(obj["text"])
        return obj

    json.loads(json.dumps(value), object_hook=hook)
    return found


def test_a_preview_of_long_items_is_packed_by_text_too(catalog: Catalog) -> None:
    """A preview (no buttons, one block an item): 40 items by blocks alone in one
    message, ~30,000 characters of text."""
    messages = slack.digest_messages(make_digest(long_rows(40), [catalog.get("offline-rl")]))
    assert len(messages) >= 3
    for message in messages:
        valid(message)
    assert sum(len(m.paper_ids) for m in messages) == 40


def test_slack_problems_reports_a_message_over_the_text_budget() -> None:
    """Every text counts: header, sections, context elements, button labels; not URLs,
    values or ids."""
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "s" * 3000}}
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 100}}
    context = {"type": "context", "elements": [{"type": "mrkdwn", "text": "c" * 40}]}
    label = {"type": "plain_text", "text": "👍 More like this", "emoji": True}
    button = {"type": "button", "action_id": "a", "text": label, "url": "https://x/" + "u" * 900}
    actions = {"type": "actions", "block_id": "b" * 200, "elements": [button]}
    blocks = [header, section, section, section, context, actions]
    assert limits.slack_text_size(blocks) == 100 + 9000 + 40 + 16
    assert limits.slack_problems({"text": "t", "blocks": blocks}) == []
    over = [*blocks, {**context, "elements": [{"type": "mrkdwn", "text": "c" * 845}]}]
    assert limits.slack_text_size(over) == limits.SLACK_MESSAGE_TEXT + 1
    assert limits.slack_problems({"text": "t", "blocks": over}) == [
        f"{limits.SLACK_MESSAGE_TEXT + 1} characters of text in blocks > "
        f"{limits.SLACK_MESSAGE_TEXT}"
    ]
    fields = {"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 900}]}
    assert limits.slack_problems({"text": "t", "blocks": [*blocks, fields]}) != []


def test_a_long_reply_is_packed_by_text_with_each_paper_and_its_id_together(
    catalog: Catalog,
) -> None:
    """A lookup reply with many long papers, and one with long text lines."""
    papers = tuple({**row, "score": 1.0} for row in long_rows(20))
    reply = Reply(text="Found 20 papers", papers=papers)
    messages = slack.reply_messages(reply)
    assert len(messages) >= 2
    ids = []
    for message in messages:
        valid(message)
        blocks = message.blocks
        for index, block in enumerate(blocks):
            if block["type"] == "context":  # a paper's id line, right after its section
                assert blocks[index - 1]["type"] == "section"
                ids.append(block["elements"][0]["text"])
    assert ids == [f"id `{row['id']}`" for row in papers]
    wordy = Reply(text="Help", lines=tuple("x" * 2900 for _ in range(6)))
    long_lines = slack.reply_messages(wordy)
    assert len(long_lines) >= 2
    for message in long_lines:
        valid(message)
    text = "".join(b["text"]["text"] for m in long_lines for b in m.blocks)
    assert text.count("x") == 6 * 2900


def test_fit_keeps_whole_items_of_a_text_packed_digest(catalog: Catalog) -> None:
    """`bot.slack.app.fit` (5 messages for a response_url) still cuts at an item: its
    messages end with their items' sections and buttons, as before."""
    messages = slack.digest_messages(recorded(make_digest(long_rows(120), [catalog.get("rlhf")])))
    assert len(messages) > 5
    kept = fit(messages)
    assert len(kept) == 5
    for message in kept:
        valid(message)
    last = kept[-1]
    assert last.blocks[-1]["type"] == "context" and last.blocks[-2]["type"] == "actions"
    shown = [slack.item_paper(b["block_id"]) for m in kept for b in m.blocks if "block_id" in b]
    assert shown == [i for m in kept for i in m.paper_ids]
    left_out = 120 - sum(len(m.paper_ids) for m in kept)
    assert f"… and {left_out} more papers" in json.dumps(last.blocks, ensure_ascii=False)


def section(characters: int) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": "a" * characters}}


async def test_the_fake_refuses_blocks_with_too_much_text_as_slack_does(
    fake_slack: FakeSlack,
) -> None:
    client = make_client(BOT_TOKEN, fake_slack.api_url)
    at_limit = [section(3000)] * 3 + [section(MAX_BLOCKS_TEXT - 9000)]
    assert blocks_text(at_limit) == MAX_BLOCKS_TEXT
    posted = await client.chat_postMessage(channel="C0001", text="t", blocks=at_limit)
    over = [*at_limit, {"type": "context", "elements": [{"type": "mrkdwn", "text": "b"}]}]
    for call in (
        client.chat_postMessage(channel="C0001", text="t", blocks=over),
        client.chat_update(channel="C0001", ts=posted["ts"], text="t", blocks=over),
    ):
        with pytest.raises(SlackApiError) as refused:
            await call
        assert refused.value.response.data == {"ok": False, "error": "msg_blocks_too_long"}
    assert fake_slack.messages[("C0001", posted["ts"])]["blocks"] == at_limit  # unchanged


@pytest.mark.parametrize("error", ["msg_blocks_too_long", "invalid_blocks"])
async def test_a_refused_message_is_given_up_at_once_and_the_channel_goes_on(
    services: Any,
    fake_slack: FakeSlack,
    clock: FakeTime,
    error: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Slack refusing the message itself is Paperboy's bug, not the channel's: one post
    (not `max_attempts`), the message given up with one clear ERROR line, the channel
    not paused, and its papers not lost: the next digest may pick them again."""
    assert error in MESSAGE_REFUSALS
    follow(services, "robotics")
    fake_slack.queue("chat.postMessage", {"ok": False, "error": error})
    db = open_db(services.db_path)
    caplog.set_level(logging.INFO, logger="bot")
    digest, result = await send(services, fake_slack, clock)
    assert result.state == "failed" and result.reason == error
    assert len(fake_slack.posted()) == 1  # no retries
    assert not get_channel(db, CHANNEL)["paused"]
    [row] = db.query("select * from outbox where channel = ?", [CHANNEL])
    assert row["state"] == "failed" and row["last_error"] == error and row["attempts"] == 1
    assert row["next_attempt_at"] is None
    picked = {item.paper["id"] for item in digest.items}
    assert picked and not picked & claimed_paper_ids(db, CHANNEL)  # free to go again
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelname for r in said] == ["ERROR"]
    line = said[0].getMessage()
    assert f"delivery to {CHANNEL}" in line and error in line and "part 1" in line
    assert "should not have made" in line and "not paused" in line
    # next week's digest is posted (not paused), and the given-up papers are in it
    week = NOW + timedelta(days=7)
    poster = poster_for(fake_slack, clock)
    settings = services.settings
    again, done = await send_digest(
        db, poster, CHANNEL, week, catalog=services.catalog, settings=settings
    )
    assert done.state == "done" and len(fake_slack.posted()) == 2
    assert picked <= {item.paper["id"] for item in again.items}


async def test_a_digest_of_long_items_reaches_slack_whole(
    services: Any, fake_slack: FakeSlack, clock: FakeTime
) -> None:
    """End to end through the fake, which refuses past 12,000 characters: 30 long robot
    papers (23 a message by blocks alone: ~16,000 characters, refused) all arrive."""
    extra = services.db_path.parent / "long.tsv"
    title = "Dexterous robot grasping with conservative offline reinforcement learning "
    rows = "\n".join(
        f"{i} {(title * 3)[:190]}\tWe propose Robo{i}, a robot grasping method for robots."
        for i in range(30)
    )
    extra.write_text("title\tabstract\n" + rows + "\n")
    db = open_db(services.db_path)
    ingest_files(db, [extra], now=NOW)
    db.execute("update papers set tldr = ? where title like '%Dexterous robot%'", [TLDR * 4])
    follow(services, "robotics")
    digest, result = await send(
        services, fake_slack, clock, replace(services.settings, digest_size=50)
    )
    assert len(digest.items) >= 30
    posted = fake_slack.posted()
    assert result.state == "done" and result.sent == len(posted) >= 2
    assert all(0 < blocks_text(p["blocks"]) <= limits.SLACK_MESSAGE_TEXT for p in posted)
    sent = {
        paper_id
        for row in db.query("select paper_ids from outbox")
        for paper_id in json.loads(row["paper_ids"])
    }
    assert sent == {item.paper["id"] for item in digest.items}
