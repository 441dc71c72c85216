"""What the status commands say about an ingest that did not complete.

Kept apart from `bulk` so that the status commands import nothing heavy.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


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
