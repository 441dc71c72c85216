"""The seed format: a venue header line, then one abstract per blank-line-separated paragraph."""

from __future__ import annotations

import logging

from digests.ingest.errors import IngestError
from digests.ingest.venue import parse_venue
from digests.records import PaperRecord

log = logging.getLogger(__name__)

HEADER_MAX_CHARS = 150


def paragraphs(text: str) -> list[tuple[int, int, str]]:
    """(first line number, line count, text with its lines joined) for each paragraph."""
    found: list[tuple[int, int, str]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if not current:
                start = number
            current.append(line.strip())
        elif current:
            found.append((start, len(current), " ".join(current)))
            current = []
    if current:
        found.append((start, len(current), " ".join(current)))
    return found


def _is_header(paragraph: str, line_count: int) -> bool:
    """A short single line that names a venue, or at least is not a sentence."""
    if line_count != 1 or len(paragraph) > HEADER_MAX_CHARS:
        return False
    return parse_venue(paragraph) is not None or not paragraph.rstrip().endswith((".", "!", "?"))


def parse_seed(text: str, *, source: str, path: str) -> list[PaperRecord]:
    """Records for every abstract; venue and year from the header when there is one."""
    found = paragraphs(text)
    venue: tuple[str, int] | None = None
    if found:
        _, line_count, first = found[0]
        if _is_header(first, line_count) and (len(found) > 1 or parse_venue(first)):
            venue = parse_venue(first)
            found = found[1:]
            log.debug("%s: header %r gives venue %s", path, first, venue)
    if not found:
        raise IngestError(path, 1, "has a header but no abstracts after it")
    return [
        PaperRecord(
            abstract=paragraph,
            source=source,
            line=line,
            venue=venue[0] if venue else None,
            year=venue[1] if venue else None,
        )
        for line, _, paragraph in found
    ]
