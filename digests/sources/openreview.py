"""One page of OpenReview API v2 `GET /notes` (`{"notes": [...], "count": N}`) into
`FetchedPaper`s.

Kept from a note's `content` (`{"value": ...}` each): title, abstract, authors, keywords,
`TLDR`, `venue` (a submission, withdrawn or rejected label is no venue), `pdf` (made absolute
on `site`), the forum link, the dates (epoch ms; an implausible one is none), linked arXiv ids.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from digests.safe_url import safe_url
from digests.sources.errors import ParseError
from digests.sources.records import (
    FetchedPaper,
    clean,
    find_code_url,
    find_doi,
    linked_arxiv_ids,
)

log = logging.getLogger(__name__)

# No OpenReview date is older than this; a smaller timestamp is in another unit, or junk.
_EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)

SITE = "https://openreview.net"
_NOT_A_VENUE = re.compile(r"^\s*submitted to\b|withdrawn|rejected", re.I)
_YEAR = re.compile(r"\b((?:19|20)\d\d)\b")


@dataclass
class OpenReviewPage:
    """The papers of one page and the total `count` of notes the query matches."""

    papers: list[FetchedPaper]
    count: int
    notes: int  # notes on this page, papers or not (paging counts these)


def parse_openreview_page(text: str | bytes, *, source: str, site: str = SITE) -> OpenReviewPage:
    """The page `text`; ParseError (one line) if it is not JSON of that shape. A note
    without a title and abstract is skipped; a note whose fields have the wrong type keeps
    what can be read."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"not JSON ({str(exc)[:80]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("notes"), list):
        raise ParseError('JSON without a "notes" list; not an OpenReview API v2 answer')
    count = data.get("count")
    notes = data["notes"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        count = len(notes)  # `count` is missing when the query asked for none; don't page on
    papers = []
    for note in notes:
        paper = _paper(note, source, site.rstrip("/")) if isinstance(note, dict) else None
        if paper is not None:
            papers.append(paper)
    return OpenReviewPage(papers, count, len(notes))


def _value(content: dict[str, Any], key: str) -> Any:
    field = content.get(key)
    return field.get("value") if isinstance(field, dict) else None


def _string(content: dict[str, Any], key: str) -> str:
    value = _value(content, key)
    return clean(value) if isinstance(value, str) else ""


def _strings(content: dict[str, Any], key: str) -> list[str]:
    value = _value(content, key)
    if isinstance(value, str):  # some venues give keywords as one comma-separated string
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return [s for s in (clean(v) for v in value if isinstance(v, str)) if s]


def _linked_arxiv(content: dict[str, Any]) -> list[str]:
    """arXiv ids of the fields whose whole value is a link or an id ("arxiv":
    "https://arxiv.org/abs/ID", "html": "arXiv:ID"), never of prose: an abstract or TL;DR
    that mentions "arXiv:ID" cites another paper as often as it names its own long version,
    and a shared arXiv key merges two papers for good."""
    values = [_value(content, key) for key in content]
    links = [v.strip() for v in values if isinstance(v, str) and len(v) <= 300]
    return linked_arxiv_ids(
        *(link for link in links if link and not any(c.isspace() for c in link))
    )


def _millis(value: Any) -> datetime | None:
    """Epoch milliseconds as a UTC datetime; None, a date unknown, if not a number or out
    of range: before 1990 (seconds read as milliseconds land in January 1970), or beyond
    what a datetime holds."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        moment = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment if moment >= _EARLIEST else None


def _paper(note: dict[str, Any], source: str, site: str) -> FetchedPaper | None:
    content = note.get("content")
    if not isinstance(content, dict):
        return None
    title = _string(content, "title")
    abstract = _string(content, "abstract")
    if not title and not abstract:
        return None
    note_id = note.get("id") if isinstance(note.get("id"), str) else None
    forum = note.get("forum") if isinstance(note.get("forum"), str) else note_id
    label = _string(content, "venue")
    venue = label if label and not _NOT_A_VENUE.search(label) else None
    published = _millis(note.get("pdate")) or _millis(note.get("cdate"))
    year_match = _YEAR.search(label)
    pdf = _string(content, "pdf")
    pdf_url = safe_url(site + pdf if pdf.startswith("/") else pdf) if pdf else None
    code = _string(content, "code")
    return FetchedPaper(
        source=source,
        title=title or None,
        abstract=abstract,
        authors=_strings(content, "authors"),
        affiliations=[[] for _ in _strings(content, "authors")],
        published=published,
        updated=_millis(note.get("tmdate")) or _millis(note.get("mdate")),
        url=safe_url(f"{site}/forum?id={forum}") if forum else None,
        pdf_url=pdf_url,
        code_url=safe_url(code) if code else find_code_url(abstract),
        doi=find_doi(_string(content, "doi")) or None,
        venue=venue,
        year=int(year_match.group(1)) if year_match else (published.year if published else None),
        keywords=_strings(content, "keywords"),
        tldr=_string(content, "TLDR") or _string(content, "TL;DR") or None,
        openreview_id=note_id,
        openreview_forum=forum,
        linked_arxiv_ids=_linked_arxiv(content),
    )
