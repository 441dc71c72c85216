"""Reading records from files, enriching them into rows, and storing one row.

`read_records` parses and checks one file; `prepare` enriches a record (pure: no
database); `store_row` adds or merges one row. `digests.ingest.bulk.ingest_files` runs an
ingest with them: a check pass, then enrichment and chunked, batched writes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from itertools import chain
from pathlib import Path

from db import papers
from db.store import Store
from digests.enrich.paper import Row, abstract_set_aside, brings_news, build_row, merge_rows
from digests.identity import fingerprint_hash, same_authors_enough, surnames, title_key
from digests.ingest.arxiv import parse_arxiv
from digests.ingest.decode import Limits, Stat, blank_lines, read_lines, skip_blank
from digests.ingest.detect import FORMATS, detect_format, whole_document
from digests.ingest.errors import IngestError
from digests.ingest.ids import FINGERPRINT_ALIAS, find_by_fingerprint, new_id, same_fingerprint
from digests.ingest.jsonl import parse_json
from digests.ingest.progress import plural
from digests.ingest.secrets import refuse_secrets
from digests.ingest.seeds import parse_seed
from digests.ingest.tabular import parse_tabular
from digests.ingest.venue import parse_venue, split_venue_year, venue_from_filename
from digests.records import PaperRecord
from digests.safe_text import strip_unsafe

log = logging.getLogger(__name__)

# Alias prefixes of Paperboy's own keys (`ids.FINGERPRINT_ALIAS`, `fetched.content_key`),
# refused as a file's own id.
RESERVED_ID_PREFIXES = (FINGERPRINT_ALIAS, "seen:")


def counts_text(added: int, merged: int, skipped: int) -> str:
    """The counts of an ingest or a fetch, as both say them."""
    return f"{added} added, {merged} merged, {skipped} skipped (already stored)"


def other_abstracts_text(count: int) -> str:
    """What both say of the records whose abstract was not stored ("" for none)."""
    return f"; {count} with a different abstract (the stored one kept)" if count else ""


@dataclass
class IngestSummary:
    """What an ingest (or a fetched page) did with its records; each record counts once.
    `added`: new papers. `merged`: records that gave a stored paper something a reader
    sees or searches (`enrich.paper.brings_news`). `skipped`: records already stored with
    nothing new, of which `restamped` had only bookkeeping written (another source's
    name, dates). `without_abstract`: records ignored. `other_abstracts`, of the merged
    and skipped: records whose abstract differed from the stored paper's and was not
    stored (`enrich.paper.abstract_set_aside`)."""

    files: list[str] = field(default_factory=list)
    added: int = 0
    merged: int = 0
    skipped: int = 0
    without_abstract: int = 0
    restamped: int = 0
    other_abstracts: int = 0

    def add(self, other: IngestSummary) -> None:
        """Add `other`'s counts (a chunk's) to these; `files` stays."""
        for name in (f.name for f in fields(self) if f.name != "files"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def total(self) -> int:
        return self.added + self.merged + self.skipped + self.without_abstract

    def describe(self) -> str:
        """One line for the user, whose counts add up to the papers read, e.g. "38 papers
        read from 2 files: 30 added, 2 merged, 6 skipped (already stored)"; "1 paper read
        from 1 file: ..." for one; "; 1 with a different abstract (the stored one kept)"
        when some brought an abstract not stored; ". Nothing new" when none was added or
        merged and none brought another abstract."""
        line = (
            f"{plural(self.total, 'paper')} read from {plural(len(self.files), 'file')}: "
            + counts_text(self.added, self.merged, self.skipped)
        )
        if self.without_abstract:
            line += f", {self.without_abstract} without an abstract ignored"
        if self.other_abstracts:
            line += other_abstracts_text(self.other_abstracts)
        elif self.total and not self.added and not self.merged:
            line += ". Nothing new"
        return line


def read_records(
    path: Path,
    fmt: str | None = None,
    venue: str | None = None,
    limits: Limits | None = None,
    versions: dict[str, str] | None = None,
    seen: dict[str, Stat] | None = None,
) -> Iterator[PaperRecord]:
    """Parse one file into records, one at a time (memory stays bounded whatever the
    file's size). `fmt` overrides detection; `venue` ("ICLR 2021") fills in venue and
    year where the file has none. Raises IngestError, naming the file and line.
    `versions`, `seen`: see `decode.read_lines` (a file that changed between two reads,
    or since the caller saw it)."""
    limits = limits or Limits()
    if fmt is not None and fmt not in FORMATS:
        raise IngestError(str(path), None, f"unknown format {fmt!r}; use one of {FORMATS}")

    def document(first: str) -> str | None:
        return whole_document(fmt or detect_format(path, first), first)

    lines = read_lines(path, limits, versions, document=document, seen=seen)
    # The first line that says something decides the format; the blank lines before it
    # are counted, not held, and handed on as a few runs (the parsers count lines).
    blank, first, rest = skip_blank(lines)
    kind = fmt or detect_format(path, first or "")
    stream = chain(blank_lines(blank), [first] if first is not None else [], rest)
    shown, source = str(path), path.name
    records: Iterable[PaperRecord]
    if kind == "seed":
        records = parse_seed(stream, source=source, path=shown, limits=limits)
    elif kind in ("csv", "tsv"):
        delimiter = "\t" if kind == "tsv" else ","
        records = parse_tabular(
            stream, delimiter=delimiter, source=source, path=shown, limits=limits
        )
    elif kind == "jsonl":
        records = parse_json(stream, source=source, path=shown, limits=limits)
    else:
        records = parse_arxiv(stream, source=source, path=shown, limits=limits)
    fallback = parse_venue(venue) if venue else venue_from_filename(path.name)
    for record in records:
        _clean(record, shown)
        if len(record.abstract) > limits.max_record_chars:
            raise IngestError(
                shown, record.line, limits.too_long("its abstract", len(record.abstract))
            )
        size = _size(record)  # a JSON array or Atom feed holds its papers whole
        if size > limits.max_record_chars:
            raise IngestError(shown, record.line, limits.too_long("a paper", size))
        record.venue, record.year = split_venue_year(record.venue, record.year)
        if fallback:
            if record.venue is None:
                record.venue = fallback[0]
            if record.year is None:
                record.year = fallback[1]
        yield record
    for _ in lines:  # to the end, so the whole file is checked (secrets, versions)
        pass


def _size(record: PaperRecord) -> int:
    """All of a record's text, in characters."""
    texts = (record.abstract, record.title, record.venue, record.url, record.external_id)
    return sum(len(text) for text in (*texts, *record.authors, *record.keywords) if text)


def _clean(record: PaperRecord, path: str) -> None:
    """Strip control, bidi and invisible characters from every field, so stored text is
    clean; then look for secrets again (an invisible character inside a token hid it
    from the line check)."""
    record.abstract = strip_unsafe(record.abstract)
    for name in ("title", "venue", "url", "external_id"):
        value = getattr(record, name)
        if value is not None:
            setattr(record, name, strip_unsafe(value).strip() or None)
    record.authors = [text for text in (strip_unsafe(a).strip() for a in record.authors) if text]
    record.keywords = [text for text in (strip_unsafe(k).strip() for k in record.keywords) if text]
    fields = (record.abstract, record.title, record.venue, record.url, record.external_id)
    refuse_secrets((*fields, *record.authors, *record.keywords), path, record.line)
    if record.external_id and record.external_id.startswith(RESERVED_ID_PREFIXES):
        # A file's id becomes an alias, and aliases share one namespace with Paperboy's
        # own keys: "fp:<another abstract's hash>" would merge every later copy of that
        # abstract into this paper without a word.
        raise IngestError(
            path,
            record.line,
            f"id {record.external_id[:40]!r} starts with {RESERVED_ID_PREFIXES[0]!r} or "
            f"{RESERVED_ID_PREFIXES[1]!r}, which Paperboy keeps for its own keys; "
            "rename or remove it",
        )


def read_file(
    path: Path, fmt: str | None = None, venue: str | None = None, limits: Limits | None = None
) -> list[PaperRecord]:
    """All of one file's records (see `read_records`), for small files and tests."""
    return list(read_records(path, fmt, venue, limits))


def prepare(
    record: PaperRecord, now: datetime, path: str | None = None, fingerprint: str | None = None
) -> Row | None:
    """The enriched row for a record (parsing, cleanup, derived title and TL;DR),
    or None when it has no abstract. Pure: touches no database, so it runs before
    the write transaction opens. `fingerprint`: the abstract's `fingerprint_hash`, if
    the caller has it already.

    Raises IngestError (naming `path`, else the record's source) when the rendered
    text holds a secret that markup hid from the line check: `xox`b`-1...` or
    `[xoxb](u)-1...` render as a whole token."""
    if not record.abstract.strip():
        return None
    row = build_row(record, now, fingerprint)
    texts = (row["title"], row["tldr"], row["method"], row["names"], row["abstract_text"])
    links = (value for link in row["links"] for value in (link["url"], link["text"]))
    refuse_secrets(chain(texts, links), path or record.source, record.line)
    return row


ARXIV_ALIAS = "arXiv:"
# Ids that name one paper wherever they come from (sources give these). A file's own `id`
# column has no prefix and is often a row number ("1", "2", ...), the same in every file.
SOURCE_ID_PREFIXES = (ARXIV_ALIAS, "openreview:", "doi:")


def _corroborated(found: Row, row: Row) -> bool:
    """Whether a paper that a file's own id names agrees with `row` on something else:
    the abstract's fingerprint, the real title's key, or an author surname."""
    fingerprint = row.get("fingerprint") or fingerprint_hash(row["abstract"])
    if found.get("fingerprint") == fingerprint:
        return True
    if fingerprint_hash(str(found.get("abstract") or "")) == fingerprint:
        return True
    if row.get("title_key") and row["title_key"] == found.get("title_key"):
        return True
    return bool(surnames(row["authors"]) & surnames(list(found.get("authors") or [])))


def find_paper(db: Store, row: Row, external_ids: Sequence[str]) -> Row | None:
    """The stored paper that `row` is, if any: by external id first (arXiv id, OpenReview
    id, DOI; a file's own id only when the abstract, real title or an author agrees too,
    since files number their rows alike), then by its normalised real title and one
    shared author surname, then by its abstract's fingerprint (`ids.find_by_fingerprint`:
    its id, checked by the fingerprint so that two papers sharing an id never merge, or
    an abstract merged into another paper).
    The title match is conservative: never for short or generic titles (see
    `identity.title_key`), two shared surnames for a 3-word title, and never between
    papers with different arXiv ids."""
    refused: tuple[str, str] | None = None  # a file id naming a paper that differs
    for external_id in external_ids:
        target = papers.paper_id_for_alias(db, external_id)
        if target:
            found = papers.get_paper(db, target)
            if found and (external_id.startswith(SOURCE_ID_PREFIXES) or _corroborated(found, row)):
                return found
            if found:
                refused = refused or (external_id, target)
    if row.get("title_key"):
        names = surnames(row["authors"])
        ours = {i for i in external_ids if i.startswith(ARXIV_ALIAS)}
        for candidate in papers.papers_with_title_key(db, row["title_key"]):
            if not same_authors_enough(row["title_key"], names, surnames(candidate["authors"])):
                continue
            # Two different arXiv ids are two papers, whatever their titles say (a
            # follow-up reusing its predecessor's title, by the same group).
            theirs = set(papers.aliases_of(db, candidate["id"], ARXIV_ALIAS))
            if ours and theirs and not ours & theirs:
                continue
            return papers.get_paper(db, candidate["id"])
    fingerprint = row.get("fingerprint") or fingerprint_hash(row["abstract"])
    found = find_by_fingerprint(db, fingerprint, row["authors"])
    ours = {i for i in external_ids if i.startswith(ARXIV_ALIAS)}
    if found is not None and ours:
        # The same words under two arXiv ids are two papers ("This paper has been
        # withdrawn.", a feed's title-only entries), as for titles: stored apart.
        theirs = set(papers.aliases_of(db, found["id"], ARXIV_ALIAS))
        if theirs and not ours & theirs:
            log.warning(
                "paper %s (%s) has the same abstract as %s: not merged, stored as another paper",
                found["id"],
                min(theirs),
                min(ours),
            )
            return None
    if found is None and refused:
        log.warning(
            "id %r names paper %s, whose abstract, title and authors all differ: "
            "not merged, stored as another paper",
            *refused,
        )
    return found


def store_row(
    db: Store,
    row: Row,
    external_id: str | Sequence[str] | None,
    now: datetime,
    summary: IngestSummary,
) -> str:
    """Add a prepared row's paper, or merge it into the paper already stored (see
    `find_paper`). A new paper is stored with its fingerprint, under its own id or, if a
    different paper holds that one, the next free id of its probe sequence (`ids.new_id`).
    Every external id becomes an alias of the paper, and so does the row's fingerprint
    (`fp:HASH`) when it merged into another paper (its abstract differed): a later
    title-less list with that abstract then finds the paper. Returns the paper's id."""
    ids = [external_id] if isinstance(external_id, str) else list(external_id or [])
    fingerprint = row.get("fingerprint") or fingerprint_hash(row["abstract"])
    row = {**row, "fingerprint": fingerprint}
    existing = find_paper(db, row, ids)
    if existing is None:
        paper = new_id(db, fingerprint, str((row.get("sources") or ["ingest"])[0]))
        papers.insert_paper(db, row | {"id": paper})
        summary.added += 1
    else:
        paper = str(existing["id"])
        changes = merge_rows(existing, row, now)
        if changes:
            papers.update_paper(db, paper, changes)
        if brings_news(changes):
            summary.merged += 1
        else:  # the same paper again, maybe from one more source: nothing new to read
            summary.skipped += 1
            summary.restamped += 1 if changes else 0
        if abstract_set_aside(existing, row, changes):
            summary.other_abstracts += 1
            source = (row.get("sources") or ["?"])[0]
            log.debug("paper %s: %s's different abstract not stored", paper, source)
        if not same_fingerprint(existing, fingerprint):
            papers.add_alias(db, FINGERPRINT_ALIAS + fingerprint, paper)
    for alias in ids:
        papers.add_alias(db, alias, paper)
    return paper


def backfill_title_keys(db: Store) -> int:
    """Key the real titles of papers stored before titles were keyed (a write: call it
    inside the write transaction). Cheap when there are none (an indexed lookup)."""
    rows = papers.papers_without_title_key(db)
    for row in rows:
        key = None if row["title_derived"] else title_key(row["title"])
        papers.set_title_key(db, row["id"], key or "")
    return len(rows)
