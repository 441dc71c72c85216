"""Lookups a user asks for (`find`, `show`) as neutral results, and their text form."""

from __future__ import annotations

import logging
import textwrap
from typing import Any

from sqlite_utils import Database

from db.papers import resolve_paper
from db.search import search_papers
from digests.safe_text import strip_unsafe
from digests.safe_url import safe_url

log = logging.getLogger(__name__)

Result = dict[str, Any]


def paper_link(paper: dict[str, Any]) -> str | None:
    """The one link to show: the paper's page, else its code, else its arXiv page; only
    a well-formed http(s) URL (`digests.safe_url`), so no platform refuses the message."""
    for key in ("url", "code_url", "arxiv_url"):
        link = safe_url(paper.get(key))
        if link:
            return link
    return None


def as_result(paper: dict[str, Any], score: float | None = None) -> Result:
    """The public shape of a paper, as `--json` prints it."""
    result: Result = {
        "id": paper["id"],
        "title": paper["title"],
        "method": paper.get("method"),
        "venue": paper.get("venue"),
        "year": paper.get("year"),
        "tldr": paper.get("tldr"),
        "abstract": paper["abstract"],
        "url": paper_link(paper),
        "code_url": safe_url(paper.get("code_url")),
    }
    if score is not None:
        result["score"] = score
    return result


def find(db: Database, query: str, limit: int = 10) -> list[Result]:
    return [as_result(hit.paper, hit.score) for hit in search_papers(db, query, limit)]


def show(db: Database, ref: str) -> Result | None:
    paper = resolve_paper(db, ref)
    if paper is None:
        return None
    result = as_result(paper)
    result.update(
        {
            "title_derived": bool(paper["title_derived"]),
            "authors": paper["authors"],
            "keywords": paper["keywords"],
            "links": paper["links"],
            "arxiv_url": paper.get("arxiv_url"),
            "openreview_url": paper.get("openreview_url"),
            "sources": paper["sources"],
            "added_at": paper["added_at"],
        }
    )
    return result


def venue_label(result: Result) -> str:
    parts = [str(part) for part in (result.get("venue"), result.get("year")) if part]
    return " ".join(parts) or "venue unknown"


def format_results(results: list[Result], query: str, width: int = 88) -> str:
    """A numbered, readable list for the terminal."""
    if not results:
        return f"No matches for {query!r}."
    blocks = []
    for number, result in enumerate(results, start=1):
        lines = [f"{number:>2}. {result['title']}"]
        meta = [venue_label(result), result["id"]]
        if result.get("url"):
            meta.append(str(result["url"]))
        lines.append("    " + " · ".join(meta))
        if result.get("tldr"):
            lines.extend(
                textwrap.wrap(
                    result["tldr"], width, initial_indent="    ", subsequent_indent="    "
                )
            )
        blocks.append("\n".join(lines))
    return strip_unsafe("\n\n".join(blocks))


def format_paper(result: Result, width: int = 88) -> str:
    """One paper in full, for `show`."""
    lines = [result["title"], f"{venue_label(result)} · {result['id']}"]
    if result.get("method"):
        lines.append(f"Method: {result['method']}")
    if result.get("authors"):
        lines.append("Authors: " + ", ".join(result["authors"]))
    if result.get("keywords"):
        lines.append("Keywords: " + ", ".join(result["keywords"]))
    lines.append("")
    if result.get("tldr"):
        lines.append(textwrap.fill("TL;DR: " + result["tldr"], width))
        lines.append("")
    lines.append(textwrap.fill(result["abstract"], width))
    links = [
        f"  {link['kind']}: {url}"
        for link in result.get("links", [])
        if (url := safe_url(link.get("url")))
    ]
    for key in ("url", "code_url"):
        if result.get(key) and all(result[key] not in line for line in links):
            links.insert(0, f"  {'code' if key == 'code_url' else 'page'}: {result[key]}")
    if links:
        lines.extend(["", "Links:", *links])
    return strip_unsafe("\n".join(lines))
