"""An RSS or Atom feed (any publisher's) into `FetchedPaper`s, through feedparser.

Kept per entry: title, summary as plain text, link, authors, UTC dates (an impossible one
is unknown), tags as keywords, a DOI and the arXiv ids it links. A document feedparser
recognised as RSS or Atom, or that has entries, is a feed, bozo or not; anything else (an
HTML page above all) is `NotAFeedError`.
"""

from __future__ import annotations

import calendar
import logging
import time
from datetime import UTC, datetime
from typing import Any

import feedparser

from digests.safe_url import safe_url
from digests.sources.errors import NotAFeedError
from digests.sources.records import (
    FetchedPaper,
    clean,
    find_code_url,
    find_doi,
    html_to_text,
    linked_arxiv_ids,
    split_arxiv_id,
)
from digests.timestamps import written_date_is_real

log = logging.getLogger(__name__)


def looks_like_html(body: bytes, content_type: str | None) -> bool:
    """Whether `body` is an HTML page (by its start, whatever the declared type)."""
    head = body[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return True
    return bool(content_type and "html" in content_type.lower() and b"<rss" not in head
                and b"<feed" not in head and b"<?xml" not in head)  # fmt: skip


def parse_feed(body: bytes, *, source: str, content_type: str | None = None) -> list[FetchedPaper]:
    """The entries of the feed `body`; NotAFeedError (one line) when it is no feed.
    Entries with neither a title nor a summary are skipped."""
    if looks_like_html(body, content_type):
        raise NotAFeedError("not a feed (an HTML page)")
    if b"<!ENTITY" in body[:65536]:
        # Entity declarations are how XML bombs work; a feed's DOCTYPE (RSS 0.91) has none.
        raise NotAFeedError("not a feed this reader accepts (it declares XML entities)")
    # No network, no relative-URL resolution against a guessed base: bytes in, entries out.
    parsed: Any = feedparser.parse(body, response_headers={"content-type": content_type or ""})
    if not parsed.get("version") and not parsed.get("entries"):
        reason = parsed.get("bozo_exception")
        detail = f" ({str(reason).splitlines()[0][:80]})" if reason else ""
        raise NotAFeedError(f"not a feed{detail}")
    if parsed.get("bozo"):
        log.debug("%s: feed repaired by feedparser: %s", source, parsed.get("bozo_exception"))
    papers = []
    for entry in parsed.get("entries", []):
        paper = _paper(entry, source)
        if paper is not None:
            papers.append(paper)
    return papers


def _date(entry: Any, key: str) -> datetime | None:
    """The entry's `published` or `updated` date in UTC; None if absent, unreadable, or
    partly made up by feedparser (`written_date_is_real`: an offset beyond ±14:00, which
    would move the date by days, a field out of range it rolls over, a part it takes from
    today's date)."""
    # dict.get, not FeedParserDict.get: the latter maps a missing updated_parsed onto
    # published_parsed with a DeprecationWarning, and we ask for each on its own.
    value = dict.get(entry, f"{key}_parsed")
    if not isinstance(value, time.struct_time):
        return None
    written = dict.get(entry, key)
    if isinstance(written, str) and not written_date_is_real(written):
        log.debug("feed date %r refused: feedparser would make part of it up", written[:80])
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(value), UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _paper(entry: Any, source: str) -> FetchedPaper | None:
    title = html_to_text(entry.get("title"))
    summary = html_to_text(entry.get("summary") or _content(entry))
    if not title and not summary:
        return None
    link = safe_url(entry.get("link"))
    entry_id = clean(entry.get("id")) or None
    authors = [clean(a.get("name")) for a in entry.get("authors", []) if isinstance(a, dict)]
    authors = [a for a in authors if a]
    if len(authors) <= 1 and (authors or entry.get("author")):
        # RSS <author> and <dc:creator> (arXiv's RSS) often hold "A, B and C" in one string.
        authors = [
            a
            for a in (clean(x) for x in _split_names(authors[0] if authors else entry["author"]))
            if a
        ]
    tags = [clean(t.get("term")) for t in entry.get("tags", []) if isinstance(t, dict)]
    links = [link or "", entry_id or ""] + [
        str(x.get("href", "")) for x in entry.get("links", []) if isinstance(x, dict)
    ]
    own_arxiv = next((ids for ids in map(split_arxiv_id, [link or ""]) if ids), None)
    # Links only, never the summary: an entry that mentions an arXiv id in its text may
    # cite another paper, and a shared arXiv key would merge the two for good.
    arxiv_ids = linked_arxiv_ids(*links)
    doi = find_doi(entry.get("prism_doi"), entry.get("dc_identifier"), *links)
    published = _date(entry, "published") or _date(entry, "updated")
    return FetchedPaper(
        source=source,
        title=title or None,
        abstract=summary,
        authors=authors,
        affiliations=[[] for _ in authors],
        published=published,
        updated=_date(entry, "updated"),
        url=link,
        code_url=find_code_url(summary),
        doi=doi,
        year=published.year if published else None,
        keywords=[t for t in tags if t],
        arxiv_version=own_arxiv[1] if own_arxiv else None,
        entry_id=entry_id,
        linked_arxiv_ids=arxiv_ids,
    )


def _content(entry: Any) -> str:
    content = entry.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return str(content[0].get("value", ""))
    return ""


def _split_names(text: str) -> list[str]:
    text = html_to_text(text)
    for separator in (" and ", ";"):
        text = text.replace(separator, ",")
    return text.split(",")
