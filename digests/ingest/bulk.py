"""Ingest at scale: check every file first (a bad one stores nothing), then store the papers
in chunks of batched inserts while a worker process enriches them. A stopped ingest keeps
the chunks it committed; running it again finishes it (docs/explanation/architecture.md)."""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import pickle
import queue as queues
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO, overload

from db import papers, transactions
from db.connection import database_file, open_reader, page_cache
from db.errors import Busy, StorageError
from db.store import Store
from digests.enrich.paper import Row
from digests.identity import fingerprint_hash, legacy_id, own_id
from digests.ingest.decode import CHANGED, CHANGED_PART, Limits, Stat, check_unchanged
from digests.ingest.errors import FileChanged, IngestError
from digests.ingest.ids import FINGERPRINT_ALIAS
from digests.ingest.pipeline import (
    IngestSummary,
    backfill_title_keys,
    prepare,
    read_records,
    store_row,
)
from digests.ingest.progress import plural
from digests.ingest.secrets import refuse_secrets
from digests.ingest.unchanged import is_absorbed
from digests.records import PaperRecord
from digests.text import plain_text
from digests.timestamps import stamp

log = logging.getLogger(__name__)

CHUNK_PAPERS = 2_000  # per write transaction: about half a second of the write lock
BATCH_PAPERS = 250  # per message from the worker
WORKER_MIN_PAPERS = 5_000  # fewer: enrich in this process (a worker takes ~0.3 s to start)
WORKER_POLL_SECONDS = 1.0
# A worker alive but silent this long is stuck (stopped, swapping, hung on a disk): a batch
# takes well under a second, a batch of the largest papers allowed a few seconds.
WORKER_STALL_SECONDS = 300.0
MIN_PAPER_BYTES = 100  # a paper's abstract alone is longer
# SQLite page cache while an ingest writes: the FTS5 index and the id, alias and title key
# B-trees outgrow SQLite's default 2 MB within a few thousand papers.
INGEST_CACHE_KB = 32_768
WORKERS = 1  # enrichment processes: with this one writing, they keep 2 cores busy

# What Markdown and LaTeX rendering (`plain_text`) acts on; text without any of these
# renders as itself, whitespace aside.
MARKUP_CHARS = "\\${}_`[]*"


def has_markup(text: str) -> bool:
    """Whether `text` holds any of MARKUP_CHARS. An `in` test per character (C's memchr)
    is much faster than a search for the character class, and the check pass tests every
    abstract and title."""
    return (
        "\\" in text
        or "$" in text
        or "{" in text
        or "}" in text
        or "_" in text
        or "`" in text
        or "[" in text
        or "]" in text
        or "*" in text
    )


# Called with the papers as they are stored (a sized sequence), so a CLI can show progress.
Progress = Callable[[Sequence[Any]], Iterable[Any]]

# A row as the worker sends it (`encode_row`): ROW_COLUMNS' values, JSON columns encoded.
Encoded = tuple[Any, ...]
# One paper of the second pass: (kind, row, external id, file, line); kind is "row",
# "skipped" (stored already, unchanged) or "empty" (no abstract).
Item = tuple[str, Row | Encoded | None, str | None, str, int]

# `build_row`'s columns, in its order. The worker sends each row as a tuple of their
# values with the JSON columns encoded, ready for `executemany`: this process's path
# (check pass, then writes) is as long as the worker's, so it neither unpickles dicts nor
# encodes their JSON.
ROW_COLUMNS = (
    "id", "fingerprint", "venue", "year", "title", "title_derived", "title_key", "method",
    "names", "name_keys", "tldr", "tldr_source", "abstract", "abstract_text", "url",
    "code_url", "arxiv_url", "openreview_url", "links", "keywords", "authors", "sources",
    "added_at", "updated_at",
)  # fmt: skip
_ID, _FINGERPRINT, _TITLE_KEY = (ROW_COLUMNS.index(c) for c in ("id", "fingerprint", "title_key"))


def encode_row(row: Row) -> Row | Encoded:
    """`row` as a tuple of ROW_COLUMNS' values, its JSON columns encoded as
    `papers.insert_papers` encodes them; `row` itself if its columns are others."""
    if tuple(row) != ROW_COLUMNS:
        return row
    json_columns = papers.JSON_COLUMNS
    return tuple(
        json.dumps(value, ensure_ascii=False) if name in json_columns else value
        for name, value in zip(ROW_COLUMNS, row.values(), strict=True)
    )


