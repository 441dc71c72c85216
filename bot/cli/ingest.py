"""`paperboy ingest`: files into the store, with a progress bar on a terminal and one line
on Ctrl-C saying what was stored."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bot.cli.options import database_path, db_option, now, open_database
from bot.cli.output import INTERRUPTED, echo
from config.settings import load_settings
from db.connection import Target
from db.errors import StorageError

if TYPE_CHECKING:
    from db.store import Store
    from digests.records import PaperRecord

log = logging.getLogger(__name__)

# digests.ingest.detect.FORMATS, spelled out so that the option's choices need not import
# the ingest pipeline at start-up; tests/bot/cli/test_startup.py checks the two agree.
INGEST_FORMATS = ("seed", "csv", "tsv", "jsonl", "arxiv")
PROGRESS_MIN_RECORDS = 200
INTERRUPTED_INDEXING = (
    "interrupted while updating the search index: every paper above is stored; "
    "the next lookup finishes the index"
)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(INGEST_FORMATS),
    default=None,
    help="Skip format detection.",
)
@click.option("--venue", default=None, help='Venue and year for files without them: "ICLR 2021".')
@db_option
def ingest(
    paths: tuple[Path, ...], fmt: str | None, venue: str | None, db_path: Target | None
) -> None:
    """Add the papers in PATHS (seed text, CSV/TSV, JSON Lines, arXiv Atom) to the store.

    Every file is checked before anything is stored: if any is malformed, nothing is.
    Large ingests store in chunks; one that stops part-way says so, and running it
    again finishes it.
    """
    from db.fresh import NewDatabase
    from digests.ingest import ingest_files
    from digests.ingest.decode import Limits

    limits = Limits.from_kb(load_settings().max_record_kb)
    new = NewDatabase(database_path(db_path))
    db = open_database(db_path, create=True)
    before = last_ingest_id(db)
    try:
        summary = ingest_files(
            db, list(paths), now=now(), fmt=fmt, venue=venue, progress=progress, limits=limits
        )
    except KeyboardInterrupt:
        # One line, not click's bare "Aborted!": what was stored and how to finish. A
        # second Ctrl-C meanwhile (users press it twice) would cut this short.
        with ctrl_c_ignored():
            note = interrupted_note(db, before)
            new.discard(db)  # a new database that got no chunk is removed
            echo(note, err=True)
        sys.exit(INTERRUPTED)
    except BaseException:
        new.discard(db)  # a refused file leaves no empty database behind
        raise
    from db import text_index

    try:
        text_index.catch_up(db)  # the next lookup does not pay this ingest's indexing
    except KeyboardInterrupt:
        echo(f"{summary.describe()}\n{INTERRUPTED_INDEXING}", err=True)
        sys.exit(INTERRUPTED)
    echo(summary.describe())


def progress(records: Sequence[PaperRecord]) -> Iterable[PaperRecord]:
    """A progress bar on a terminal, for big files; silence otherwise."""
    if not sys.stderr.isatty() or len(records) < PROGRESS_MIN_RECORDS:
        return records

    def bar() -> Iterator[PaperRecord]:
        with click.progressbar(records, label="Ingesting", file=sys.stderr) as items:
            yield from items

    return bar()


@contextlib.contextmanager
def ctrl_c_ignored() -> Iterator[None]:
    """Ctrl-C does nothing inside (in the main thread; elsewhere signals go there)."""
    import signal

    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def last_ingest_id(db: Store) -> int:
    """The id of the last row of `ingests` (0 for none), to tell this run's row apart."""
    from db.papers import last_ingest_id as last_id

    try:
        return last_id(db)
    except StorageError:  # a database without the table yet: the ingest creates it
        return 0


def interrupted_note(db: Store, before: int) -> str:
    """One line for an ingest stopped by Ctrl-C: what its committed chunks stored (the
    `ingests` row it recorded as "stopped"), that the files were not finished, and that
    running the same command again finishes them. A run that committed nothing stored
    nothing: a file of one chunk is one transaction."""
    again = "run the same command again to finish (stored papers are skipped)"
    from db.papers import ingests_after

    try:
        rows = ingests_after(db, before)
    except StorageError:
        rows = []
    if not rows:
        return f"interrupted: nothing was stored; {again}"
    row = rows[0]
    from digests.ingest.progress import plural

    files = ", ".join(Path(str(name)).name for name in json.loads(row["files"]))
    stored = (
        f"{row['done'] or 0} of {plural(int(row['total'] or 0), 'paper')} "
        f"({row['added'] or 0} added, {row['merged'] or 0} merged, "
        f"{row['skipped'] or 0} skipped)"
    )
    if row["status"] == "complete":
        return f"interrupted after the ingest completed: {files}: {stored} stored"
    return f"interrupted: {files} not finished: {stored} stored; {again}"
