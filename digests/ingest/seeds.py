"""The seed format: a venue header line, then one abstract per blank-line-separated paragraph."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from digests.ingest.decode import Limits, lines_in
from digests.ingest.errors import IngestError
from digests.ingest.venue import parse_venue
from digests.records import PaperRecord

log = logging.getLogger(__name__)

HEADER_MAX_CHARS = 150


def paragraphs(
    lines: Iterable[str], *, path: str = "", limits: Limits | None = None
) -> Iterator[tuple[int, int, str]]:
    """(first line number, line count, text with its lines joined) for each paragraph,
    read as the lines come (as `decode.read_lines` gives them: a run of blank lines may
    be one item). A paragraph over the record limit is an error."""
    limit = (limits or Limits()).max_record_chars
    current: list[str] = []
    size = start = number = 0
    for line in lines:
        stripped = line.strip()
        if stripped:
            number += 1
            if not current:
                start, size = number, 0
            current.append(stripped)
            size += len(stripped) + 1
            if size > limit:
                raise IngestError(path, start, (limits or Limits()).too_long("a paragraph", size))
            continue
        number += lines_in(line)
        if current:
            yield start, len(current), " ".join(current)
            current = []
    if current:
        yield start, len(current), " ".join(current)


def _is_header(paragraph: str, line_count: int) -> bool:
    """A short single line that names a venue, or at least is not a sentence."""
    if line_count != 1 or len(paragraph) > HEADER_MAX_CHARS:
        return False
    return parse_venue(paragraph) is not None or not paragraph.rstrip().endswith((".", "!", "?"))


def parse_seed(
    lines: Iterable[str], *, source: str, path: str, limits: Limits | None = None
) -> Iterator[PaperRecord]:
    """Records for every abstract; venue and year from the header when there is one."""
    found = paragraphs(lines, path=path, limits=limits)
    first = next(found, None)
    second = next(found, None) if first else None
    venue: tuple[str, int] | None = None
    if first is not None:
        _, line_count, text = first
        if _is_header(text, line_count) and (second is not None or parse_venue(text)):
            venue = parse_venue(text)
            log.debug("%s: header %r gives venue %s", path, text, venue)
            first, second = second, None
    if first is None:
        raise IngestError(path, 1, "has a header but no abstracts after it")
    for line, _, paragraph in _chain(first, second, found):
        yield PaperRecord(
            abstract=paragraph,
            source=source,
            line=line,
            venue=venue[0] if venue else None,
            year=venue[1] if venue else None,
        )


def _chain(
    first: tuple[int, int, str],
    second: tuple[int, int, str] | None,
    rest: Iterator[tuple[int, int, str]],
) -> Iterator[tuple[int, int, str]]:
    yield first
    if second is not None:
        yield second
    yield from rest
