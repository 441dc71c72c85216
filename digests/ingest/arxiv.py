"""arXiv Atom XML, as the arXiv export API (`/api/query`) returns it."""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from itertools import chain

from digests.ingest.decode import Limits, skip_blank
from digests.ingest.errors import IngestError
from digests.ingest.jsonl import read_document
from digests.records import PaperRecord

log = logging.getLogger(__name__)

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
_ABS = "arxiv.org/abs/"
_VERSION = re.compile(r"v\d+$")
# An entry's start tag, for its line number; possessive, so no run is scanned twice.
_ENTRY_TAG = re.compile(r"<(?:[\w.-]++:)?+entry[\s/>]")
_SPACES = re.compile(r"\s+")


def _text(element: ET.Element | None) -> str:
    return _SPACES.sub(" ", element.text or "").strip() if element is not None else ""


def arxiv_id(entry_id: str) -> str | None:
    """ "http://arxiv.org/abs/2101.00001v2" -> "2101.00001": the id after `arxiv.org/abs/`
    in the last blank-, `?`- and `#`-free part, without its version. No regex scans to
    the end from each `arxiv.org/abs/`: that would be quadratic."""
    tail = entry_id.rsplit(maxsplit=1)[-1] if entry_id.strip() else ""
    tail = tail.rpartition("?")[2].rpartition("#")[2]
    start = tail.find(_ABS)
    if start < 0:
        return None
    found = tail[start + len(_ABS) :]
    version = _VERSION.search(found)
    return (found[: version.start()] if version and version.start() else found) or None


def parse_arxiv(
    lines: Iterable[str], *, source: str, path: str, limits: Limits | None = None
) -> list[PaperRecord]:
    """Records for each `<entry>`; venue "arXiv", year from `<published>`. The feed is
    read whole, up to the document limit (arXiv pages are a few MB)."""
    # Blank lines before the feed are counted, not held (an XML declaration must come
    # first in the text): line numbers add them.
    blank, first, rest = skip_blank(lines)
    text = read_document(
        chain([first], rest) if first is not None else [],
        path=path,
        limits=limits or Limits(),
        what="an Atom feed",
    )
    if "<!DOCTYPE" in text[:2000] or "<!ENTITY" in text:
        # Entity expansion is how XML bombs work; arXiv never sends a DTD.
        raise IngestError(path, 1, "is XML with a DTD or entities, which an arXiv feed never has")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise IngestError(
            path, blank + exc.position[0], f"is not well-formed XML ({exc})"
        ) from None
    if root.tag != f"{ATOM}feed":
        raise IngestError(path, 1, f"is XML but not an Atom feed (root <{root.tag}>)")
    records: list[PaperRecord] = []
    # The n-th entry's line is the n-th `<entry` tag's, counted on from the one before:
    # linear, where finding each entry's id in the text would scan to the end for each.
    tags = _ENTRY_TAG.finditer(text)
    searched, line = 0, blank + 1
    for entry in root.findall(f"{ATOM}entry"):
        entry_id = _text(entry.find(f"{ATOM}id"))
        tag = next(tags, None)
        if tag is not None:
            line += text.count("\n", searched, tag.start())
            searched = tag.start()
        found_id = arxiv_id(entry_id)
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
                url=f"https://arxiv.org/abs/{found_id}" if found_id else entry_id or None,
                authors=[a for a in authors if a],
                keywords=[c for c in categories if c],
                external_id=f"arXiv:{found_id}" if found_id else None,
            )
        )
    if not records:
        raise IngestError(path, 1, "is an Atom feed with no entries")
    return records
