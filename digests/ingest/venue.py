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
