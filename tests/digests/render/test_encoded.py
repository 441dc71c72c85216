"""A digest's payload JSON is joined from parts encoded once per batch
(`SlackMessage.payload_json`, `DiscordMessage.payload_json`) and queued as it is
(`db.outbox.EncodedPayload`): it must be `json.dumps(payload, ensure_ascii=False)` of
the payload dict byte for byte, whatever the papers' text, and the dicts must stay
as they were (fresh copies, the caller's to change)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.send import platform_messages
from db.outbox import EncodedPayload, enqueue, messages_for_digest
from db.store import Store
from digests.digest import Digest
from digests.render import discord, slack
from digests.render.escape import slack_escape
from digests.render.view import digest_view, shown_cache_clear
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.digest_rows import digest_row
from tests.fakes.render import make_digest, paper

HOSTILE = [
    "Quotes \"double\" and 'single'",
    "Back\\slash \\n not a newline \\u0000",
    "Control \x01\x02\x07\x1f chars\ttab\rreturn\nnewline",
    "Emoji 👍🔖🧪 and non-BMP 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠜎𠜱",
    "Markup *bold* _it_ ~strike~ `code` <@U123> <!channel> &amp; [x](y) ||spoiler||",
    "Line\u2028separator\u2029and \ufeff BOM, NUL-free \x7f del",
    "Long " + "very long title words " * 20,
]


def hostile_papers(count: int) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for n in range(count):
        title = HOSTILE[n % len(HOSTILE)] + f" {n}"
        abstract = f"{HOSTILE[(n + 3) % len(HOSTILE)]} We study offline RL, variant {n}. " * (
            1 + n % 4
        )
        row = paper(abstract, title)
        if n % 3 == 0:
            row["pdf_url"] = f'https://arxiv.org/pdf/2401.{n:05d}?a="b"&c=\\d'
        if n % 4 == 1:
            row["code_url"] = f"https://github.com/lab/paper-{n}_(x)"
        rows.append(row)
    return rows


def digests(catalog: Catalog) -> list[Digest]:
    topics = [catalog.get("offline-rl")]
    result = []
    for count in (0, 1, 3, 7, 13, 40):
        base = make_digest(hostile_papers(count), topics)
        result.append(base)  # a preview: no buttons
        for digest_id in (7, 123456789012345678):
            result.append(replace(base, recorded=True, digest_id=digest_id))
    return result


def exact(payload: dict, text: str) -> None:  # type: ignore[type-arg]
    assert text == json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("warm", [False, True])
def test_slack_payload_json_is_the_dicts_encoding(catalog: Catalog, warm: bool) -> None:
    shown_cache_clear()
    split = 0
    for _ in range(2 if warm else 1):  # the second round is served from the caches
        for digest in digests(catalog):
            messages = slack.digest_messages(digest)
            split += len(messages) > 1
            for message in messages:
                assert (message.block_json is None) == digest.empty
                exact(message.payload(), message.payload_json())
    assert split  # long digests were split over several messages


@pytest.mark.parametrize("warm", [False, True])
def test_discord_payload_json_is_the_dicts_encoding(catalog: Catalog, warm: bool) -> None:
    shown_cache_clear()
    split = 0
    for _ in range(2 if warm else 1):
        for digest in digests(catalog):
            messages = discord.digest_messages(digest)
            split += len(messages) > 1
            for message in messages:
                exact(message.payload(), message.payload_json())
            for message in discord.digest_messages(digest, buttons=False):
                exact(message.payload(), message.payload_json())
    assert split


def test_changing_a_rendered_message_leaves_the_next_channel_s_alone(catalog: Catalog) -> None:
    digest = replace(
        make_digest(hostile_papers(4), [catalog.get("offline-rl")]), recorded=True, digest_id=5
    )
    first = slack.digest_messages(digest)[0]
    for block in first.blocks:
        if block["type"] == "section":
            block["text"]["text"] = "changed"
        for element in block.get("elements", []):
            if isinstance(element, dict) and isinstance(element.get("text"), dict):
                element["text"]["text"] = "changed"
    again = slack.digest_messages(digest)[0]
    assert "changed" not in again.payload_json()
    exact(again.payload(), again.payload_json())
    embed = discord.digest_messages(digest)[0].embeds[0]
    embed["fields"][0]["value"] = "changed"
    assert "changed" not in discord.digest_messages(digest)[0].payload_json()


def test_a_recorded_digest_s_buttons_are_as_item_actions_makes_them(catalog: Catalog) -> None:
    digest = replace(
        make_digest(hostile_papers(6), [catalog.get("offline-rl")]), recorded=True, digest_id=9
    )
    blocks = slack.digest_messages(digest)[0].blocks
    actions = [block for block in blocks if block["type"] == "actions"]
    views = digest_view(digest, slack_escape).items
    assert len(actions) == len(views) == 6
    for view, block in zip(views, actions, strict=True):
        assert block == slack.item_actions(9, view.id, view.links)
        assert any(len(block["elements"]) > 3 for block in actions)  # links too


@pytest.mark.parametrize(
    "channel", ["slack:T0001/C0001", "discord:123456789012345678/987654321098765432"]
)
def test_the_outbox_stores_the_encoded_text(
    catalog: Catalog, channel: str, fresh_db: Store
) -> None:
    digest_id = digest_row(fresh_db, channel)
    digest = replace(
        make_digest(hostile_papers(40), [catalog.get("offline-rl")], channel),
        recorded=True,
        digest_id=digest_id,
    )
    parts = platform_messages(digest, channel.split(":")[0], "notice")
    assert len(parts) > 1 and all(type(payload) is EncodedPayload for payload, _ in parts)
    enqueue(fresh_db, channel, digest_id, parts, stamp(NOW))
    query = "select payload from outbox order by part"
    stored = [row["payload"] for row in fresh_db.query(query)]
    assert stored == [json.dumps(payload, ensure_ascii=False) for payload, _ in parts]
    decoded = [row["payload"] for row in messages_for_digest(fresh_db, digest_id)]
    assert decoded == [payload for payload, _ in parts]


def test_the_outbox_stores_what_an_encoded_payload_carries(fresh_db: Store) -> None:
    channel, other = "slack:T0001/C0001", "slack:T0001/C0002"
    first, second = digest_row(fresh_db, channel), digest_row(fresh_db, other)
    # Stored as given, not encoded again.
    payload = EncodedPayload({"text": "a"}, lambda: '{"text":"a"}')
    enqueue(fresh_db, channel, first, [(payload, [])], stamp(NOW))
    enqueue(fresh_db, other, second, [({"text": "b"}, [])], stamp(NOW))
    query = "select payload from outbox order by id"
    assert [row["payload"] for row in fresh_db.query(query)] == ['{"text":"a"}', '{"text": "b"}']
