"""CSV and TSV with a header row naming the fields (see `fields.ALIASES`)."""

from __future__ import annotations

import csv
import io
import logging
import sys

from digests.ingest.errors import IngestError
from digests.ingest.fields import has_field, normalise_key, record_from_row
from digests.records import PaperRecord

log = logging.getLogger(__name__)

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def parse_tabular(text: str, *, delimiter: str, source: str, path: str) -> list[PaperRecord]:
    """Records for each data row. A row whose field count differs from the header's,
    or a header without an abstract column, is an error naming the line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise IngestError(path, 1, "is empty: there are no papers in it") from None
    except csv.Error as exc:
        raise IngestError(path, 1, f"has a malformed header ({exc})") from None
    keys = [normalise_key(name) for name in header]
    if not has_field(set(keys), "abstract"):
        shown = ", ".join(name.strip() for name in header[:8] if name.strip()) or "none"
        raise IngestError(path, 1, f"has no 'abstract' column (columns: {shown})")
    records: list[PaperRecord] = []
    line = 1
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(keys):
                raise IngestError(
                    path, line, f"has {len(row)} fields but the header has {len(keys)}"
                )
            fields = dict(zip(keys, row, strict=True))
            records.append(record_from_row(fields, source=source, path=path, line=line))
    except csv.Error as exc:
        raise IngestError(path, line + 1, f"is not valid CSV/TSV ({exc})") from None
    if not records:
        raise IngestError(path, 2, "has a header but no rows")
    return records
