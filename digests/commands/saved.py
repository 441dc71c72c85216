"""`saved` (and `saved export`): the asking user's saved papers, found by
`Context.user_key` (the platform's own user id, never the display name)."""

from __future__ import annotations

import logging
from typing import Any

from db import saved as saved_store
from db.papers import aliases_of
from db.store import Store
from digests import bibtex
from digests.commands.context import Context, plural
from digests.commands.grammar import COMMAND, Command
from digests.commands.registry import handler_for
from digests.lookup import item_fields
from digests.replies import Attachment, Reply, error, info

log = logging.getLogger(__name__)

SAVED_SHOWN = 20  # papers `saved` lists; the export has them all
BIBTEX_MIME = "application/x-bibtex"
NO_USER = (
    "I can't tell who you are here, so I can't find your saved papers. "
    "Use `/papers saved` in Slack or Discord, or `paperboy saved --user KEY` on the server."
)


def with_arxiv_id(db: Store, paper: dict[str, Any]) -> dict[str, Any]:
    """The paper with `arxiv_id` from its `arXiv:` alias, when its links do not carry it
    (a paper from a file keeps its arXiv id only as an alias)."""
    if bibtex.paper_arxiv_id(paper):
        return paper
    aliases = aliases_of(db, str(paper["id"]), "arXiv:")
    return paper | {"arxiv_id": aliases[0]} if aliases else paper


@handler_for("saved")
def _saved(command: Command, ctx: Context) -> Reply:
    """Without a user key (an adapter that cannot tell who asks) it says so, reading nothing."""
    if not ctx.user_key:
        return error(NO_USER)
    if command.args.get("action", "").lower() == "export":
        papers = saved_store.saved_papers(ctx.db, ctx.user_key)
        if not papers:
            return info("You have no saved papers to export. Save one with 🔖 under a digest.")
        text = bibtex.bibtex(with_arxiv_id(ctx.db, paper) for paper in papers)
        return info(
            f"{plural(len(papers), 'saved paper')} as BibTeX (paperboy-saved.bib).",
            attachment=Attachment("paperboy-saved.bib", text, BIBTEX_MIME),
        )
    # Only the papers listed are read: a user may have saved thousands.
    total = saved_store.count_saved(ctx.db, ctx.user_key)
    if not total:
        return info(
            "You have no saved papers yet.",
            "Click 🔖 Save under a paper in a digest; it shows up here, only for you.",
        )
    lines = [
        f"`{paper['id']}` {paper['title']} (saved {str(paper['saved_at'])[:10]})"
        for paper in saved_store.saved_papers(ctx.db, ctx.user_key, SAVED_SHOWN)
    ]
    if total > SAVED_SHOWN:
        lines.append(f"and {total - SAVED_SHOWN} more")
    lines.append(f"`{COMMAND} saved export` gives them all as BibTeX.")
    return info(f"Your {plural(total, 'saved paper')}, newest first:", *lines)


def saved_records(papers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The saved papers as `paperboy saved --format json` prints them: a digest item's
    fields (`digests.lookup.item_fields`), its BibTeX key (the one `--format bibtex` gives
    it: two papers that would share a key both take the long one), when it was saved and
    where."""
    keys = [item.key for item in bibtex.entries(papers)]
    return [
        item_fields(paper)
        | {
            "bibtex_key": key,
            "saved_at": paper.get("saved_at"),
            "saved_from": paper.get("saved_from"),
        }
        for paper, key in zip(papers, keys, strict=True)
    ]
