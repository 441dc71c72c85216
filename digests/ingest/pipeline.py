"""One ingest run: read and enrich every file, then store every paper in one transaction.

Files are parsed and enriched completely before anything is written, and the writes
share a single short transaction, so a bad file (or any failure) leaves the database
unchanged and other writers never wait for enrichment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlite_utils import Database

from db import papers
from db.transactions import write_transaction
from digests.enrich.paper import Row, build_row, merge_rows
from digests.ingest.arxiv import parse_arxiv
from digests.ingest.decode import read_text
from digests.ingest.detect import FORMATS, detect_format
from digests.ingest.errors import IngestError
from digests.ingest.jsonl import parse_json
from digests.ingest.seeds import parse_seed
from digests.ingest.tabular import parse_tabular
from digests.ingest.venue import parse_venue, venue_from_filename
from digests.records import PaperRecord
from digests.timestamps import stamp

log = logging.getLogger(__name__)

# Called with each record as it is stored, so a CLI can show progress.
Progress = Callable[[Sequence[PaperRecord]], Iterable[PaperRecord]]


@dataclass
class IngestSummary:
    files: list[str] = field(default_factory=list)
    added: int = 0
    merged: int = 0
    skipped: int = 0
    without_abstract: int = 0

    @property
    def total(self) -> int:
        return self.added + self.merged + self.skipped + self.without_abstract

    def describe(self) -> str:
        """One line for the user, e.g. "38 papers read: 38 added, 0 merged, 0 skipped"."""
        line = (
            f"{self.total} papers read from {len(self.files)} file"
            f"{'' if len(self.files) == 1 else 's'}: {self.added} added, "
            f"{self.merged} merged, {self.skipped} skipped (already stored)"
        )
        if self.without_abstract:
            line += f", {self.without_abstract} without an abstract ignored"
        if self.total and not self.added and not self.merged:
            line += ". Nothing new"
        return line


def read_file(path: Path, fmt: str | None = None, venue: str | None = None) -> list[PaperRecord]:
    """Parse one file into records. `fmt` overrides detection; `venue` ("ICLR 2021")
    fills in venue and year where the file has none. Raises IngestError."""
    text = read_text(path)
    kind = fmt or detect_format(path, text)
    if kind not in FORMATS:
        raise IngestError(str(path), None, f"unknown format {kind!r}; use one of {FORMATS}")
    shown, source = str(path), path.name
    if kind == "seed":
        records = parse_seed(text, source=source, path=shown)
    elif kind in ("csv", "tsv"):
        delimiter = "\t" if kind == "tsv" else ","
        records = parse_tabular(text, delimiter=delimiter, source=source, path=shown)
    elif kind == "jsonl":
        records = parse_json(text, source=source, path=shown)
    else:
        records = parse_arxiv(text, source=source, path=shown)
    fallback = parse_venue(venue) if venue else venue_from_filename(path.name)
    if fallback:
        for record in records:
            if record.venue is None:
                record.venue = fallback[0]
            if record.year is None:
                record.year = fallback[1]
    log.debug("%s: %d records as %s", shown, len(records), kind)
    return records


def prepare(record: PaperRecord, now: datetime) -> Row | None:
    """The enriched row for a record (parsing, cleanup, derived title and TL;DR),
    or None when it has no abstract. Pure: touches no database, so it runs before
    the write transaction opens."""
    if not record.abstract.strip():
        return None
    return build_row(record, now)


def store_row(
    db: Database, row: Row, external_id: str | None, now: datetime, summary: IngestSummary
) -> None:
    """Add a prepared row's paper, or merge it into the paper already stored."""
    target = papers.paper_id_for_alias(db, external_id) if external_id else None
    existing = papers.get_paper(db, target or row["id"])
    if existing is None:
        papers.insert_paper(db, row)
        summary.added += 1
    else:
        changes = merge_rows(existing, row, now)
        if changes:
            papers.update_paper(db, existing["id"], changes)
            summary.merged += 1
        else:
            summary.skipped += 1
    if external_id:
        papers.add_alias(db, external_id, existing["id"] if existing else row["id"])


def ingest_files(
    db: Database,
    paths: Sequence[Path],
    *,
    now: datetime,
    fmt: str | None = None,
    venue: str | None = None,
    progress: Progress | None = None,
) -> IngestSummary:
    """Ingest `paths` in one transaction. Raises IngestError before writing anything.

    Reading, parsing and enrichment (the slow part) all happen before the write
    transaction opens; the write lock is held only for the lookups and inserts, so
    other writers (commands, digests, another ingest) wait for milliseconds, not for
    the enrichment of a large or hostile file.
    """
    records: list[PaperRecord] = []
    for path in paths:
        records.extend(read_file(path, fmt, venue))
    summary = IngestSummary(files=[str(path) for path in paths])
    prepared: list[tuple[Row, str | None]] = []
    for record in progress(records) if progress else records:
        row = prepare(record, now)
        if row is None:
            summary.without_abstract += 1
        else:
            prepared.append((row, record.external_id))
    del records
    with write_transaction(db):
        for row, external_id in prepared:
            store_row(db, row, external_id, now, summary)
        papers.record_ingest(
            db,
            {
                "started_at": stamp(now),
                "files": summary.files,
                "added": summary.added,
                "merged": summary.merged,
                "skipped": summary.skipped,
            },
        )
    log.info("ingest: %s", summary.describe())
    return summary
