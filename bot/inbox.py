"""The inbox: new paper lists dropped in `PAPERBOY_INBOX` are ingested before digests, each
file once per version (path, size, modification time), claimed first so that one caller
of several (threads, processes) ingests it (docs/explanation/guarantees.md)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from stat import S_ISDIR
from typing import Any

from bot.delivery import SENDER, sender_alive
from db import inbox as inbox_files
from db import text_index
from db.errors import StorageError
from db.store import Store
from digests.ingest import IngestError, ingest_files
from digests.ingest.bulk import IngestInterrupted, is_busy
from digests.ingest.decode import Limits
from digests.ingest.errors import FileChanged
from digests.timestamps import stamp

log = logging.getLogger(__name__)

CLAIM_MINUTES = 30  # a claim not renewed for this long is taken over
# While a file is ingested its claim is renewed this often (a 1M-paper file takes 15-35
# minutes on 2 cores: a claim that ran out meant a second process ingested it at once).
RENEW_SECONDS = 60.0
_monotonic = time.monotonic  # tests step it
# Files still being downloaded or saved: browsers and editors rename them when done. Read
# early, their cut-off last paper would be stored as a paper of its own.
UNFINISHED_SUFFIXES = (".part", ".partial", ".crdownload", ".download", ".tmp", ".swp", "~")
# A file written to this recently may be cut off mid-paper (a copy or a save in progress,
# a writer between two writes): read now, the cut-off paper would stay stored for good.
SETTLE_SECONDS = 5.0
# A modification time this far past the run's clock is another clock's (a file system's
# on another machine, an unpacked archive), not a write in progress: it cannot say.
FUTURE_SECONDS = 3600.0


@dataclass
class InboxResult:
    loaded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "file: reason"
    added: int = 0
    waiting: list[str] = field(default_factory=list)  # modified too recently: next run


def _claim(db: Store, path: Path, size: int, mtime_ns: int, now: datetime) -> bool:
    """Take this version of the file for ingesting; False if it was done or is taken."""
    with db.write():
        row = inbox_files.get_file(db, str(path))
        if row is not None:
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
    db: Store, path: Path, size: int, mtime_ns: int, status: str, detail: str, now: datetime
) -> None:
    inbox_files.record_file(db, str(path), size, mtime_ns, status, detail, stamp(now))


def _renewing(db: Store, path: Path, now: datetime) -> Any:
    """A progress wrapper for `ingest_files` that renews our claim on `path` every
    RENEW_SECONDS while the papers are stored (between chunks: no transaction is open).
    `now` is the run's clock; the time since is added to it."""
    start = last = _monotonic()

    def renew(items: Sequence[Any]) -> Iterable[Any]:
        nonlocal last
        iterator: Iterator[Any] = iter(items)
        for item in iterator:
            yield item
            moment = _monotonic()
            if moment - last >= RENEW_SECONDS:
                last = moment
                _renew(db, path, now + timedelta(seconds=moment - start))

    return renew


def _renew(db: Store, path: Path, at: datetime) -> None:
    try:
        with db.write():
            inbox_files.renew_claim(db, str(path), SENDER, stamp(at))
    except StorageError as exc:  # busy: the next renewal tries again
        log.warning("inbox: could not renew the claim on %s (%s)", path.name, exc)


def _release(db: Store, path: Path) -> None:
    """Drop our claim so the next run tries again (the file was not ingested)."""
    try:
        with db.write():
            inbox_files.drop_claim(db, str(path), SENDER)
    except StorageError:
        log.warning(
            "inbox: could not release %s; it is retried after %d minutes", path.name, CLAIM_MINUTES
        )


def ingest_inbox(
    db: Store,
    folder: Path | None,
    now: datetime,
    *,
    max_record_kb: int | None = None,
    settle_seconds: float = SETTLE_SECONDS,
) -> InboxResult:
    """Ingest the new or changed files in `folder`; never raises for a bad file, a busy
    database or an unexpected failure with one file (those are reported in the result
    and the log; only a bad file is not retried until it changes). Symbolic links and
    anything but regular files are refused (reported once per version, never read).

    A file modified within `settle_seconds` before `now` (the run's clock), or after it
    (up to FUTURE_SECONDS), is left for a later run (`InboxResult.waiting`), and so is a
    file whose size or modification time is not the scan's when a chunk of its papers
    is about to be stored: that chunk is not stored.

    Safe to call from several threads or processes at once: a file's version is claimed
    in a short transaction first (`_claim`), and the others skip it. A claim whose holder
    died, or not renewed for CLAIM_MINUTES, is taken over; the holder renews it every
    RENEW_SECONDS while it ingests."""
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
        known = inbox_files.file_version(db, str(path))
        if (
            known is not None
            and known["size"] == stat.st_size
            and known["mtime_ns"] == stat.st_mtime_ns
            and known["status"] in ("loaded", "error")
        ):
            continue  # the cheap check: most runs end here without taking the write lock
        if _unsettled(stat.st_mtime_ns, now, settle_seconds):
            result.waiting.append(path.name)
            log.info("inbox: %s was modified just now; left for the next run", path.name)
            continue
        try:
            if not _claim(db, path, stat.st_size, stat.st_mtime_ns, now):
                continue
        except StorageError as exc:
            result.failed.append(f"{path.name}: database busy ({exc}); will retry next run")
            log.warning("inbox: %s not claimed, database busy (%s); will retry", path.name, exc)
            continue
        _ingest_one(db, path, stat.st_size, stat.st_mtime_ns, now, result, limits)
    if result.loaded:
        # The next lookup then does not pay for indexing these papers.
        text_index.catch_up(db)
    return result


def _unsettled(mtime_ns: int, now: datetime, settle_seconds: float) -> bool:
    """Whether a file modified at `mtime_ns` may still be being written at `now`."""
    age = now.timestamp() - mtime_ns / 1e9
    return -FUTURE_SECONDS <= age < settle_seconds


def _ingest_one(
    db: Store,
    path: Path,
    size: int,
    mtime_ns: int,
    now: datetime,
    result: InboxResult,
    limits: Limits,
) -> None:
    try:
        summary = ingest_files(
            db,
            [path],
            now=now,
            limits=limits,
            progress=_renewing(db, path, now),
            seen={str(path): (size, mtime_ns)},  # the scan's version, and no other
        )
        status, detail = "loaded", summary.describe()
        result.loaded.append(path.name)
        result.added += summary.added
        log.info("inbox: %s: %s", path.name, detail)
    except IngestInterrupted as exc:
        # Not the file's fault (its worker died or hung): the next run finishes it.
        result.failed.append(f"{path.name}: {exc.message}; will retry next run")
        log.warning("inbox: %s; will retry next run", exc)
        _release(db, path)
        return
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
    except StorageError as exc:
        # Busy, or the disk full or failing: the next run tries again.
        what = f"database busy ({exc})" if is_busy(exc) else str(exc)
        result.failed.append(f"{path.name}: {what}; will retry next run")
        log.warning("inbox: %s not ingested: %s; will retry", path.name, what)
        _release(db, path)
        return
    except Exception as exc:
        # Unexpected (a full disk under the spool, an I/O error, a bug): this file is
        # retried next run, and the files after it still load (raised, it would stop the
        # whole inbox at this file, run after run).
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
        with db.write():
            _record(db, path, size, mtime_ns, status, detail, now)
    except StorageError as exc:
        # The papers are stored; a later run re-reads the file and finds nothing new.
        log.warning("inbox: %s ingested but not recorded (%s)", path.name, exc)
