"""Pruning the outbox: a week of digests for 10,000 channels, sent, then pruned.

    .venv/bin/python -m bench.outbox_prune --papers 100000 --channels 10000

The week: bench.digest's prepared database (N papers, a week of new ones, `--channels`
channels, 60% Slack and 40% Discord), every channel's digest built, rendered (Block Kit
with buttons, embeds with buttons) and queued through the scheduler's own path
(`bench.digest._scheduler_run`), then every message marked sent at that week's Monday.
Cached in bench/.cache (per N, channels, schema).

Then, on fresh copies, interleaved, `--runs` times each:

- `prune`: `db.outbox.prune_sent` of everything sent before a cut after that Monday (1,000
  messages per write transaction), after a prune that finds nothing (the cut before the
  Monday: the daily run's scan while the week is younger than PAPERBOY_OUTBOX_KEEP_DAYS);
- reference, `one_statement`: the same rows emptied by one plain `update` in one
  transaction (what a prune without batches, and emptying rows in place, would do),
  after the same empty scan;
- reference, `zeroing`: the prune's own batches with SQLite's `secure_delete` on
  (Debian's SQLite has it on, and every freed payload page is overwritten with zeros;
  `prune_sent` lowers it to FAST).

`--reader` holds a read transaction on another connection through each run (a search
index rebuild does): no checkpoint can restart the `-wal`, which grows by all that is
written. Each run also reports the bytes the process wrote (prune and a final
checkpoint, from /proc/self/io; null elsewhere) and the `-wal`'s size when it ended.

Figures: seconds and CPU seconds of each (median), the longest time the write lock was held
(a batch's transaction; the reference's one transaction), the outbox's bytes before and
after, for both (`dbstat`: its table's pages, overflow pages included: emptied in place,
the rows keep their mostly empty pages), the free pages the prune leaves in the file
(reused by later writes), and the file's size before, after, and after a `VACUUM` (timed
once). Prints one JSON line. Machines here are shared and noisy: compare the
ratios from one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.corpus import available, cache_dir, copy_db

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent


def filled(papers: int, channels: int) -> Path:
    """The database with a week of digests queued through the scheduler and sent (cached)."""
    from bench.digest import NOW, _schema, platform_mix, prepare
    from digests.timestamps import stamp

    path = cache_dir() / f"outbox-{papers}-{channels}-{_schema()}.db"
    if path.exists():
        return path
    partial = path.with_suffix(".part.db")
    partial.unlink(missing_ok=True)
    copy_db(prepare(papers, channels, 3_000, 0.01, False), partial)
    platform_mix(partial)
    # In a child: its connections (one a thread) are all closed when it exits, so that the
    # file renamed below is whole, with no -wal left under the old name.
    command = [sys.executable, "-m", "bench.outbox_prune", "--queue", str(partial)]
    subprocess.run(command, cwd=ROOT, check=True)
    with contextlib.closing(sqlite3.connect(partial)) as conn:
        with conn:
            conn.execute(
                "update outbox set state = 'sent', attempts = 1, platform_id = 'bench-' || id, "
                "sent_at = ? where state = 'pending'",
                [stamp(NOW)],
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    partial.replace(path)
    return path


def queue_week(path: Path) -> None:
    """Every channel's digest, through the scheduler (in the child process `filled` starts)."""
    from bench.digest import _scheduler_run
    from config.settings import load_settings
    from digests.topics import load_catalog

    with contextlib.closing(sqlite3.connect(path)) as conn:
        names = [row[0] for row in conn.execute("select id from channels order by id")]
    run = _scheduler_run(path, names, load_settings({}, dotenv=None), load_catalog())
    log.info("queued: %s", run)


def sizes(path: Path) -> dict[str, Any]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        rows, sent, payload = conn.execute(
            "select count(*), sum(state = 'sent'), sum(length(cast(payload as blob))) from outbox"
        ).fetchone()
        return {
            "outbox_bytes": conn.execute(
                "select sum(pgsize) from dbstat where name = 'outbox'"
            ).fetchone()[0],
            "payload_bytes": payload,
            "rows": rows,
            "sent": sent,
            "free_bytes": conn.execute("PRAGMA freelist_count").fetchone()[0] * page,
            "file_bytes": conn.execute("PRAGMA page_count").fetchone()[0] * page,
        }


class LockTimer:
    """The time each write transaction of `db.outbox` was open (the write lock held)."""

    def __init__(self) -> None:
        self.held: list[float] = []

    @contextlib.contextmanager
    def __call__(self, db: Any) -> Iterator[Any]:

        start = time.perf_counter()
        try:
            with db.write():
                yield db
        finally:
            self.held.append(time.perf_counter() - start)


def written_bytes() -> int | None:
    """The bytes this process has had written to disk so far (Linux), else None."""
    try:
        with open("/proc/self/io") as io:
            fields = dict(line.split(": ") for line in io.read().splitlines())
        return int(fields["write_bytes"])
    except (OSError, KeyError, ValueError):
        return None


