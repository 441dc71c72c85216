"""The inbox: new paper lists dropped in `PAPERBOY_INBOX` are ingested before digests.

Each file is ingested on its own (one transaction each), once per version (path,
size and modification time). A bad file is reported and skipped; the others load.

Safe to call from several threads or processes at once: a file's version is first
claimed in a short transaction (`inbox_files.status = 'ingesting'`), so only one
caller ingests it; the others skip it. A claim whose process died, or that is older
than `CLAIM_MINUTES`, is taken over. A busy database ("database is locked") makes
that file fail for this run only: it is not recorded, so the next run tries again.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from stat import S_ISDIR

from sqlite_utils import Database

from bot.delivery import SENDER, sender_alive
from db.transactions import write_transaction
from digests.ingest import IngestError, ingest_files
from digests.ingest.decode import Limits
from digests.ingest.errors import FileChanged
from digests.timestamps import stamp

log = logging.getLogger(__name__)

CLAIM_MINUTES = 30  # far longer than any inbox file takes to ingest
# Files still being downloaded or saved: browsers and editors rename them when done. Read
# early, their cut-off last paper would be stored as a paper of its own.
UNFINISHED_SUFFIXES = (".part", ".partial", ".crdownload", ".download", ".tmp", ".swp", "~")


@dataclass
class InboxResult:
    loaded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "file: reason"
    added: int = 0


def _claim(db: Database, path: Path, size: int, mtime_ns: int, now: datetime) -> bool:
    """Take this version of the file for ingesting; False if it was done or is taken."""
    with write_transaction(db):
        rows = list(db.query("select * from inbox_files where path = ?", [str(path)]))
        if rows:
            row = rows[0]
            same_version = row["size"] == size and row["mtime_ns"] == mtime_ns
            if same_version and row["status"] in ("loaded", "error"):
                return False
            if row["status"] == "ingesting":
                fresh = row["seen_at"] > stamp(now - timedelta(minutes=CLAIM_MINUTES))
                if fresh and sender_alive(row["detail"] or ""):
                    return False  # another caller is on it (this version or a newer one)
        _record(db, path, size, mtime_ns, "ingesting", SENDER, now)
    return True


def _record(
    db: Database, path: Path, size: int, mtime_ns: int, status: str, detail: str, now: datetime
) -> None:
    db.table("inbox_files").upsert(
        {
            "path": str(path),
            "size": size,
            "mtime_ns": mtime_ns,
            "status": status,
            "detail": detail,
            "seen_at": stamp(now),
        },
        pk="path",
    )


def _release(db: Database, path: Path) -> None:
    """Drop our claim so the next run tries again (the file was not ingested)."""
    try:
        with write_transaction(db):
            db.execute(
                "delete from inbox_files where path = ? and status = 'ingesting' and detail = ?",
                [str(path), SENDER],
            )
    except sqlite3.OperationalError:
        log.warning(
            "inbox: could not release %s; it is retried after %d minutes", path.name, CLAIM_MINUTES
        )


def ingest_inbox(
    db: Database, folder: Path | None, now: datetime, *, max_record_kb: int | None = None
) -> InboxResult:
    """Ingest the new or changed files in `folder`; never raises for a bad file, a busy
    database or an unexpected failure with one file (those are reported in the result
    and the log; only a bad file is not retried until it changes). Symbolic links and
    anything but regular files are refused (reported once per version, never read)."""
    limits = Limits.from_kb(max_record_kb) if max_record_kb else Limits()
    result = InboxResult()
    if folder is None or not folder.is_dir():
        return result
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name.lower().endswith(UNFINISHED_SUFFIXES):
            continue
        try:
            # lstat: a link is judged as itself, never followed; anything but a regular
            # file goes on to be refused by ingest, which says why, once per version.
            stat = path.lstat()
        except OSError:
            continue  # removed meanwhile
        if S_ISDIR(stat.st_mode):
            continue
        rows = list(
            db.query("select size, mtime_ns, status from inbox_files where path = ?", [str(path)])
        )
        if (
            rows
            and rows[0]["size"] == stat.st_size
            and rows[0]["mtime_ns"] == stat.st_mtime_ns
            and rows[0]["status"] in ("loaded", "error")
        ):
            continue  # the cheap check: most runs end here without taking the write lock
        try:
            if not _claim(db, path, stat.st_size, stat.st_mtime_ns, now):
                continue
        except sqlite3.OperationalError as exc:
            result.failed.append(f"{path.name}: database busy ({exc}); will retry next run")
            log.warning("inbox: %s not claimed, database busy (%s); will retry", path.name, exc)
            continue
        _ingest_one(db, path, stat.st_size, stat.st_mtime_ns, now, result, limits)
    return result


def _ingest_one(
    db: Database,
    path: Path,
    size: int,
    mtime_ns: int,
    now: datetime,
    result: InboxResult,
    limits: Limits,
) -> None:
    try:
        summary = ingest_files(db, [path], now=now, limits=limits)
        status, detail = "loaded", summary.describe()
        result.loaded.append(path.name)
        result.added += summary.added
        log.info("inbox: %s: %s", path.name, detail)
    except FileChanged:
        # Not an error of this version: its size and time may not show the change (a
        # same-size edit within the file system's time granularity), so it is retried.
        result.failed.append(f"{path.name}: changed while it was being ingested; will retry")
        log.warning("inbox: %s changed while it was being ingested; will retry", path.name)
        _release(db, path)
        return
    except IngestError as exc:
        status, detail = "error", exc.message
        result.failed.append(f"{path.name}: {exc.message}")
        log.warning("inbox: skipped %s", exc)
    except sqlite3.OperationalError as exc:
        result.failed.append(f"{path.name}: database busy ({exc}); will retry next run")
        log.warning("inbox: %s not ingested, database busy (%s); will retry", path.name, exc)
        _release(db, path)
        return
    except Exception as exc:
        # Unexpected (a full disk under the spool, an I/O error, a bug): this file is
        # retried next run, and the files after it still load. Raising here stopped the
        # whole inbox at this file, run after run, so no later file was ever ingested.
        result.failed.append(
            f"{path.name}: unexpected failure ({type(exc).__name__}); will retry next run"
        )
        log.exception("inbox: %s not ingested; will retry next run", path.name)
        _release(db, path)
        return
    except BaseException:
        _release(db, path)
        raise
    try:
        with write_transaction(db):
            _record(db, path, size, mtime_ns, status, detail, now)
    except sqlite3.OperationalError as exc:
        # The papers are stored; a later run re-reads the file and finds nothing new.
        log.warning("inbox: %s ingested but not recorded (%s)", path.name, exc)
