"""Discord messages for digests: one embed per paper, split to respect every limit.

discord.py checks none of Discord's limits, so this module does (10 embeds and 6,000 embed
characters a message, each field's own limit); text here is escaped. A recorded digest's
items carry an action row each, numbered like their embeds, so a message holds at most 5
items; custom_ids are `digests.actions.custom_id`'s. A preview has no buttons.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from digests.actions import (
    SAVE,
    VOTE_DOWN,
    VOTE_UP,
    custom_id,
    parse_custom_id,
    parse_item_ref,
)
from digests.digest import Digest
from digests.render import limits
from digests.render.escape import discord_escape, with_code
from digests.render.packing import clamp, pack
from digests.render.view import (
    PaperView,
    digest_view,
    encoded,
    fresh,
    paper_view,
    per_paper,
    render,
)
from digests.replies import Reply

log = logging.getLogger(__name__)

EMBED_COLOUR = 0x2F6FEB


@dataclass(frozen=True)
class DiscordMessage:
    """`POST /channels/{id}/messages` arguments: `content`, `embeds` and `components`
    (action rows of buttons), as JSON dicts."""

    content: str
    embeds: list[dict[str, Any]] = field(default_factory=list)
    paper_ids: tuple[str, ...] = ()  # the papers this message carries (not sent to Discord)
    components: list[dict[str, Any]] = field(default_factory=list)
    # Each embed's JSON text, when the renderer made it with the embeds: a digest's
    # embeds are encoded once per batch, not once per channel.
    embed_json: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def payload_json(self) -> str:
        """`encoded(self.payload())`, byte for byte (tests), joined from the embeds'
        remembered JSON when the renderer gave it (the embeds must be as rendered)."""
        if self.embed_json is None:
            return encoded(self.payload())
        text = (
            f'{{"content": {encoded(self.content)}, "embeds": [{", ".join(self.embed_json)}], '
            '"allowed_mentions": {"parse": []}'
        )
        if self.components:
            text += f', "components": {encoded(self.components)}'
        return text + "}"

    def payload(self) -> dict[str, Any]:
        payload = {
            "content": self.content,
            "embeds": self.embeds,
            "allowed_mentions": {"parse": []},
        }
        if self.components:  # a message without buttons has no components key
            payload["components"] = self.components
        return payload


# Button styles (Discord's numbers) and the labels of a digest item's buttons.
PRIMARY, SECONDARY, LINK = 1, 2, 5
BUTTON_LABELS = {VOTE_UP: "👍 More like this", VOTE_DOWN: "👎 Less like this", SAVE: "🔖 Save"}
LINK_BUTTONS = {"PDF": "PDF", "code": "Code"}  # paper_links' label -> the button's


def button_label(action: str, number: int, count: int = 0) -> str:
    """A button's label: the item's number on its row's first (👍), a vote count when
    there is one ("👍 More like this · 3")."""
    label = BUTTON_LABELS[action]
    if action == VOTE_UP:
        label = f"{number}. {label}"
    if count and action in (VOTE_UP, VOTE_DOWN):
        label = f"{label} · {count}"
    return label[: limits.DISCORD_BUTTON_LABEL]


def item_row(digest_id: int, paper: PaperView, number: int) -> dict[str, Any]:
    """One digest item's action row: 👍, 👎, 🔖 Save, and its PDF and Code links."""
    buttons: list[dict[str, Any]] = [
        {
            "type": 2,
            "style": PRIMARY if action == VOTE_UP else SECONDARY,
            "label": button_label(action, number),
            "custom_id": custom_id(action, digest_id, paper.id),
        }
        for action in (VOTE_UP, VOTE_DOWN, SAVE)
    ]
    for label, url in paper.links:  # checked by `safe_url`, at most 500 characters
        if label in LINK_BUTTONS and len(url) <= limits.DISCORD_BUTTON_URL:
            buttons.append({"type": 2, "style": LINK, "label": LINK_BUTTONS[label], "url": url})
    return {"type": 1, "components": buttons}


_NUMBER = re.compile(r"(\d+)\. ")  # the item's number on its 👍 label


def _row_number(row: dict[str, Any], position: int) -> int:
    """The number an item's row shows on its 👍 ("7. 👍 More like this · 2"): numbers run
    through the digest, so a later message's first row is not "1."; its position in the
    message when the label has none."""
    for button in row.get("components", []):
        parsed = parse_custom_id(button.get("custom_id"))
        if parsed is not None and parsed[0] == VOTE_UP:
            found = _NUMBER.match(str(button.get("label") or ""))
            if found:
                return int(found.group(1))
    return position


