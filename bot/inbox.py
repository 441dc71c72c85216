"""The inbox: new paper lists dropped in `PAPERBOY_INBOX` are ingested before digests.

Each file is ingested on its own (one transaction each), once per version (path,
size and modification time). A bad file is reported and skipped; the others load.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlite_utils import Database

from digests.ingest import IngestError, ingest_files
from digests.timestamps import stamp

log = logging.getLogger(__name__)


@dataclass
class InboxResult:
    loaded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "file: reason"
    added: int = 0


def ingest_inbox(db: Database, folder: Path | None, now: datetime) -> InboxResult:
    result = InboxResult()
    if folder is None or not folder.is_dir():
        return result
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        stat = path.stat()
        rows = list(db.query("select size, mtime_ns from inbox_files where path = ?", [str(path)]))
        if rows and rows[0]["size"] == stat.st_size and rows[0]["mtime_ns"] == stat.st_mtime_ns:
            continue
        try:
            summary = ingest_files(db, [path], now=now)
            status, detail = "loaded", summary.describe()
            result.loaded.append(path.name)
            result.added += summary.added
            log.info("inbox: %s: %s", path.name, detail)
        except IngestError as exc:
            status, detail = "error", exc.message
            result.failed.append(f"{path.name}: {exc.message}")
            log.warning("inbox: skipped %s", exc)
        db.table("inbox_files").upsert(
            {
                "path": str(path),
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "status": status,
                "detail": detail,
                "seen_at": stamp(now),
            },
            pk="path",
        )
    return result
