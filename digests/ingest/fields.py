"""Map a row of named fields (CSV/TSV header or JSON keys) onto a PaperRecord."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from digests.ingest.errors import IngestError
from digests.records import PaperRecord
from digests.safe_text import strip_unsafe

log = logging.getLogger(__name__)

# Accepted field names, first match wins.
ALIASES: dict[str, tuple[str, ...]] = {
    "title": ("title", "paper_title", "name"),
    "abstract": ("abstract", "summary"),
    "url": ("url", "link", "pdf_url", "forum"),
    "venue": ("venue", "conference"),
    "year": ("year",),
    "authors": ("authors", "author"),
    "keywords": ("keywords", "tags", "keyword"),
    "external_id": ("id", "paper_id", "arxiv_id", "openreview_id"),
}


def normalise_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lstrip("\ufeff").lower())


def pick(row: Mapping[str, Any], field: str) -> Any:
    for name in ALIASES[field]:
        value = row.get(name)
        if value not in (None, ""):
            return value
    return None


def has_field(keys: set[str], field: str) -> bool:
    return any(name in keys for name in ALIASES[field])


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = strip_unsafe(str(value)).strip()
    return text or None


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        items = [strip_unsafe(str(item)) for item in value]
    else:
        # Stripped before splitting: an escape sequence's ";" is not a separator.
        text = strip_unsafe(str(value))
        items = text.split(";") if ";" in text else text.split(",")
    return [item.strip() for item in items if item and item.strip()]


def record_from_row(row: Mapping[str, Any], *, source: str, path: str, line: int) -> PaperRecord:
    """Build a record from normalised keys. The abstract may be empty (the row is skipped)."""
    year_value = pick(row, "year")
    year: int | None = None
    if year_value is not None:
        try:
            year = int(float(str(year_value).strip()))
        except (ValueError, OverflowError):
            raise IngestError(
                path, line, f"year {str(year_value)[:20]!r} is not a number"
            ) from None
        if not 1000 <= year <= 3000:
            raise IngestError(path, line, f"year {year} is not a plausible year")
    return PaperRecord(
        abstract=_text(pick(row, "abstract")) or "",
        source=source,
        line=line,
        title=_text(pick(row, "title")),
        venue=_text(pick(row, "venue")),
        year=year,
        url=_text(pick(row, "url")),
        authors=_list(pick(row, "authors")),
        keywords=_list(pick(row, "keywords")),
        external_id=_text(pick(row, "external_id")),
    )
