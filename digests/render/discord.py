"""Discord messages for digests: one embed per paper, split to respect every limit.

discord.py checks none of Discord's limits, so this module does: at most 10 embeds
and 6,000 embed characters per message, and each field within its own limit.
Messages go out with mentions disabled (the adapter's job); text here is escaped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from digests.commands.replies import Reply
from digests.digest import Digest
from digests.render import limits
from digests.render.escape import discord_escape, with_code
from digests.render.packing import clamp, pack
from digests.render.view import PaperView, digest_view, paper_view, per_paper, render

log = logging.getLogger(__name__)

EMBED_COLOUR = 0x2F6FEB


@dataclass(frozen=True)
class DiscordMessage:
    """`POST /channels/{id}/messages` arguments: `content` and `embeds` (as JSON dicts)."""

    content: str
    embeds: list[dict[str, Any]] = field(default_factory=list)
    paper_ids: tuple[str, ...] = ()  # the papers this message carries (not sent to Discord)

    def payload(self) -> dict[str, Any]:
        return {"content": self.content, "embeds": self.embeds, "allowed_mentions": {"parse": []}}


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


def _fits(current: list[dict[str, Any]], embed: dict[str, Any]) -> bool:
    if len(current) >= limits.DISCORD_EMBEDS_PER_MESSAGE:
        return False
    used = sum(limits.embed_size(item) for item in current)
    return used + limits.embed_size(embed) <= limits.DISCORD_EMBED_TOTAL


def digest_messages(digest: Digest, empty: str = "notice") -> list[DiscordMessage]:
    """The Discord messages for a digest; [] for an empty week when `empty` is "skip"."""
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
    embeds = [(per_paper("discord-embed", paper, paper_embed), paper.id) for paper in view.items]
    groups = pack(embeds, lambda current, unit: _fits([e for e, _ in current], unit[0])) or [[]]
    messages = []
    for number, group in enumerate(groups, start=1):
        parts = []
        if number == 1:
            parts.append(header)
        if number == len(groups):
            parts.append(footer)
        content = clamp("\n".join(parts), limits.DISCORD_CONTENT)
        messages.append(
            DiscordMessage(content, [e for e, _ in group], tuple(paper_id for _, paper_id in group))
        )
    return messages


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
    groups = pack(text_embeds + embeds, _fits) or [[]]
    messages = [
        DiscordMessage(content if number == 0 else "", group) for number, group in enumerate(groups)
    ]
    if reply.digest is not None:
        messages += digest_messages(reply.digest, empty="notice")
    return messages