def decode_row(row: Row | Encoded) -> Row:
    """The row that `encode_row` encoded (a dict is returned as it is)."""
    if not isinstance(row, tuple):
        return row
    decoded = dict(zip(ROW_COLUMNS, row, strict=True))
    for name in papers.JSON_COLUMNS:
        if name in decoded:
            decoded[name] = json.loads(decoded[name])
    return decoded


def _encoded(batch: list[Item]) -> list[Item]:
    return [
        (kind, row if row is None or isinstance(row, tuple) else encode_row(row), ext, path, line)
        for kind, row, ext, path, line in batch
    ]


def _check_rendered(record: PaperRecord, path: str) -> None:
    """Refuse a secret that markup hides from the line check (`xox`b`-1...`): the rendered
    abstract and title are checked in the first pass, so such a file stores nothing. Only
    text with markup characters is rendered (cheap otherwise). `prepare` checks every
    rendered field again in the second pass."""
    texts = [t for t in (record.abstract, record.title) if t and has_markup(t)]
    if texts:
        refuse_secrets([plain_text(text) for text in texts], path, record.line)


def check_files(
    paths: Sequence[Path],
    fmt: str | None,
    venue: str | None,
    limits: Limits,
    versions: dict[str, str],
    seen: dict[str, Stat] | None = None,
) -> int:
    """The first pass: read and check every file; the number of papers. Raises
    IngestError (nothing is written). `seen`: see `decode.read_lines`."""
    count = 0
    for path in paths:
        for record in read_records(path, fmt, venue, limits, versions, seen):
            _check_rendered(record, str(path))
            count += 1
    return count


# Records looked up together in `_prepare_batch`: few enough that their abstracts' plain
# text, made for the fingerprints, is still in `plain_text`'s small cache when `prepare`
# wants it again (not made twice).
LOOKUP_GROUP = 8


def _prepare_batch(db: Store, records: list[PaperRecord], path: str, now: datetime) -> list[Item]:
    """Each record skipped (stored unchanged), empty or enriched, in order."""
    items: list[Item] = []
    for start in range(0, len(records), LOOKUP_GROUP):
        items.extend(_prepare_group(db, records[start : start + LOOKUP_GROUP], path, now))
    return items


def _prepare_group(db: Store, records: list[PaperRecord], path: str, now: datetime) -> list[Item]:
    """`_prepare_batch` for a few records. `is_absorbed` runs only for a record whose id,
    legacy id or external id is stored (one query for the group): without any of those
    it finds no stored paper, so it could only say no."""
    fingerprints = [fingerprint_hash(r.abstract) if r.abstract.strip() else "" for r in records]
    keys = [[own_id(fp), legacy_id(fp)] if fp else [] for fp in fingerprints]
    externals = [r.external_id for r in records if r.external_id]
    stored = papers.existing_ids(db, [key for pair in keys for key in pair])
    stored |= papers.existing_aliases(db, externals)
    items: list[Item] = []
    for record, fingerprint, pair in zip(records, fingerprints, keys, strict=True):
        hit = any(key in stored for key in pair) or record.external_id in stored
        if fingerprint and hit and is_absorbed(db, record, fingerprint):
            items.append(("skipped", None, None, path, record.line))
            continue
        row = prepare(record, now, path, fingerprint or None)
        kind = "empty" if row is None else "row"
        items.append((kind, row, record.external_id, path, record.line))
    return items


def prepared_items(
    db: Store,
    paths: Sequence[Path],
    fmt: str | None,
    venue: str | None,
    limits: Limits,
    versions: dict[str, str],
    now: datetime,
    share: tuple[int, int] = (0, 1),
) -> Iterator[list[Item]]:
    """The second pass, in batches of BATCH_PAPERS (reads `db` only, to skip papers
    stored unchanged). `share` (k, n): only every n-th batch from the k-th is prepared
    (the other batches are read and checked, and yield nothing): n workers split a file."""
    number, count = share
    index = 0
    for path in paths:
        shown = str(path)
        batch: list[PaperRecord] = []
        for record in read_records(path, fmt, venue, limits, versions):
            batch.append(record)
            if len(batch) >= BATCH_PAPERS:
                if index % count == number:
                    yield _prepare_batch(db, batch, shown, now)
                index += 1
                batch = []
        if batch:
            if index % count == number:
                yield _prepare_batch(db, batch, shown, now)
            index += 1


