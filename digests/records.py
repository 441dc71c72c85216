"""A paper as a source file gives it, before enrichment and storage."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class PaperRecord:
    """One paper read from a source file.

    `line` is where the paper starts in its file, for error messages. Everything
    but the abstract is optional: title-less sources get a derived title later.
    """

    abstract: str
    source: str
    line: int
    title: str | None = None
    venue: str | None = None
    year: int | None = None
    url: str | None = None
    authors: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    external_id: str | None = None