def with_counts(
    rows: list[dict[str, Any]], counts: dict[str, tuple[int, int]]
) -> list[dict[str, Any]]:
    """A digest message's action rows with every item's vote counts on its 👍 and 👎
    (`counts`: paper id -> (up, down); a paper not in it has none), each item keeping the
    number its 👍 shows. Buttons that are not Paperboy's votes stay as they are."""
    result = []
    for position, row in enumerate(rows, start=1):
        number = _row_number(row, position)
        buttons = []
        for button in row.get("components", []):
            parsed = parse_custom_id(button.get("custom_id"))
            if parsed is not None:
                action, ref = parsed
                up, down = counts.get(parse_item_ref(ref)[1], (0, 0))
                count = up if action == VOTE_UP else down if action == VOTE_DOWN else 0
                button = {**button, "label": button_label(action, number, count)}
            buttons.append(button)
        result.append({**row, "components": buttons})
    return result


def discord_link(label: str, url: str) -> str:
    """A Markdown link `[label](url)`; `url` is checked by `safe_url` (no spaces, `<`, `>`),
    and its parentheses are percent-encoded so that they cannot end the link early."""
    return f"[{label}]({url.replace('(', '%28').replace(')', '%29')})"


def paper_embed(paper: PaperView) -> dict[str, Any]:
    links = " · ".join(discord_link(label, url) for label, url in paper.links)
    fields = [
        {"name": "Venue", "value": clamp(paper.venue, limits.DISCORD_FIELD_VALUE), "inline": True}
    ] if paper.venue else []  # fmt: skip
    fields.append(
        {
            "name": "Topics",
            "value": clamp(", ".join(paper.topics) or "-", limits.DISCORD_FIELD_VALUE),
            "inline": True,
        }
    )
    embed: dict[str, Any] = {
        "title": clamp(paper.title, limits.DISCORD_EMBED_TITLE),
        # The TL;DR comes last: a description clamped to Discord's limit loses only its end.
        "description": clamp(
            render("discord/item.md.j2", paper=paper, links=links),
            limits.DISCORD_EMBED_DESCRIPTION,
        ),
        "color": EMBED_COLOUR,
        "fields": fields,
        "footer": {"text": f"id {paper.id}"},
    }
    if paper.url:  # checked by `safe_url`: Discord refuses the whole message for a bad one
        embed["url"] = paper.url
    return embed


def _embed_parts(paper: PaperView) -> tuple[dict[str, Any], str, str, int]:
    """A paper's embed, its JSON text, that text after the title (an embed's first key,
    "" if not: then it is encoded afresh when numbered), and its size toward Discord's
    6,000 (`limits.embed_size`, before numbering): remembered once per batch."""
    embed = paper_embed(paper)
    text = encoded(embed)
    start = f'{{"title": {encoded(embed["title"])}'
    rest = text[len(start) :] if text.startswith(start) else ""
    return embed, text, rest, limits.embed_size(embed)


def _fits(
    current: list[dict[str, Any]],
    embed: dict[str, Any],
    most: int = limits.DISCORD_EMBEDS_PER_MESSAGE,
    numbered: bool = False,
    last: int = limits.DISCORD_ACTION_ROWS,
) -> bool:
    """Whether `embed` may join `current`'s message. `numbered`: titles get their number
    after packing ("12. "), at most as wide as `last`'s, the digest's last number."""
    reserve = len(f"{last}. ") if numbered else 0
    sizes = [limits.embed_size(item) for item in current]
    return _room(sizes, limits.embed_size(embed), most, reserve)


def _room(sizes: list[int], size: int, most: int, reserve: int) -> bool:
    """Whether an embed of `size` may join a message of embeds of `sizes` (at most `most`
    embeds), each title to grow by `reserve` characters."""
    if len(sizes) >= most:
        return False
    return sum(sizes) + size + reserve * (len(sizes) + 1) <= limits.DISCORD_EMBED_TOTAL


