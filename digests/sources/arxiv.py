"""One page of the arXiv export API (`/api/query`), Atom XML, into `FetchedPaper`s.

ElementTree reads it, strictly (a truncated page raises, so it is fetched again), keeping
each author's affiliation, behind the DTD/entity guard of `digests.ingest.arxiv`. arXiv's
"error feed" for a bad query raises `ArxivAPIError`, never a paper.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime

from digests.safe_url import safe_url
from digests.sources.errors import ArxivAPIError, ParseError
from digests.sources.records import (
    FetchedPaper,
    clean,
    find_code_url,
    split_arxiv_id,
    venue_from_comment,
)
from digests.timestamps import source_moment, written_offset_is_real

log = logging.getLogger(__name__)

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
ERROR_ID = "http://arxiv.org/api/errors"


@dataclass
class ArxivPage:
    """The papers of one page, and arXiv's paging figures (None where the page lacks them)."""

    papers: list[FetchedPaper]
    total: int | None
    start: int | None
    per_page: int | None
    entries: int  # entries on the page, papers or not (paging counts these)


def parse_arxiv_page(text: str, *, source: str) -> ArxivPage:
    """The page `text`; ParseError (one line) if it is no arXiv Atom page, ArxivAPIError
    for arXiv's error feed. Entries without an arXiv id are skipped (logged at debug)."""
    if "<!DOCTYPE" in text[:2000] or "<!ENTITY" in text:
        raise ParseError("XML with a DTD or entities, which an arXiv page never has")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError(f"not well-formed XML ({exc})") from None
    if root.tag != f"{ATOM}feed":
        raise ParseError(f"XML but not an Atom feed (root <{root.tag}>)")
    papers: list[FetchedPaper] = []
    for entry in root.findall(f"{ATOM}entry"):
        entry_id = _text(entry.find(f"{ATOM}id"))
        if entry_id.startswith(ERROR_ID):
            message = _text(entry.find(f"{ATOM}summary")) or entry_id.partition("#")[2]
            raise ArxivAPIError(f"arXiv refused the query: {message}")
        paper = _paper(entry, entry_id, source)
        if paper is None:
            log.debug("arXiv entry without an arXiv id skipped: %r", entry_id[:100])
        else:
            papers.append(paper)
    return ArxivPage(
        papers,
        _int(root.find(f"{OPENSEARCH}totalResults")),
        _int(root.find(f"{OPENSEARCH}startIndex")),
        _int(root.find(f"{OPENSEARCH}itemsPerPage")),
        len(root.findall(f"{ATOM}entry")),
    )


def _paper(entry: ET.Element, entry_id: str, source: str) -> FetchedPaper | None:
    ids = split_arxiv_id(entry_id)
    if ids is None:
        return None
    arxiv_id, version = ids
    authors: list[str] = []
    affiliations: list[list[str]] = []
    for author in entry.findall(f"{ATOM}author"):
        name = _text(author.find(f"{ATOM}name"))
        if name:
            authors.append(name)
            affiliations.append(
                [a for a in (_text(x) for x in author.findall(f"{ARXIV}affiliation")) if a]
            )
    pdf_url = None
    doi_url = None
    for link in entry.findall(f"{ATOM}link"):
        if link.get("title") == "pdf" or link.get("type") == "application/pdf":
            pdf_url = safe_url(_https(link.get("href", "")))
        elif link.get("title") == "doi":
            doi_url = link.get("href")
    primary = entry.find(f"{ARXIV}primary_category")
    categories = [c.get("term", "") for c in entry.findall(f"{ATOM}category")]
    comment = _text(entry.find(f"{ARXIV}comment")) or None
    journal_ref = _text(entry.find(f"{ARXIV}journal_ref")) or None
    doi = _text(entry.find(f"{ARXIV}doi")) or None
    if doi is None and doi_url and "doi.org/" in doi_url:
        doi = clean(doi_url.split("doi.org/", 1)[1]) or None
    venue = venue_from_comment(comment) or venue_from_comment(journal_ref)
    abstract = _text(entry.find(f"{ATOM}summary"))
    published = _date(entry.find(f"{ATOM}published"))
    return FetchedPaper(
        source=source,
        title=_text(entry.find(f"{ATOM}title")) or None,
        abstract=abstract,
        authors=authors,
        affiliations=affiliations,
        categories=[clean(c) for c in categories if clean(c)],
        primary_category=clean(primary.get("term", "")) or None if primary is not None else None,
        published=published,
        updated=_date(entry.find(f"{ATOM}updated")),
        url=f"https://arxiv.org/abs/{arxiv_id}",
        pdf_url=pdf_url or f"https://arxiv.org/pdf/{arxiv_id}",
        code_url=find_code_url(comment, abstract),
        doi=doi,
        journal_ref=journal_ref,
        comment=comment,
        venue=venue[0] if venue else None,
        year=venue[1] if venue else (published.year if published else None),
        arxiv_id=arxiv_id,
        arxiv_version=version,
        entry_id=entry_id,
    )


def _text(element: ET.Element | None) -> str:
    return clean(element.text) if element is not None else ""


def _int(element: ET.Element | None) -> int | None:
    text = _text(element)
    return int(text) if text.isdigit() else None


def _date(element: ET.Element | None) -> datetime | None:
    # Unknown (None) if unreadable or its UTC offset is beyond ±14:00 (`source_moment`), or
    # its offset's minutes beyond 59 (fromisoformat reads +09:60 as +10:00).
    text = _text(element)
    if not text or not written_offset_is_real(text):
        return None
    try:
        return source_moment(datetime.fromisoformat(text))
    except ValueError:
        return None


def _https(url: str) -> str:
    # arXiv's API still writes http:// links; the site redirects them to https.
    return "https://" + url[len("http://") :] if url.startswith("http://arxiv.org/") else url
