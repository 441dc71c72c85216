"""Slack Block Kit for digests and command replies, as plain dicts that equal what
`slack_sdk.models`' blocks make, texts clamped to Slack's limits and never empty.

A long digest becomes several messages within 50 blocks and `limits.SLACK_MESSAGE_TEXT`,
never cutting an item. A recorded digest's item has a second block of buttons
(`item_actions`), whose `block_id` (`item_block_id`) names the paper for `bot.slack.actions`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, item_ref
from digests.digest import Digest
from digests.render import limits
from digests.render.escape import slack_escape, slack_link, with_code
from digests.render.packing import clamp
from digests.render.view import PaperView, digest_view, encoded, paper_view, per_paper, render
from digests.replies import Reply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlackMessage:
    """`chat.postMessage` arguments: a notification `text` and Block Kit `blocks`."""

    text: str
    blocks: list[dict[str, Any]]
    paper_ids: tuple[str, ...] = ()  # the papers this message carries (not sent to Slack)
    # Each block's JSON text (`encoded`), when the renderer made it with the blocks: a
    # digest's sections are encoded once per batch, not once per channel.
    block_json: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def payload(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}

    def payload_json(self) -> str:
        """`encoded(self.payload())`, byte for byte (tests), joined from the blocks'
        remembered JSON when the renderer gave it (the blocks must be as rendered)."""
        if self.block_json is None:
            return encoded(self.payload())
        return f'{{"text": {encoded(self.text)}, "blocks": [{", ".join(self.block_json)}]}}'


ITEM_BLOCK_PREFIX = "paperboy_item:"
VOTE_LABELS = {VOTE_UP: "👍 More like this", VOTE_DOWN: "👎 Less like this"}
SAVE_LABEL = "🔖 Save"
# Link buttons: Slack sends a block_actions for these too (acknowledged and ignored).
LINK_BUTTONS = {"PDF": ("PDF", "paperboy_pdf"), "code": ("Code", "paperboy_code")}
LINK_ACTIONS = tuple(action_id for _, action_id in LINK_BUTTONS.values())


def item_block_id(paper_id: str, counts: tuple[int, int] | None = None) -> str:
    """The `block_id` of a digest item's buttons: unique in its message (a paper is in a
    digest once), and how a click finds the item again (`item_paper`). With counts shown
    it ends with them ("paperboy_item:p1:3.1"): Slack asks for a new block_id whenever a
    message's block changes in an update (clients may keep a block they have by its id),
    and the same id always means the same buttons."""
    if counts and any(counts):
        return f"{ITEM_BLOCK_PREFIX}{paper_id}:{counts[0]}.{counts[1]}"
    return ITEM_BLOCK_PREFIX + paper_id


def item_paper(block_id: object) -> str | None:
    """The paper of an item's buttons' `block_id` (`item_block_id`), else None."""
    if not isinstance(block_id, str) or not block_id.startswith(ITEM_BLOCK_PREFIX):
        return None
    return block_id[len(ITEM_BLOCK_PREFIX) :].split(":", 1)[0] or None


def _button(text: str, action_id: str, **more: str) -> dict[str, Any]:
    label = {"type": "plain_text", "text": text, "emoji": True}
    return {"type": "button", "action_id": action_id, "text": label, **more}


def item_actions(
    digest_id: int,
    paper_id: str,
    links: tuple[tuple[str, str], ...],
    counts: tuple[int, int] | None = None,
) -> dict[str, Any] | None:
    """The `actions` block of one digest item: 👍 👎 🔖 with the item's reference as
    value, then PDF and Code link buttons (`links`: the view's checked (label, URL)
    pairs). With `counts` (👍, 👎) other than (0, 0), the votes show them: "👍 3", "👎 1".
    Plain dicts (built per channel: the digest id differs), valid Block Kit (the render
    tests parse them with slack_sdk). None when the ids make no reference (no buttons
    rather than a digest that fails to render)."""
    try:
        ref = item_ref(digest_id, paper_id)
    except ValueError:
        log.warning(
            "no buttons for paper %r of digest %r: not a valid reference", paper_id, digest_id
        )
        return None
    return _actions(ref, paper_id, links, counts)


def _actions(
    ref: str,
    paper_id: str,
    links: tuple[tuple[str, str], ...],
    counts: tuple[int, int] | None = None,
) -> dict[str, Any]:
    up, down = counts if counts and any(counts) else (None, None)
    elements = [
        _button(VOTE_LABELS[VOTE_UP] if up is None else f"👍 {up}", VOTE_UP, value=ref),
        _button(VOTE_LABELS[VOTE_DOWN] if down is None else f"👎 {down}", VOTE_DOWN, value=ref),
        _button(SAVE_LABEL, SAVE, value=ref),
    ]
    for label, url in links:
        if label in LINK_BUTTONS and len(url) <= limits.SLACK_BUTTON_URL:
            text, action_id = LINK_BUTTONS[label]
            elements.append(_button(text, action_id, url=url))
    return {"type": "actions", "block_id": item_block_id(paper_id, counts), "elements": elements}


def paper_section(paper: PaperView) -> dict[str, Any]:
    """A paper's section block, as slack_sdk's `to_dict` makes it (`section_block`): its
    text is never empty (the title's line) and clamped to Slack's limit."""
    link = slack_link(paper.url, paper.raw_title) if paper.url else paper.title  # url: safe_url
    links = " · ".join(slack_link(url, label) for label, url in paper.links)
    # The TL;DR comes last: a section clamped to Slack's limit loses only its end.
    text = render("slack/item.mrkdwn.j2", paper=paper, link=link, links=links)
    return section_block(clamp(text, limits.SLACK_SECTION_TEXT))


# A stand-in for an item's reference in its remembered buttons block: never in a paper
# id (`digests.actions.ITEM_REF`), a checked URL or a label, so its JSON marks exactly
# where each channel's reference goes.
_REF_MARK = "\x00"
_REF_MARK_JSON = encoded(_REF_MARK)


class _ItemParts(NamedTuple):
    """What a digest item's blocks share in every channel of a batch: its section and
    that section's JSON, its buttons block with `_REF_MARK` for the reference and that
    block's JSON cut at the marks (None when the cut is not the 3 expected), and the
    characters of text each carries (`limits.slack_text_size`)."""

    section: dict[str, Any]
    section_json: str
    section_size: int
    actions: dict[str, Any]
    actions_json: tuple[str, ...] | None
    actions_size: int


def _item_parts(paper: PaperView) -> _ItemParts:
    section = paper_section(paper)
    actions = _actions(_REF_MARK, paper.id, paper.links)
    cut = tuple(encoded(actions).split(_REF_MARK_JSON))
    return _ItemParts(
        section,
        encoded(section),
        len(section["text"]["text"]),
        actions,
        cut if len(cut) == 4 else None,
        sum(len(button["text"]["text"]) for button in actions["elements"]),
    )


def _with_ref(actions: dict[str, Any], ref: str) -> dict[str, Any]:
    """A fresh copy of a remembered buttons block with `ref` for `_REF_MARK`."""
    return {
        **actions,
        "elements": [
            {**button, "text": {**button["text"]}, "value": ref}
            if "value" in button
            else {**button, "text": {**button["text"]}}
            for button in actions["elements"]
        ],
    }


# Plain dicts for a digest's header, intro, divider and footer, as slack_sdk's `to_dict`
# makes them, key order included (tests/digests/render/test_batch.py compares both): the
# SDK's validation would cost a large share of rendering a digest, and these texts are
# clamped to Slack's limits already.
def header_block(text: str) -> dict[str, Any]:
    return {"text": {"text": text, "type": "plain_text"}, "type": "header"}


def section_block(text: str) -> dict[str, Any]:
    return {"text": {"text": text, "type": "mrkdwn"}, "type": "section"}


def context_block(text: str) -> dict[str, Any]:
    return {"elements": [{"text": text, "type": "mrkdwn"}], "type": "context"}


DIVIDER: dict[str, Any] = {"type": "divider"}
_DIVIDER_JSON = encoded(DIVIDER)


def digest_messages(digest: Digest, empty: str = "notice") -> list[SlackMessage]:
    """The Slack messages for a digest; [] for an empty week when `empty` is "skip"."""
    if digest.empty and empty == "skip":
        return []
    view = digest_view(digest, slack_escape)
    if digest.empty:  # one short line
        line = render("slack/empty.mrkdwn.j2", view=view)
        block = section_block(clamp(line, limits.SLACK_SECTION_TEXT))
        text = clamp(render("slack/fallback.txt.j2", view=view, part=1), limits.SLACK_FALLBACK_TEXT)
        return [SlackMessage(text, [block])]
    header = clamp(render("slack/header.txt.j2", view=view), limits.SLACK_HEADER_TEXT)
    intro = clamp(render("slack/intro.mrkdwn.j2", view=view), limits.SLACK_SECTION_TEXT)
    ending = clamp(render("slack/footer.mrkdwn.j2", view=view), limits.SLACK_SECTION_TEXT)
    head = [header_block(header), section_block(intro)]
    tail = [context_block(ending)]
    head_json = [encoded(block) for block in head]
    tail_json = [encoded(block) for block in tail]
    digest_id = digest.digest_id if digest.recorded else None
    items = [_item(paper, digest_id) for paper in view.items]
    # The first message also carries the prelude and a divider; each keeps room for the
    # footer (which message is the last is known only once they are packed). Their text
    # is these three strings (`limits.slack_text_size` of their blocks).
    first = (len(head) + 1 + len(tail), len(header) + len(intro) + len(ending))
    groups = _pack(items, first, (len(tail), len(ending))) or [[]]
    messages = []
    for number, group in enumerate(groups, start=1):
        blocks: list[dict[str, Any]] = []
        block_json: list[str] = []
        if number == 1:
            blocks += head
            block_json += head_json
            if group:
                blocks += [dict(DIVIDER)]
                block_json.append(_DIVIDER_JSON)
        for item in group:
            blocks += item.blocks
            block_json += item.block_json or [encoded(block) for block in item.blocks]
        if number == len(groups):
            blocks += tail
            block_json += tail_json
        text = render("slack/fallback.txt.j2", view=view, part=number)
        messages.append(
            SlackMessage(
                clamp(text, limits.SLACK_FALLBACK_TEXT),
                blocks,
                tuple(item.paper_id for item in group),
                tuple(block_json),
            )
        )
    return messages


class _Unit(NamedTuple):
    """Blocks that go in one message together (an item: its section and its buttons),
    with the characters of text they carry (`limits.slack_text_size`)."""

    blocks: list[dict[str, Any]]
    size: int
    paper_id: str = ""
    block_json: list[str] | None = None  # each block's JSON text, when known


def _unit(blocks: list[dict[str, Any]], paper_id: str = "") -> _Unit:
    return _Unit(blocks, limits.slack_text_size(blocks), paper_id)


def _item(paper: PaperView, digest_id: int | None) -> _Unit:
    """A digest item's blocks: its section, remembered once per batch (`per_paper`), not
    once per channel, and for a recorded digest its buttons (`item_actions`), with each
    block's JSON text: the section's and the buttons' (all but the reference) are
    encoded once per batch too. Its size is counted from the two shapes it knows, what
    `limits.slack_text_size` counts (the section's text and the buttons' labels)
    without walking every key (a costly share of rendering a digest)."""
    parts: _ItemParts = per_paper("slack-item", paper, _item_parts)
    section = parts.section
    # A fresh copy, the caller's to change (the remembered one is shared).
    blocks = [{**section, "text": {**section["text"]}}]
    block_json = [parts.section_json]
    size = parts.section_size
    if digest_id is not None:
        try:
            ref = item_ref(digest_id, paper.id)
        except ValueError:
            log.warning(
                "no buttons for paper %r of digest %r: not a valid reference", paper.id, digest_id
            )
        else:
            actions = _with_ref(parts.actions, ref)
            blocks.append(actions)
            # A reference is ASCII letters, digits and ".:_-" (`ITEM_REF`): its JSON is
            # itself in quotes.
            cut = parts.actions_json
            block_json.append(f'"{ref}"'.join(cut) if cut is not None else encoded(actions))
            size += parts.actions_size
    return _Unit(blocks, size, paper.id, block_json)


def _pack(
    units: list[_Unit], first: tuple[int, int] = (0, 0), then: tuple[int, int] = (0, 0)
) -> list[list[_Unit]]:
    """Whole units per message, in order, each message within `limits.SLACK_MAX_BLOCKS`
    blocks and `limits.SLACK_MESSAGE_TEXT` characters of text. `first` and `then`: the
    (blocks, characters) the first message and each later one already carry besides its
    units (a digest's header and footer). A unit never waits for a message of its own:
    each is at most a 3,000-character section and a few short blocks, so one fits any
    message with no unit yet."""
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    blocks, size = first
    for unit in units:
        if current and (
            blocks + len(unit.blocks) > limits.SLACK_MAX_BLOCKS
            or size + unit.size > limits.SLACK_MESSAGE_TEXT
        ):
            groups.append(current)
            current = []
            blocks, size = then
        current.append(unit)
        blocks += len(unit.blocks)
        size += unit.size
    if current:
        groups.append(current)
    return groups


def _text_sections(text: str) -> list[dict[str, Any]]:
    """Sections of at most 3,000 characters, split at line breaks."""
    chunks: list[str] = []
    for line in text.split("\n"):
        if chunks and len(chunks[-1]) + 1 + len(line) <= limits.SLACK_SECTION_TEXT:
            chunks[-1] += "\n" + line
        else:
            chunks.append(clamp(line, limits.SLACK_SECTION_TEXT))
    return [section_block(chunk) for chunk in chunks if chunk.strip()]


def reply_messages(reply: Reply, empty: str = "notice") -> list[SlackMessage]:
    """A command's reply as Slack messages (usually one), packed as a digest's are
    (`_pack`): a paper's section stays with its id line."""
    head = "\n".join(with_code(line, slack_escape, slack_escape) for line in reply.body_lines)
    # Plain dicts (`section_block`, `context_block`), not slack_sdk blocks validated one by
    # one: that validation is costly, and these texts are never empty and clamped here.
    units = [_unit([block]) for block in _text_sections(head)]
    for result in reply.papers:
        view = paper_view(result, (), slack_escape)  # a lookup result: no archive mark
        units.append(_unit([paper_section(view), context_block(f"id `{view.id}`")]))
    if reply.detail:
        units += [_unit([block]) for block in _text_sections(slack_escape(reply.detail))]
    fallback = clamp(slack_escape(reply.text), limits.SLACK_FALLBACK_TEXT)
    messages = [
        SlackMessage(fallback, [block for unit in group for block in unit.blocks])
        for group in _pack(units)
    ]
    if reply.digest is not None:
        messages += digest_messages(reply.digest, empty="notice")
    return messages