def _worker(
    out: Any,
    spool_path: str,
    db_path: str,
    paths: list[Path],
    fmt: str | None,
    venue: str | None,
    limits: Limits,
    now: datetime,
    share: tuple[int, int],
) -> None:
    """A worker process: its share of `prepared_items`, each batch pickled into the spool
    file and announced on `out` as ("batch", (offset, length)); then ("end", the files'
    content hashes). An error is sent as ("error", (kind, path, line, message)), anything
    else as ("crash", text)."""
    try:
        db = open_reader(db_path)
        versions: dict[str, str] = {}
        offset = 0
        with open(spool_path, "wb") as spool:
            # Both processes hold the spool open now: its name can go, so that a killed
            # ingest leaves no spool behind (the system frees it with the last handle).
            os.unlink(spool_path)
            parent = multiprocessing.parent_process()
            for batch in prepared_items(db, paths, fmt, venue, limits, versions, now, share):
                if parent is not None and not parent.is_alive():
                    # The ingest was killed (kill -9, out of memory): no one will read
                    # the rest, which would fill the disk for minutes (3.3 GB at 1M).
                    return
                data = pickle.dumps(_encoded(batch), protocol=pickle.HIGHEST_PROTOCOL)
                spool.write(data)
                spool.flush()  # in the page cache before the parent hears of it
                out.put(("batch", (offset, len(data))))
                offset += len(data)
        out.put(("end", versions))
    except IngestError as exc:
        kind = "changed" if isinstance(exc, FileChanged) else "error"
        out.put(("error", (kind, exc.path, exc.line, exc.message)))
    except BaseException as exc:  # sent, not raised: the parent reports it
        out.put(("crash", f"{type(exc).__name__}: {exc}"))


class WorkerFailed(RuntimeError):
    """An enrichment worker process stopped without saying why (killed, out of memory)."""


class IngestInterrupted(IngestError):
    """The ingest stopped for a reason that is not the file's (its worker died or hung):
    the message says what was stored; the same ingest may be run again as it is."""


class Workers:
    """`prepared_items` computed by `count` worker processes ("spawn": no fork of a
    process that may hold threads and connections), each preparing every n-th batch into
    its spool file, read back in file order. They start at once, so they enrich while
    this process checks the files. `stop()` ends them and removes the spools."""

    def __init__(
        self,
        db_path: str,
        paths: Sequence[Path],
        fmt: str | None,
        venue: str | None,
        limits: Limits,
        now: datetime,
        count: int,
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self.queues = [context.Queue() for _ in range(count)]  # small messages only
        self.spools: list[tuple[str, BinaryIO]] = []
        for _ in range(count):
            # Beside the database: it has room for what is about to be stored there, and
            # TMPDIR is often a tmpfs, which is memory.
            handle, name = tempfile.mkstemp(
                prefix=".paperboy-ingest-", suffix=".spool", dir=os.path.dirname(db_path)
            )
            self.spools.append((name, os.fdopen(handle, "rb")))
        self.processes = [
            context.Process(
                target=_worker,
                args=(out, spool, db_path, list(paths), fmt, venue, limits, now, (k, count)),
                daemon=True,
                name=f"paperboy-enrich-{k}",
            )
            for k, (out, (spool, _)) in enumerate(zip(self.queues, self.spools, strict=True))
        ]
        try:
            for process in self.processes:
                process.start()
        except OSError:
            for name, spool in self.spools:  # no worker will remove their names
                spool.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)
            raise

    def _next(self, k: int) -> tuple[str, Any]:
        waited_since = time.monotonic()
        while True:
            try:
                message: tuple[str, Any] = self.queues[k].get(timeout=WORKER_POLL_SECONDS)
                return message
            except queues.Empty:
                if not self.processes[k].is_alive():
                    code = self.processes[k].exitcode
                    raise WorkerFailed(f"an enrichment worker stopped (exit code {code})") from None
                if time.monotonic() - waited_since > WORKER_STALL_SECONDS:
                    # Waiting on for ever would leave the ingest "running" with no end.
                    raise WorkerFailed(
                        f"an enrichment worker sent nothing for {WORKER_STALL_SECONDS:.0f} s"
                    ) from None

    def batches(self, versions: dict[str, str]) -> Iterator[list[Item]]:
        """The batches in order. Raises IngestError as the worker did, FileChanged when a
        file's bytes differ from `versions` (the first pass's), WorkerFailed otherwise."""
        ended = [False] * len(self.queues)
        k = 0
        while not all(ended):
            if ended[k]:
                k = (k + 1) % len(self.queues)
                continue
            kind, payload = self._next(k)
            if kind == "batch":
                offset, length = payload
                spool = self.spools[k][1]
                spool.seek(offset)
                yield pickle.loads(spool.read(length))  # our own worker's file
            elif kind == "end":
                ended[k] = True
                for path, digest in payload.items():
                    if versions.get(path) != digest:
                        raise FileChanged(path, None, CHANGED)
            elif kind == "error":
                error, path, line, message = payload
                raise (FileChanged if error == "changed" else IngestError)(path, line, message)
            else:
                raise WorkerFailed(f"an enrichment worker failed: {payload}")
            k = (k + 1) % len(self.queues)

    def stop(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(timeout=5)
        for out in self.queues:
            out.close()
            out.cancel_join_thread()
        for name, spool in self.spools:
            spool.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)