def digest_messages(
    digest: Digest, empty: str = "notice", buttons: bool = True
) -> list[DiscordMessage]:
    """The Discord messages for a digest; [] for an empty week when `empty` is "skip".
    `buttons`: a recorded digest's items get their rows of buttons (not in a command's
    reply, which shows the digest to one person)."""
    if digest.empty and empty == "skip":
        return []
    view = digest_view(digest, discord_escape)
    if digest.empty:  # one short line
        return [
            DiscordMessage(clamp(render("discord/empty.md.j2", view=view), limits.DISCORD_CONTENT))
        ]
    header = render("discord/header.md.j2", view=view)
    footer = render("discord/footer.md.j2", view=view)
    # Each paper's embed once per batch (`per_paper`), not once per channel.
    # With its JSON text, and that text after the title (numbered per message).
    parts = [per_paper("discord-embed", paper, _embed_parts) for paper in view.items]
    embeds = [(fresh(embed), paper) for (embed, *_), paper in zip(parts, view.items, strict=True)]
    texts = {id(embed): part[1:3] for (embed, _), part in zip(embeds, parts, strict=True)}
    sizes = {id(embed): part[3] for (embed, _), part in zip(embeds, parts, strict=True)}
    # A recorded digest's items have buttons: one action row each, 5 rows per message.
    rows = _item_rows(digest, view.items) if buttons else None
    most = limits.DISCORD_EMBEDS_PER_MESSAGE if rows is None else limits.DISCORD_ACTION_ROWS
    units = [
        (embed, paper, rows[index] if rows else None) for index, (embed, paper) in enumerate(embeds)
    ]
    # Titles get their number after packing ("12. "), at most as wide as the last one's.
    reserve = len(f"{len(units)}. ") if rows is not None else 0

    def fits(current: list[tuple[dict[str, Any], PaperView, Any]], unit: tuple[Any, ...]) -> bool:
        # Sizes remembered with each embed (`_embed_parts`), not counted again per try.
        return _room([sizes[id(e)] for e, _, _ in current], sizes[id(unit[0])], most, reserve)

    groups = pack(units, fits) or [[]]
    messages = []
    shown = 0  # the items in the messages before: numbers run through the digest
    for number, group in enumerate(groups, start=1):
        parts = []
        if number == 1:
            parts.append(header)
        if number == len(groups):
            parts.append(footer)
        content = clamp("\n".join(parts), limits.DISCORD_CONTENT)
        message_rows = []
        embed_json = []
        for position, (embed, _, row) in enumerate(group, start=shown + 1):
            text, rest = texts[id(embed)]
            if row is not None:  # numbered alike (the embed is a fresh copy: ours to change)
                embed["title"] = clamp(f"{position}. {embed['title']}", limits.DISCORD_EMBED_TITLE)
                row["components"][0]["label"] = button_label(VOTE_UP, position)
                message_rows.append(row)
                text = f'{{"title": {encoded(embed["title"])}{rest}' if rest else encoded(embed)
            embed_json.append(text)
        shown += len(group)
        messages.append(
            DiscordMessage(
                content,
                [embed for embed, _, _ in group],
                tuple(paper.id for _, paper, _ in group),
                message_rows,
                tuple(embed_json),
            )
        )
    return messages


def _item_rows(digest: Digest, papers: list[PaperView]) -> list[dict[str, Any]] | None:
    """Each item's action row, for a recorded digest; None for a preview (no buttons), or
    when an item's ids make no custom_id (all or none: a row sits by its position)."""
    if not digest.recorded or digest.digest_id is None:
        return None
    try:
        return [item_row(digest.digest_id, paper, 0) for paper in papers]
    except ValueError as exc:  # ids Paperboy did not make: the digest goes out without buttons
        log.warning("digest %s: no buttons: %s", digest.digest_id, exc)
        return None


def _discord_code(text: str) -> str:
    return text.replace("`", "'")


def _chunks(text: str, size: int) -> list[str]:
    """Pieces of at most `size` characters, split at line breaks where possible."""
    chunks: list[str] = []
    for line in text.split("\n"):
        if chunks and len(chunks[-1]) + 1 + len(line) <= size:
            chunks[-1] += "\n" + line
        else:
            chunks.append(clamp(line, size))
    return [chunk for chunk in chunks if chunk.strip()]


def reply_messages(reply: Reply) -> list[DiscordMessage]:
    """A command's reply as Discord messages (usually one)."""
    lines = [with_code(line, discord_escape, _discord_code) for line in reply.body_lines]
    content = "\n".join(lines)
    text_embeds: list[dict[str, Any]] = []
    if len(content) > limits.DISCORD_CONTENT:
        # Long help or lists go into embed descriptions, which hold twice as much.
        content = clamp(lines[0], limits.DISCORD_CONTENT)  # long, so lines[0] exists
        body = "\n".join(lines[1:])
        text_embeds = [
            {"description": chunk} for chunk in _chunks(body, limits.DISCORD_EMBED_DESCRIPTION)
        ]
    embeds = [paper_embed(paper_view(result, (), discord_escape)) for result in reply.papers]
    if reply.detail and embeds:
        embeds[0]["description"] = clamp(
            discord_escape(reply.detail), limits.DISCORD_EMBED_DESCRIPTION
        )
        # The description holds the abstract: the authors (all of them) get a field.
        authors = ", ".join(str(name) for name in reply.papers[0].get("authors") or [])
        if authors.strip():
            value = clamp(discord_escape(authors), limits.DISCORD_FIELD_VALUE)
            embeds[0]["fields"].append({"name": "Authors", "value": value, "inline": False})
    groups = pack(text_embeds + embeds, _fits) or [[]]
    messages = [
        DiscordMessage(content if number == 0 else "", group) for number, group in enumerate(groups)
    ]
    if reply.digest is not None:
        messages += digest_messages(reply.digest, empty="notice", buttons=False)
    return messages
