"""Plain-text rendering for the terminal (and any destination without markup)."""

from __future__ import annotations

import logging

from digests.digest import Digest
from digests.lookup import format_paper, format_results
from digests.render.escape import plain
from digests.render.view import digest_view, render
from digests.replies import Reply

log = logging.getLogger(__name__)


def digest_text(digest: Digest) -> str:
    return render("text/digest.txt.j2", view=digest_view(digest, plain))


def terminal_line(line: str) -> str:
    """A reply line for the terminal: the `code` marks that Slack and Discord show as
    code are dropped (the words stay), and unsafe characters removed."""
    text = plain(line)
    return text.replace("`", "") if text.count("`") % 2 == 0 else text  # unpaired: literal


def reply_text(reply: Reply, width: int = 88) -> str:
    """A reply for the terminal: plain text, no Markdown marks."""
    lines = [terminal_line(line) for line in reply.body_lines]
    parts = [*lines[:1], *(f"  {line}" for line in lines[1:])]
    if reply.papers and reply.detail is None:
        parts += ["", format_results(list(reply.papers), "", width)]
    elif reply.papers:
        parts += [*([""] if parts else []), format_paper(reply.papers[0], width)]
    if reply.digest is not None:
        parts += ["", digest_text(reply.digest)]
    return "\n".join(parts).rstrip()