class Counted(Sequence[Item]):
    """Items with their number known in advance, read once (for a progress bar)."""

    def __init__(self, items: Iterable[Item], count: int) -> None:
        self._items, self._count = items, count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Item]: ...
    def __getitem__(self, index: int | slice) -> Item | Sequence[Item]:
        raise TypeError("the papers of an ingest are read once, in order")


def _claims(row: Row | Encoded, external_ids: Sequence[str]) -> list[str]:
    """Every key by which `find_paper` could find a stored paper for `row`, or by which a
    later row could find this one: ids (its own, its legacy 10-digit one), aliases (its
    external ids, its fingerprint alias, its legacy id as an alias) and its title key."""
    if isinstance(row, tuple):
        paper, fingerprint, title = row[_ID], str(row[_FINGERPRINT]), row[_TITLE_KEY]
    else:
        paper, fingerprint, title = row["id"], str(row["fingerprint"]), row.get("title_key")
    keys = [str(paper), legacy_id(fingerprint), FINGERPRINT_ALIAS + fingerprint]
    keys.extend(external_ids)
    if title:
        keys.append("title:" + str(title))
    return keys


def store_chunk(
    db: Store,
    rows: Sequence[tuple[Row | Encoded, str | None]],
    now: datetime,
    summary: IngestSummary,
) -> None:
    """Store prepared rows (dicts, or tuples from `encode_row`), in order, as `store_row`
    would one by one (call inside a write transaction). A row none of whose keys
    (`_claims`) is stored, or claimed by an earlier row of the chunk, is a new paper under
    its own id: it goes into one `executemany`. Any other row flushes those first, then
    takes `store_row`."""
    if not rows:
        return
    claims = [_claims(row, [external_id] if external_id else []) for row, external_id in rows]
    ids = [key for keys in claims for key in keys[:2]]
    aliases = [key for keys in claims for key in keys if not key.startswith("title:")]
    titles = [key[6:] for keys in claims for key in keys if key.startswith("title:")]
    stored = papers.existing_ids(db, ids) | papers.existing_aliases(db, aliases)
    stored |= {"title:" + key for key in papers.existing_title_keys(db, titles)}
    seen: set[str] = set()
    new: list[Row] = []
    encoded: list[Encoded] = []
    new_aliases: list[tuple[str, str]] = []

    def flush() -> None:
        papers.insert_papers(db, new)
        papers.insert_encoded_papers(db, list(ROW_COLUMNS), encoded)
        papers.add_aliases(db, new_aliases)
        summary.added += len(new) + len(encoded)
        new.clear()
        encoded.clear()
        new_aliases.clear()

    for (row, external_id), keys in zip(rows, claims, strict=True):
        if any(key in stored or key in seen for key in keys):
            flush()
            # Its id may be a probe id (its own was taken): a later row must not take it.
            seen.add(store_row(db, decode_row(row), external_id, now, summary))
            seen.update(keys)
            continue
        if isinstance(row, tuple):
            if new:  # rows are inserted in file order (rowids, as one by one)
                flush()
            encoded.append(row)
        else:
            if encoded:
                flush()
            new.append(row)
        if external_id:
            new_aliases.append((external_id, keys[0]))
        seen.update(keys)
    flush()


