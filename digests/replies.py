"""A reply: what a command answers, before any platform formatting.

Text fields are plain. In `text` and `lines`, `backticks` mark code (commands, ids),
which every platform shows as code; everything else is escaped by the renderer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from digests.digest import Digest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Attachment:
    """A file that goes with a reply, e.g. a BibTeX export.

    Renderers ignore it; each adapter delivers it its own way (Slack: a file upload in the
    user's DM with the bot; Discord: a file on the ephemeral reply; CLI: printed to stdout).
    `content` is text; `mime` tells the adapter what kind (e.g. "application/x-bibtex").
    """

    filename: str
    content: str
    mime: str = "text/plain"


@dataclass(frozen=True)
class Reply:
    text: str
    ephemeral: bool = True  # only the person who asked sees it
    lines: tuple[str, ...] = ()
    papers: tuple[dict[str, Any], ...] = ()  # lookup results (digests.lookup.Result)
    # A long plain text, such as an abstract. A reply with a detail shows its paper in
    # full; its `text` (the title) is the notification text, not repeated above the paper.
    detail: str | None = None
    digest: Digest | None = None
    error: bool = False
    changed: bool = False  # the command changed the channel's settings
    attachment: Attachment | None = None  # a file the adapter sends with the reply

    @property
    def body_lines(self) -> list[str]:
        """The text lines a renderer shows above the papers (the title of a paper shown in
        full is already on the paper)."""
        shown_in_full = self.detail is not None and bool(self.papers)
        return [*([] if shown_in_full else [self.text]), *self.lines]

    def plain(self) -> str:
        """Everything as plain text, e.g. for logs or a notification fallback."""
        parts = [self.text, *self.lines]
        parts += [str(paper["title"]) for paper in self.papers]
        return "\n".join(parts)


def error(text: str, *lines: str) -> Reply:
    return Reply(text=text, lines=tuple(lines), error=True)


def info(text: str, *lines: str, **kwargs: Any) -> Reply:
    return Reply(text=text, lines=tuple(lines), **kwargs)


__all__ = ["Attachment", "Reply", "error", "info"]
