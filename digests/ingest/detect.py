"""Which reader a file needs: from its extension, else from its first bytes."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

FORMATS = ("seed", "csv", "tsv", "jsonl", "arxiv")

_BY_SUFFIX = {
    ".txt": "seed",
    ".md": "seed",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".xml": "arxiv",
    ".atom": "arxiv",
}


def sniff(text: str) -> str:
    """The format that the content looks like."""
    head = text.lstrip()
    if head.startswith("<"):
        return "arxiv"
    if head.startswith(("{", "[")):
        return "jsonl"
    first = head.split("\n", 1)[0].lower()
    if "abstract" in first or "summary" in first:
        if "\t" in first:
            return "tsv"
        if "," in first:
            return "csv"
    return "seed"


def detect_format(path: Path, text: str) -> str:
    """A known extension decides (so a `.csv` without an abstract column is an error,
    not prose); otherwise the content does."""
    return _BY_SUFFIX.get(path.suffix.lower()) or sniff(text)


def whole_document(kind: str, first: str) -> str | None:
    """What a file of format `kind` whose first line that is not blank is `first` is, if
    it is read as one document ("a JSON array", "an Atom feed"), else None."""
    if kind == "arxiv":
        return "an Atom feed"
    if kind == "jsonl" and first.lstrip().startswith("["):
        return "a JSON array"
    return None
