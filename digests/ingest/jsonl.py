"""JSON Lines (one object per line), or one JSON array of objects."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from digests.ingest.decode import Limits, lines_in, skip_blank
from digests.ingest.errors import IngestError
from digests.ingest.fields import has_field, normalise_key, record_from_row
from digests.records import PaperRecord

log = logging.getLogger(__name__)


# Files repeat the same few keys on every line: normalised once each.
_normalise_key = functools.lru_cache(maxsize=1024)(normalise_key)


# A lone surrogate that is in the text itself (not spelt as an escape). A file's text,
# strictly decoded, never holds one; a caller's text might.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _may_escape(text: str) -> bool:
    """Whether JSON `text` may decode to a lone surrogate (see `_record`): JSON makes one
    only from a `\\u` escape, or copies one that the text holds (searched for only in
    text that is not ASCII: a scan, far cheaper than re-encoding the decoded value)."""
    return "\\u" in text or (not text.isascii() and _SURROGATE.search(text) is not None)


def _record(value: Any, *, source: str, path: str, line: int, escapes: bool = True) -> PaperRecord:
    """`escapes`: whether the JSON text may make a lone surrogate: it holds a `\\u`
    escape or a character that is not ASCII (the check costs more than parsing)."""
    if escapes:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise IngestError(
                path, line, "has an invalid character (a lone surrogate \\ud8xx)"
            ) from None
    if not isinstance(value, dict):
        raise IngestError(path, line, f"holds a JSON {type(value).__name__}, not an object")
    row = {_normalise_key(str(key)): item for key, item in value.items()}
    if not has_field(set(row), "abstract"):
        raise IngestError(path, line, "has no 'abstract' field")
    return record_from_row(row, source=source, path=path, line=line)


def read_document(lines: Iterable[str], *, path: str, limits: Limits, what: str) -> str:
    """A whole-document format's text, refused past the document limit."""
    parts: list[str] = []
    size = 0
    for line in lines:
        size += len(line)
        if size > limits.max_document_chars:
            raise IngestError(path, None, limits.too_big(what))
        parts.append(line)
    return "".join(parts)


def parse_json(
    lines: Iterable[str], *, source: str, path: str, limits: Limits | None = None
) -> Iterator[PaperRecord]:
    """Records for each object: JSON Lines read line by line, or one JSON array (read
    whole, up to the document limit). Invalid JSON is an error naming its line. `lines`
    as `decode.read_lines` gives them (a run of blank lines may be one item)."""
    limits = limits or Limits()
    blank, first, stream = skip_blank(lines)
    found = 0
    if first is not None and first.lstrip().startswith("["):
        # The blank lines before the array are counted, not held: line numbers add them.
        text = read_document(chain([first], stream), path=path, limits=limits, what="a JSON array")
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IngestError(path, blank + exc.lineno, f"is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise IngestError(
                path, blank + 1, "is JSON nested too deeply to be a paper list"
            ) from None
        if not isinstance(values, list):
            raise IngestError(path, blank + 1, "is not a JSON array of papers")
        escapes = _may_escape(text)
        for value in values:
            found += 1
            yield _record(value, source=source, path=path, line=blank + 1, escapes=escapes)
    elif first is not None:
        number = blank
        for line in chain([first], stream):
            if not line.strip():
                number += lines_in(line)
                continue
            number += 1
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise IngestError(path, number, f"is not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise IngestError(path, number, "is JSON nested too deeply") from None
            found += 1
            yield _record(value, source=source, path=path, line=number, escapes=_may_escape(line))
    if not found:
        raise IngestError(path, 1, "holds no papers")
