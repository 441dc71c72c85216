"""arXiv Atom XML, as the arXiv export API (`/api/query`) returns it."""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from digests.ingest.decode import Limits
from digests.ingest.errors import IngestError
from digests.ingest.jsonl import read_document
from digests.records import PaperRecord

log = logging.getLogger(__name__)

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
_ARXIV_ID = re.compile(r"arxiv\.org/abs/(?P<id>[^\s?#]+?)(?:v\d+)?$")
_SPACES = re.compile(r"\s+")


def _text(element: ET.Element | None) -> str:
    return _SPACES.sub(" ", element.text or "").strip() if element is not None else ""


def parse_arxiv(
    lines: Iterable[str], *, source: str, path: str, limits: Limits | None = None
) -> list[PaperRecord]:
    """Records for each `<entry>`; venue "arXiv", year from `<published>`. The feed is
    read whole, up to the document limit (arXiv pages are a few MB)."""
    text = read_document(lines, path=path, limits=limits or Limits(), what="an Atom feed")
    if "<!DOCTYPE" in text[:2000] or "<!ENTITY" in text:
        # Entity expansion is how XML bombs work; arXiv never sends a DTD.
        raise IngestError(path, 1, "is XML with a DTD or entities, which an arXiv feed never has")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise IngestError(path, exc.position[0], f"is not well-formed XML ({exc})") from None
    if root.tag != f"{ATOM}feed":
        raise IngestError(path, 1, f"is XML but not an Atom feed (root <{root.tag}>)")
    records: list[PaperRecord] = []
    searched, line = 0, 1  # counted on from the previous entry: linear, not quadratic
    for entry in root.findall(f"{ATOM}entry"):
        entry_id = _text(entry.find(f"{ATOM}id"))
        found = text.find(entry_id, searched) if entry_id else -1
        if found >= 0:
            line += text.count("\n", searched, found)
            searched = found
        match = _ARXIV_ID.search(entry_id)
        arxiv_id = match.group("id") if match else None
        published = _text(entry.find(f"{ATOM}published"))
        year = int(published[:4]) if published[:4].isdigit() else None
        categories = [c.get("term", "") for c in entry.findall(f"{ATOM}category")]
        authors = [_text(a.find(f"{ATOM}name")) for a in entry.findall(f"{ATOM}author")]
        records.append(
            PaperRecord(
                abstract=_text(entry.find(f"{ATOM}summary")),
                source=source,
                line=line,
                title=_text(entry.find(f"{ATOM}title")) or None,
                venue="arXiv",
                year=year,
                url=f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else entry_id or None,
                authors=[a for a in authors if a],
                keywords=[c for c in categories if c],
                external_id=f"arXiv:{arxiv_id}" if arxiv_id else None,
            )
        )
    if not records:
        raise IngestError(path, 1, "is an Atom feed with no entries")
    return records