def one_run(
    source: Path, folder: Path, kind: str, cut: str, early: str, reader: bool = False
) -> dict[str, Any]:
    from db import open_db, outbox

    copy = copy_db(source, folder / f"{kind}.db")
    try:
        db = open_db(copy)
        start = time.perf_counter()
        assert outbox.prune_sent(db, early) == 0
        scan = time.perf_counter() - start
        timer = LockTimer()
        real = outbox.write_transaction
        outbox.write_transaction = timer  # type: ignore[assignment]
        snapshot = sqlite3.connect(copy, isolation_level=None) if reader else None
        if snapshot is not None:
            snapshot.execute("BEGIN")
            snapshot.execute("select count(*) from outbox").fetchone()
        try:
            written = written_bytes()
            start, cpu = time.perf_counter(), time.process_time()
            if kind == "prune":
                emptied = outbox.prune_sent(db, cut)
            elif kind == "zeroing":  # the prune's batches with secure_delete on
                names, values = outbox.working_table(db)
                db.execute("PRAGMA secure_delete = ON")
                emptied = outbox.prune_batches(
                    db, cut, outbox.PRUNE_BATCH, lambda: False, names, values
                )
            else:  # the reference: the same rows, one statement, one transaction
                with timer(db):
                    emptied = db.execute(
                        "update outbox set payload = '{}' where state = 'sent' "
                        "and sent_at < ? and payload != '{}'",
                        [cut],
                    ).rowcount
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            wal = Path(f"{copy}-wal").stat().st_size
        finally:
            outbox.write_transaction = real  # type: ignore[assignment]
            if snapshot is not None:
                snapshot.close()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        after = written_bytes()
        db.close()
        result = {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "emptied": emptied,
            "transactions": len(timer.held),
            "longest_lock_seconds": max(timer.held),
            "empty_scan_seconds": scan,
            "written_bytes": None if written is None or after is None else after - written,
            "wal_bytes": wal,
        }
        result["after"] = sizes(copy)
        return result
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)


def vacuumed(source: Path, folder: Path, cut: str) -> dict[str, Any]:
    """The file after a prune and a VACUUM, and how long the VACUUM took."""
    from db import open_db, outbox

    copy = copy_db(source, folder / "vacuum.db")
    try:
        db = open_db(copy)
        outbox.prune_sent(db, cut)
        db.close()
        with contextlib.closing(sqlite3.connect(copy)) as conn:
            start = time.perf_counter()
            conn.execute("VACUUM")
            seconds = time.perf_counter() - start
        return {"vacuum_seconds": seconds, "file_bytes": sizes(copy)["file_bytes"]}
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="of each, interleaved")
    parser.add_argument(
        "--reader", action="store_true", help="hold a read transaction through each run"
    )
    parser.add_argument("--queue", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.queue:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
        queue_week(args.queue)
        return 0
    if not available():
        print("skipped: ../shared/corpora is not here", file=sys.stderr)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    from bench.digest import NOW
    from digests.timestamps import stamp

    source = filled(args.papers, args.channels)
    before = sizes(source)
    cut, early = stamp(NOW + timedelta(days=1)), stamp(NOW - timedelta(days=1))
    runs: dict[str, list[dict[str, Any]]] = {"prune": [], "zeroing": [], "one_statement": []}
    with tempfile.TemporaryDirectory(dir=cache_dir()) as name:
        folder = Path(name)
        for index in range(args.runs):
            order = list(runs) if index % 2 == 0 else list(reversed(runs))
            for kind in order:
                runs[kind].append(one_run(source, folder, kind, cut, early, args.reader))
                log.info("%s: %s", kind, runs[kind][-1])
        vacuum = vacuumed(source, folder, cut)

    def median(kind: str, key: str) -> float | None:
        values = [run[key] for run in runs[kind]]
        if None in values:
            return None
        return round(float(statistics.median(values)), 3)

    def figures(kind: str) -> dict[str, Any]:
        keys = ("seconds", "cpu_seconds", "longest_lock_seconds", "empty_scan_seconds")
        return {
            "emptied": runs[kind][0]["emptied"],
            "transactions": runs[kind][0]["transactions"],
            **{key: median(kind, key) for key in keys},
            "written_mb": _mb(median(kind, "written_bytes")),
            "wal_mb": _mb(median(kind, "wal_bytes")),
            "all": [round(run["seconds"], 3) for run in runs[kind]],
        }

    pruned, reference = runs["prune"], runs["one_statement"]
    print(
        json.dumps(
            {
                "bench": "outbox_prune",
                "papers": args.papers,
                "channels": args.channels,
                "runs": args.runs,
                "reader": args.reader,
                "secure_delete_default": _secure_delete(),
                "load": round(os.getloadavg()[0], 2),
                "before": before,
                "after": pruned[0]["after"],
                "after_vacuum": vacuum,
                "prune": figures("prune"),
                "zeroing": {
                    "what": "the prune's batches with secure_delete on (the slower setting)",
                    **figures("zeroing"),
                },
                "reference": {
                    "what": "one update statement in one transaction, the same rows",
                    "after": reference[0]["after"],
                    **figures("one_statement"),
                },
                "prune_over_reference": round(
                    (median("prune", "seconds") or 0) / (median("one_statement", "seconds") or 1),
                    2,
                ),
                "prune_over_zeroing": round(
                    (median("prune", "seconds") or 0) / (median("zeroing", "seconds") or 1), 2
                ),
            }
        )
    )
    return 0


def _mb(value: float | None) -> float | None:
    return None if value is None else round(value / 1e6, 1)


def _secure_delete() -> int:
    """This SQLite's `secure_delete` for a new connection (1: on, 0: off)."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        return int(conn.execute("PRAGMA secure_delete").fetchone()[0])


if __name__ == "__main__":
    raise SystemExit(main())