@dataclass
class Writer:
    """Stores items a chunk at a time and keeps the `ingests` row up to date."""

    db: Store
    now: datetime
    total: int
    summary: IngestSummary
    ingest_id: int | None = None
    done: int = 0  # papers read whose outcome is committed
    pending: list[Item] = field(default_factory=list)
    # Each file's (size, modification time) when it was read: a chunk commits only while
    # they still are (`decode.check_unchanged`).
    seen: dict[str, Stat] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        self.pending.append(item)
        if len(self.pending) >= CHUNK_PAPERS and self.done + len(self.pending) < self.total:
            self.commit(last=False)

    def commit(self, *, last: bool) -> None:
        """Store the pending items and the progress in one write transaction."""
        chunk = IngestSummary(files=self.summary.files)
        rows: list[tuple[Row | Encoded, str | None]] = []
        for kind, row, external_id, _, _ in self.pending:
            if kind == "skipped":
                chunk.skipped += 1
            elif kind == "empty":
                chunk.without_abstract += 1
            elif row is not None:
                rows.append((row, external_id))
        done = self.done + len(self.pending)
        created = None
        with self._transaction():
            if self.ingest_id is None:
                backfill_title_keys(self.db)
            store_chunk(self.db, rows, self.now, chunk)
            progress = {
                "added": self.summary.added + chunk.added,
                "merged": self.summary.merged + chunk.merged,
                "skipped": self.summary.skipped + chunk.skipped,
                "without_abstract": self.summary.without_abstract + chunk.without_abstract,
                "done": done,
                "status": "complete" if last else "running",
                "finished_at": stamp(self.now) if last else None,
            }
            if self.ingest_id is None:
                created = papers.start_ingest(self.db, self._start() | progress)
            else:
                papers.update_ingest(self.db, self.ingest_id, progress)
            # Last, just before the commit: a file written to meanwhile (a download, an
            # editor) may end in a cut-off paper; this chunk rolls back instead.
            check_unchanged(self.seen)
        # Only now is the row there: a commit that fails (a full disk) rolls it back.
        if created is not None:
            self.ingest_id = created
        self.done = done
        self.pending.clear()
        self.summary.add(chunk)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction that is rolled back whatever fails, its commit too (SQLite
        may leave a transaction open when its commit fails)."""
        outer = transactions.in_transaction(self.db)
        try:
            with self.db.write():
                yield
        except BaseException:
            if not outer and transactions.in_transaction(self.db):
                with contextlib.suppress(StorageError):
                    transactions.rollback(self.db)
            raise

    def _start(self) -> dict[str, Any]:
        return {"started_at": stamp(self.now), "files": self.summary.files, "total": self.total}

    def stopped(self, error: str, *, unrecorded: bool = False) -> None:
        """Record that the ingest stopped part-way (best effort: it is already failing).
        `unrecorded`: an ingest whose first chunk did not commit is recorded too, as
        stopped with nothing stored. When the stop with its error cannot be written (a
        full disk: the longer row may need a page), its status alone is, in place."""
        if self.ingest_id is None and not unrecorded:
            return
        stop = {"status": "stopped", "error": error[:500]}
        try:
            created = None
            with self._transaction():
                if self.ingest_id is not None:
                    papers.update_ingest(self.db, self.ingest_id, stop)
                else:
                    counts = {"added": 0, "merged": 0, "skipped": 0, "done": 0}
                    created = papers.start_ingest(self.db, self._start() | counts | stop)
            self.ingest_id = self.ingest_id or created
            return
        except StorageError as exc:
            failure: Exception = exc
        if self.ingest_id is not None:
            try:
                with self._transaction():
                    # "running" and "stopped" are as long: the row keeps its size.
                    papers.mark_ingest_stopped(self.db, self.ingest_id)
                return
            except StorageError as exc:
                failure = exc
        # A warning, not a traceback: the failure itself is being reported already.
        log.warning("ingest: could not record that ingest %s stopped (%s)", self.ingest_id, failure)


def is_busy(exc: StorageError) -> bool:
    """Whether the database was busy (another writer held it), not full, failing or broken."""
    return isinstance(exc, Busy)


def partial_note(summary: IngestSummary, done: int, total: int) -> str:
    """What a stopped ingest left, for its error message."""
    return (
        f"; stopped there: {done} of {plural(total, 'paper')} before it were stored "
        f"({summary.added} added, {summary.merged} merged, {summary.skipped} skipped); "
        "run the same ingest again to finish (stored papers are skipped)"
    )


def ingest_files(
    db: Store,
    paths: Sequence[Path],
    *,
    now: datetime,
    fmt: str | None = None,
    venue: str | None = None,
    progress: Progress | None = None,
    limits: Limits | None = None,
    seen: dict[str, Stat] | None = None,
) -> IngestSummary:
    """Ingest `paths`, CHUNK_PAPERS papers per write transaction, recording its progress in
    `ingests` ("running" with `done` of `total`, then "complete", or "stopped" with the
    error). Raises IngestError: before writing anything for a bad file; after some chunks
    were stored, with a message saying how many and that running it again finishes the
    ingest (stored papers are skipped).

    A chunk is stored only if every file still has the size and modification time it had
    when it was first read, or, for a file in `seen` (by its path as given), when the
    caller saw it: else FileChanged, and that chunk is not stored (a file still being
    written would end in a cut-off paper)."""
    limits = limits or Limits()
    versions: dict[str, str] = {}  # each file's content hash on the first pass
    db_path = database_file(db)
    workers = None
    if db_path is not None and _papers_at_least(paths, WORKER_MIN_PAPERS):
        try:
            workers = Workers(db_path, paths, fmt, venue, limits, now, WORKERS)
        except OSError as exc:
            # No spool beside the database (a read-only folder, a full disk, a quota) or
            # no process to start: this process enriches, more slowly, as `_or_here` does.
            log.warning("ingest: no enrichment worker (%s); enriching in this process", exc)
    try:
        with page_cache(db, INGEST_CACHE_KB):
            return _ingest(
                db, paths, now, fmt, venue, progress, limits, versions, workers, dict(seen or {})
            )
    finally:
        if workers is not None:
            workers.stop()


def _or_here(
    batches: Iterator[list[Item]], here: Callable[[], Iterator[list[Item]]]
) -> Iterator[list[Item]]:
    """The workers' batches; if the workers fail before sending any (a worker process
    cannot start, e.g. a program read from stdin cannot be spawned), this process enriches
    instead, more slowly, with `here()`. A failure after the first batch is raised."""
    started = False
    try:
        for batch in batches:
            started = True
            yield batch
    except WorkerFailed as exc:
        if started:
            raise
        log.warning("ingest: %s; enriching in this process instead", exc)
        yield from here()


def _papers_at_least(paths: Sequence[Path], count: int) -> bool:
    """Whether the files may hold `count` papers or more: a guess from their sizes (a
    paper takes at least ~100 bytes), so that small files never start workers."""
    size = 0
    for path in paths:
        try:
            size += path.stat().st_size
        except OSError:
            return False  # the first pass says what is wrong with it
    return size >= count * MIN_PAPER_BYTES


def _ingest(
    db: Store,
    paths: Sequence[Path],
    now: datetime,
    fmt: str | None,
    venue: str | None,
    progress: Progress | None,
    limits: Limits,
    versions: dict[str, str],
    workers: Workers | None,
    seen: dict[str, Stat],
) -> IngestSummary:
    total = check_files(paths, fmt, venue, limits, versions, seen)
    summary = IngestSummary(files=[str(path) for path in paths])

    def here() -> Iterator[list[Item]]:
        return prepared_items(db, paths, fmt, venue, limits, versions, now)

    batches = _or_here(workers.batches(versions), here) if workers is not None else here()
    items = Counted(chain.from_iterable(batches), total)
    writer = Writer(db, now, total, summary, seen=seen)
    try:
        for item in progress(items) if progress else items:
            writer.add(item)
        writer.commit(last=True)
    except IngestError as exc:
        if writer.ingest_id is None:
            raise
        writer.stopped(str(exc))
        message = CHANGED_PART if isinstance(exc, FileChanged) else exc.message
        note = partial_note(summary, writer.done, total)
        raise type(exc)(exc.path, exc.line, message + note) from None
    except (WorkerFailed, StorageError) as exc:
        # One line for the user that says what was stored (a full disk, a busy or broken
        # database, a worker killed for memory), of the same kind for sqlite errors, so
        # that callers treat them as any sqlite error (the inbox retries those files).
        # Even with nothing stored, the status then says it stopped (a full disk), unless
        # the database was only busy: the same wait again would be for nothing.
        busy = isinstance(exc, StorageError) and is_busy(exc)
        writer.stopped(f"{type(exc).__name__}: {exc}", unrecorded=not busy)
        note = partial_note(summary, writer.done, total)
        if isinstance(exc, WorkerFailed):
            raise IngestInterrupted(", ".join(summary.files), None, f"{exc}{note}") from None
        raise type(exc)(f"{exc}{note}") from None
    except BaseException as exc:
        writer.stopped(f"{type(exc).__name__}: {exc}")
        raise
    log.info("ingest: %s", summary.describe())
    return summary
