"""JSON Lines (one object per line), or one JSON array of objects."""

from __future__ import annotations

import json
import logging
from typing import Any

from digests.ingest.errors import IngestError
from digests.ingest.fields import has_field, normalise_key, record_from_row
from digests.records import PaperRecord

log = logging.getLogger(__name__)


def _record(value: Any, *, source: str, path: str, line: int) -> PaperRecord:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise IngestError(
            path, line, "has an invalid character (a lone surrogate \\ud8xx)"
        ) from None
    if not isinstance(value, dict):
        raise IngestError(path, line, f"holds a JSON {type(value).__name__}, not an object")
    row = {normalise_key(str(key)): item for key, item in value.items()}
    if not has_field(set(row), "abstract"):
        raise IngestError(path, line, "has no 'abstract' field")
    return record_from_row(row, source=source, path=path, line=line)


def parse_json(text: str, *, source: str, path: str) -> list[PaperRecord]:
    """Records for each object. Invalid JSON is an error naming its line."""
    if text.lstrip().startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IngestError(path, exc.lineno, f"is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise IngestError(path, 1, "is JSON nested too deeply to be a paper list") from None
        if not isinstance(values, list):
            raise IngestError(path, 1, "is not a JSON array of papers")
        records = [_record(value, source=source, path=path, line=1) for value in values]
    else:
        records = []
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise IngestError(path, number, f"is not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise IngestError(path, number, "is JSON nested too deeply") from None
            records.append(_record(value, source=source, path=path, line=number))
    if not records:
        raise IngestError(path, 1, "holds no papers")
    return records
