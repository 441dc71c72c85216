"""The buttons of a recorded digest's items in Slack, within Block Kit's limits."""

from __future__ import annotations

import json
from dataclasses import replace

from slack_sdk.models.blocks import Block

from bot.slack.app import fit
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, item_ref, parse_item_ref
from digests.digest import Digest
from digests.render import limits, slack
from digests.topics import Catalog
from tests.fakes.render import make_digest, paper


def recorded(digest: Digest, digest_id: int = 7) -> Digest:
    return replace(digest, recorded=True, digest_id=digest_id)


def papers(count: int) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for n in range(count):
        row = paper(f"We study offline reinforcement learning, variant {n} of many.", f"Paper {n}")
        if n % 3 == 0:
            row["pdf_url"] = f"https://arxiv.org/pdf/2401.{n:05d}"
        if n % 3 == 1:
            row["code_url"] = f"https://github.com/lab/paper-{n}"
        rows.append(row)
    return rows


def valid(message: slack.SlackMessage) -> None:
    assert limits.slack_problems(message.payload()) == []
    for block in message.blocks:
        Block.parse(block).validate_json()  # type: ignore[union-attr]


def test_each_item_of_a_recorded_digest_has_its_buttons(catalog: Catalog) -> None:
    rows = papers(6)
    digest = recorded(make_digest(rows, [catalog.get("offline-rl")]))
    [message] = slack.digest_messages(digest)
    valid(message)
    blocks = message.blocks
    actions = [b for b in blocks if b["type"] == "actions"]
    assert len(actions) == 6
    for block in actions:  # right after its item's section
        assert blocks[blocks.index(block) - 1]["type"] == "section"
    by_paper = {b["block_id"].removeprefix(slack.ITEM_BLOCK_PREFIX): b for b in actions}
    assert set(by_paper) == {row["id"] for row in rows}
    for row in rows:
        elements = by_paper[row["id"]]["elements"]
        assert [e["action_id"] for e in elements[:3]] == [VOTE_UP, VOTE_DOWN, SAVE]
        assert [e["text"]["text"] for e in elements[:3]] == [
            "👍 More like this",
            "👎 Less like this",
            "🔖 Save",
        ]
        for element in elements[:3]:
            assert element["value"] == item_ref(7, row["id"])
            assert parse_item_ref(element["value"]) == (7, row["id"])
        links = {e["text"]["text"]: e["url"] for e in elements[3:]}
        expected = {}
        if row.get("pdf_url"):
            expected["PDF"] = row["pdf_url"]
        if row.get("code_url"):
            expected["Code"] = row["code_url"]
        assert links == expected
        assert all("value" not in e for e in elements[3:])


def test_a_preview_has_no_buttons(catalog: Catalog) -> None:
    digest = make_digest(papers(4), [catalog.get("offline-rl")])
    assert not digest.recorded
    for candidate in (digest, replace(digest, digest_id=3)):  # a preview: recorded False
        for message in slack.digest_messages(candidate):
            assert all(block["type"] != "actions" for block in message.blocks)


def test_a_long_recorded_digest_keeps_every_item_whole_within_50_blocks(
    catalog: Catalog,
) -> None:
    rows = papers(60)
    messages = slack.digest_messages(recorded(make_digest(rows, [catalog.get("offline-rl")])))
    assert [len(m.paper_ids) for m in messages] == [23, 24, 13]
    seen = []
    for message in messages:
        valid(message)
        assert len(message.blocks) <= limits.SLACK_MAX_BLOCKS
        ids = [
            b["block_id"].removeprefix(slack.ITEM_BLOCK_PREFIX)
            for b in message.blocks
            if b["type"] == "actions"
        ]
        assert ids == list(message.paper_ids)  # each item's buttons in its own message
        seen += ids
    assert sorted(seen) == sorted(row["id"] for row in rows)


def test_the_cached_sections_never_carry_another_channels_digest_id(catalog: Catalog) -> None:
    """Sections are remembered per paper across channels; the buttons are not."""
    rows = papers(3)
    topics = [catalog.get("offline-rl")]
    first = slack.digest_messages(recorded(make_digest(rows, topics, "slack:T1/C1"), 11))
    second = slack.digest_messages(recorded(make_digest(rows, topics, "slack:T1/C2"), 12))
    values = [
        {e["value"] for b in m.blocks if b["type"] == "actions" for e in b["elements"][:3]}
        for m in (first[0], second[0])
    ]
    assert values == [{item_ref(11, r["id"]) for r in rows}, {item_ref(12, r["id"]) for r in rows}]


