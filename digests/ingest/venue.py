"""Venue and year from a header line or a file name: "ICLR 2025 论文列表" -> ("ICLR", 2025)."""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

_HEADER = re.compile(
    r"^\s*(?P<venue>[A-Za-z][A-Za-z&\-]*(?:\s+[A-Z][A-Za-z&\-]*)*?)\s*[-'’]?\s*(?P<year>(?:19|20)\d\d)\b"
)
_FILE_NAME = re.compile(r"(?P<venue>[a-z]{3,12})[-_ ]?(?P<year>(?:19|20)\d\d)", re.I)


def parse_venue(text: str) -> tuple[str, int] | None:
    """A venue header such as "ICML 2025 Papers"; None if `text` is not one."""
    match = _HEADER.match(text)
    if not match:
        return None
    return match.group("venue").strip(), int(match.group("year"))


def venue_from_filename(name: str) -> tuple[str, int] | None:
    """Guess from names like `iclr2021-openreview.tsv` -> ("ICLR", 2021)."""
    match = _FILE_NAME.search(name)
    if not match:
        return None
    return match.group("venue").upper(), int(match.group("year"))


_TRAILING_YEAR = re.compile(r"(?P<venue>.*?[^\s,'’-])[\s,'’-]+(?P<year>(?:19|20)\d\d)")


def split_venue_year(venue: str | None, year: int | None) -> tuple[str | None, int | None]:
    """A venue that ends in its own year, such as "ICLR 2021" with year 2021 (or none),
    becomes ("ICLR", 2021), so venue and year are never shown as "ICLR 2021 2021".
    A venue whose year differs from `year` is kept whole: it says something."""
    if not venue:
        return venue or None, year
    venue = " ".join(venue.split())
    match = _TRAILING_YEAR.fullmatch(venue)
    if match and (year is None or year == int(match.group("year"))):
        return match.group("venue"), int(match.group("year"))
    return venue, year
