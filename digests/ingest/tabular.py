"""CSV and TSV with a header row naming the fields (see `fields.ALIASES`)."""

from __future__ import annotations

import csv
import logging
import sys
from collections.abc import Iterable, Iterator

from digests.ingest.decode import Limits, lines_in
from digests.ingest.errors import IngestError
from digests.ingest.fields import has_field, normalise_key, record_from_row
from digests.records import PaperRecord

log = logging.getLogger(__name__)

# Records are bounded by `_Metered` below (the csv module's own limit is global state).
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class _Metered:
    """The lines csv reads, counted: a record (which may span lines inside quotes)
    over the limit stops the read before it is held in memory. Blank lines between
    records never reach csv (a run of them is one item of `decode.read_lines`, which csv
    would refuse, and each would be a row to skip): only their count is kept."""

    def __init__(self, lines: Iterable[str], path: str, limits: Limits) -> None:
        self.lines, self.path, self.limits = lines, path, limits
        self.pending = 0
        self.start = 1
        self.number = 0

    def next_record(self) -> None:
        self.pending, self.start = 0, self.number + 1

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            if not self.pending and not line.strip():
                self.number += lines_in(line)
                self.start = self.number + 1
                continue
            self.number += lines_in(line)
            self.pending += len(line)
            if self.pending > self.limits.max_record_chars:
                message = self.limits.too_long("a row", self.pending)
                if line.count('"') % 2 or self.number > self.start:
                    message += " (is a quote left open?)"
                raise IngestError(self.path, self.start, message)
            yield line


def parse_tabular(
    lines: Iterable[str],
    *,
    delimiter: str,
    source: str,
    path: str,
    limits: Limits | None = None,
) -> Iterator[PaperRecord]:
    """Records for each data row, read as the lines come. A row whose field count
    differs from the header's, or a header without an abstract column, is an error
    naming the line."""
    metered = _Metered(lines, path, limits or Limits())
    reader = csv.reader(metered, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise IngestError(path, 1, "is empty: there are no papers in it") from None
    except csv.Error as exc:
        raise IngestError(path, metered.start, f"has a malformed header ({exc})") from None
    header_line = metered.start
    keys = [normalise_key(name) for name in header]
    if not has_field(set(keys), "abstract"):
        shown = ", ".join(name.strip() for name in header[:8] if name.strip()) or "none"
        raise IngestError(path, header_line, f"has no 'abstract' column (columns: {shown})")
    rows = 0
    line = 1
    try:
        metered.next_record()
        for row in reader:
            line = metered.start
            metered.next_record()
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(keys):
                raise IngestError(
                    path, line, f"has {len(row)} fields but the header has {len(keys)}"
                )
            rows += 1
            yield record_from_row(
                dict(zip(keys, row, strict=True)), source=source, path=path, line=line
            )
    except csv.Error as exc:
        raise IngestError(path, metered.number, f"is not valid CSV/TSV ({exc})") from None
    if not rows:
        raise IngestError(path, header_line + 1, "has a header but no rows")
