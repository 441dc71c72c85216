"""The `paperboy` command line.

Every command takes `--db PATH`; otherwise `PAPERBOY_DB`; otherwise `db/paperboy.db`.
Errors are one line on stderr, never a stack trace: exit status 2 for bad input
(a malformed file, a bad setting), 1 for anything else.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from sqlite_utils import Database

from config.settings import SettingsError, load_settings
from db import open_db
from digests import lookup
from digests.ingest import IngestError, ingest_files
from digests.ingest.detect import FORMATS
from digests.records import PaperRecord
from digests.samples import sample_paths

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
PROGRESS_MIN_RECORDS = 200


class UserError(click.ClickException):
    """A problem the user can fix; shown as one line, exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class PaperboyGroup(click.Group):
    """Turns every failure into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (IngestError, SettingsError) as exc:
            raise UserError(str(exc)) from None
        except sqlite3.Error as exc:
            log.debug("database error", exc_info=True)
            raise UserError(f"database problem: {exc}") from None
        except Exception as exc:  # the last line of defence: no stack trace for users
            log.debug("unexpected failure", exc_info=True)
            click.echo(
                f"error: unexpected failure ({type(exc).__name__}: {exc}). "
                "Run with --log-level debug for details.",
                err=True,
            )
            ctx.exit(1)


def db_option(func: F) -> F:
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="SQLite database file [default: $PAPERBOY_DB, else db/paperboy.db].",
    )(func)


def open_database(db_path: Path | None) -> Database:
    path = db_path or load_settings().db_path
    try:
        return open_db(path)
    except sqlite3.Error as exc:
        raise UserError(f"cannot open database {path}: {exc}") from None


def _progress(records: Sequence[PaperRecord]) -> Iterable[PaperRecord]:
    """A progress bar on a terminal, for big files; silence otherwise."""
    if not sys.stderr.isatty() or len(records) < PROGRESS_MIN_RECORDS:
        return records

    def bar() -> Iterator[PaperRecord]:
        with click.progressbar(records, label="Ingesting", file=sys.stderr) as items:
            yield from items

    return bar()


def _now() -> datetime:
    return datetime.now(UTC)


@click.group(cls=PaperboyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="warning",
    show_default=True,
    help="How much to log on stderr.",
)
def main(log_level: str) -> None:
    """Paperboy: weekly research-paper digests and paper lookups for Slack and Discord."""
    logging.basicConfig(
        level=log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default=None, help="Skip format detection."
)
@click.option("--venue", default=None, help='Venue and year for files without them: "ICLR 2021".')
@db_option
def ingest(
    paths: tuple[Path, ...], fmt: str | None, venue: str | None, db_path: Path | None
) -> None:
    """Add the papers in PATHS (seed text, CSV/TSV, JSON Lines, arXiv Atom) to the store.

    All files load in one transaction: if any file is malformed, nothing is stored.
    """
    db = open_database(db_path)
    summary = ingest_files(db, list(paths), now=_now(), fmt=fmt, venue=venue, progress=_progress)
    click.echo(summary.describe())


@main.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@db_option
def find(query: tuple[str, ...], limit: int, as_json: bool, db_path: Path | None) -> None:
    """Look papers up by words, method names or acronyms, best match first."""
    text = " ".join(query)
    results = lookup.find(open_database(db_path), text, limit)
    if as_json:
        click.echo(json.dumps(results, ensure_ascii=False, indent=2))
    else:
        click.echo(lookup.format_results(results, text))


@main.command()
@click.argument("paper_id")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@db_option
def show(paper_id: str, as_json: bool, db_path: Path | None) -> None:
    """Show one paper in full, by id, id prefix, or OpenReview/arXiv id."""
    result = lookup.show(open_database(db_path), paper_id)
    if result is None:
        click.echo(f"error: no paper with id {paper_id!r}; try `paperboy find WORDS`.", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        click.echo(lookup.format_paper(result))


DEMO_QUERIES = ("offline reinforcement learning", "AlphaDPO")


@main.command()
@db_option
def demo(db_path: Path | None) -> None:
    """Load the bundled ICML/ICLR 2025 papers and show some lookups."""
    db = open_database(db_path)
    summary = ingest_files(db, sample_paths(), now=_now())
    click.echo(f"Bundled sample papers: {summary.describe()}.\n")
    for query in DEMO_QUERIES:
        click.secho(f"$ paperboy find {query!r} --limit 3", bold=True)
        click.echo(lookup.format_results(lookup.find(db, query, 3), query))
        click.echo()
    click.echo("Try your own: paperboy find WORDS, paperboy show ID.")
