"""What the status commands say about how papers came: the last ingest, what the sources
fetched, and an ingest that did not complete.

Kept apart from `bulk` so that the status commands import nothing heavy.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from db.errors import StorageError
from db.sources import list_sources
from db.store import Store

log = logging.getLogger(__name__)


def _minute(value: Any) -> str:
    return str(value)[:16].replace("T", " ")


def arrivals(db: Store, ingest: dict[str, Any] | None) -> str:
    """Where the stored papers came from, for the status commands: "last ingest
    2026-11-30 09:00 UTC, 38 added; 20 papers fetched from 1 source, last fetch
    2026-12-01 05:02 UTC" (no final stop), or "...; 1 source, not fetched yet". `ingest` is
    `papers.last_ingest`'s row. The fetched papers are those that the sources configured
    now added, in all their fetches; the last fetch is the latest to end, failed or not."""
    line = (
        f"last ingest {_minute(ingest['started_at'])} UTC, {ingest.get('added') or 0} added"
        if ingest
        else "no file ingested yet"
    )
    try:
        sources = list_sources(db)
    except StorageError:  # a database from before the table existed
        return line
    if not sources:
        return line
    attempts = [
        str(row[column])
        for row in sources
        for column in ("last_success_at", "last_error_at")
        if row.get(column)
    ]
    if not attempts:
        return line + f"; {plural(len(sources), 'source')}, not fetched yet"
    fetched = sum(int(row.get("papers_added") or 0) for row in sources)
    return (
        line + f"; {plural(fetched, 'paper')} fetched from {plural(len(sources), 'source')}, "
        f"last fetch {_minute(max(attempts))} UTC"
    )


def unfinished_note(row: dict[str, Any] | None) -> str | None:
    """For the status commands: a sentence about an ingest that did not complete, else
    None. `row` is `papers.last_ingest`'s: its "unfinished" ingest is reported, even after
    other files were ingested. "running" is also what a killed process leaves."""
    if row is None:
        return None
    last = row
    row = row.get("unfinished", row)  # a row without the key: the last ingest itself
    if row is None or row.get("status") in (None, "complete"):
        return None
    which = "The last ingest" if row.get("id") == last.get("id") else "An earlier ingest"
    when = str(row["started_at"])[:16].replace("T", " ")
    files = ", ".join(Path(str(name)).name for name in row["files"])
    stored = (
        f"{row.get('done') or 0} of {plural(int(row.get('total') or 0), 'paper')} done "
        f"({row.get('added') or 0} added, {row.get('merged') or 0} merged, "
        f"{row.get('skipped') or 0} skipped)"
    )
    again = "run the same ingest again to finish (stored papers are skipped)"
    if row["status"] == "stopped":
        return f"{which} ({files}, {when} UTC) stopped part-way: {stored}; {again}."
    return (
        f"{which} ({files}, {when} UTC) has not finished: {stored} so far. "
        f"If it is no longer running, {again}."
    )


def plural(count: int, noun: str) -> str:
    """ "1 paper", "2 papers", "0 papers"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