def test_counts_show_on_the_vote_buttons() -> None:
    plain = slack.item_actions(5, "p0123456789abcdef", ())
    counted = slack.item_actions(5, "p0123456789abcdef", (), counts=(3, 1))
    none_yet = slack.item_actions(5, "p0123456789abcdef", (), counts=(0, 0))
    assert plain is not None and counted is not None and none_yet is not None
    assert [e["text"]["text"] for e in counted["elements"]] == ["👍 3", "👎 1", "🔖 Save"]
    assert none_yet == plain
    assert slack.item_actions(5, "not a paper id!", ()) is None  # no reference: no buttons


def test_limits_know_the_actions_block() -> None:
    def problems(block: dict) -> list[str]:  # type: ignore[type-arg]
        return limits.slack_problems({"text": "t", "blocks": [block]})

    good = slack.item_actions(5, "p0123456789abcdef", (("PDF", "https://arxiv.org/pdf/1"),))
    assert good is not None and problems(good) == []
    button = good["elements"][0]
    many = [{**button, "action_id": f"a{n}"} for n in range(26)]
    assert problems({**good, "elements": many}) != []
    assert problems({**good, "elements": many[:25]}) == []
    assert problems({**good, "elements": []}) != []
    assert problems({**good, "elements": [button, button]}) != []  # action_id twice
    long_text = {**button, "text": {"type": "plain_text", "text": "x" * 76}}
    assert problems({**good, "elements": [long_text]}) != []
    assert problems({**good, "elements": [{**button, "value": "v" * 2001}]}) != []
    link = good["elements"][-1]
    assert problems({**good, "elements": [{**link, "url": "https://x/" + "a" * 3000}]}) != []
    assert problems({**good, "block_id": "b" * 256}) != []
    twice = limits.slack_problems({"text": "t", "blocks": [good, good]})
    assert "block_id repeated" in twice


def test_fit_drops_a_cut_items_buttons_with_it(catalog: Catalog) -> None:
    """`fit` (a response_url takes 5 messages) leaves no buttons of a paper it cut."""
    messages = slack.digest_messages(
        recorded(make_digest(papers(150), [catalog.get("offline-rl")]))
    )
    assert len(messages) > 5
    kept = fit(messages)
    assert len(kept) == 5
    last = kept[-1]
    valid(last)
    assert last.blocks[-1]["type"] == "context"
    assert last.blocks[-2]["type"] == "actions"  # the previous item, whole
    shown = [b["block_id"] for m in kept for b in m.blocks if b["type"] == "actions"]
    assert [i.removeprefix(slack.ITEM_BLOCK_PREFIX) for i in shown] == [
        i for m in kept for i in m.paper_ids
    ]
    left_out = 150 - sum(len(m.paper_ids) for m in kept)
    assert f"… and {left_out} more papers" in json.dumps(last.blocks, ensure_ascii=False)


def test_the_readme_shows_a_real_rendered_item() -> None:
    """The Block Kit example in the Slack how-to is valid and is what the renderer makes."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "docs" / "how-to" / "slack.md").read_text()
    part = readme[readme.index("## Buttons on digest items") :]
    example = json.loads(
        part[part.index("```json") + 7 : part.index("```", part.index("```json") + 7)]
    )
    section, actions = example
    valid(slack.SlackMessage("t", example))
    paper_id = actions["block_id"].removeprefix(slack.ITEM_BLOCK_PREFIX)
    links = tuple(
        (label, url)
        for label, url in (("PDF", "https://arxiv.org/pdf/2006.04779"),
                           ("code", "https://github.com/aviralkumar2907/CQL"))
    )  # fmt: skip
    assert actions == slack.item_actions(42, paper_id, links)
    assert section["type"] == "section"


def test_hostile_links_never_become_buttons(catalog: Catalog) -> None:
    """Link buttons use the view's checked links only: no javascript: or overlong URL, and
    a paper id that makes no reference gets no buttons rather than a broken digest."""
    rows = papers(3)
    rows[0]["pdf_url"] = "javascript:alert(1)"
    rows[0]["code_url"] = "https://github.com/" + "a" * 4000
    rows[1]["pdf_url"] = "https://evil.example/\u202egnp.exe"
    rows[2]["id"] = "p" + "0" * 60  # longer than any reference Paperboy writes
    digest = recorded(make_digest(rows, [catalog.get("offline-rl")]))
    [message] = slack.digest_messages(digest)
    valid(message)
    buttons = {
        b["block_id"].removeprefix(slack.ITEM_BLOCK_PREFIX): b["elements"]
        for b in message.blocks
        if b["type"] == "actions"
    }
    assert set(buttons) == {rows[0]["id"], rows[1]["id"]}  # the third: section, no buttons
    urls = [e["url"] for elements in buttons.values() for e in elements if "url" in e]
    assert all(url.startswith("https://") and len(url) <= 3000 for url in urls)
    assert not any("javascript" in url or "\u202e" in url for url in urls)
    assert len([b for b in message.blocks if b["type"] == "section"]) >= 4  # intro + 3 items
