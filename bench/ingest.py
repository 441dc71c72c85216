"""Ingest rate, peak memory and database size, beside a raw SQLite FTS5 bulk insert.

    .venv/bin/python -m bench.ingest [--papers 100000] [--repeat 1]

Both sides load `bench.corpus.jsonl_path(N)` into a fresh database file, each in its own
child process, so each side's peak RSS is its own (`ru_maxrss` of that child, plus its
largest worker process if it starts one). The two alternate in one run (ours, raw, ours,
raw...) so that other load on the machine falls on both; read the ratio.

- **Ours**: `digests.ingest.ingest_files(db, [jsonl], now=INGESTED_AT)`, all of it: read,
  check (sizes, secrets), enrich (plain text, derived TL;DR and method names, links), look
  up and merge, store papers and their aliases.
- **Raw** ("the same rows"): the same schema (Paperboy's migrations: the same `papers`
  table, indexes, and FTS5 table with its tokenizer and triggers), one transaction, one
  `executemany` of the JSON's own fields: the JSON id as the paper id, title, abstract
  (also as the indexed `abstract_text`), authors, url, venue, year, `sources` and the
  timestamps. No checks, no enrichment, no aliases, no lookups: the floor a file's rows
  cost SQLite and FTS5 to index.

Prints one JSON line: papers/s, seconds, CPU seconds (the process and its workers), peak
RSS MB and database MB for each side; `ratio` = ours / raw papers per second, and
`cpu_ratio` = raw / ours CPU seconds (medians over `--repeat` pairs). Ours' CPU is split
into `main_cpu_s` (this process: check pass and writes) and `worker_cpu_s` (the worker:
second read and enrichment); `idle_ratio` = raw CPU / max(main, worker, total / 2), the
ratio to expect on two idle cores, where the two overlap. On these shared
cores elapsed time swings with other jobs' load (the raw insert of 100k papers took 26 s
in one run, 69 s in another); CPU seconds much less.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent


def _peaks_mb() -> dict[str, float]:
    """This process's peak RSS, and its largest child's (a worker process), in MB; and the
    CPU seconds of both (user + system), which a loaded machine disturbs far less than
    elapsed time."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    main_cpu = own.ru_utime + own.ru_stime
    worker_cpu = children.ru_utime + children.ru_stime
    return {
        "rss_mb": round(own.ru_maxrss / 1024, 1),
        "worker_rss_mb": round(children.ru_maxrss / 1024, 1),
        "cpu_s": round(main_cpu + worker_cpu, 1),
        # Split: this process (check pass and writes) and its workers (second read and
        # enrichment). On two idle cores they overlap, so the longer one sets the time.
        "main_cpu_s": round(main_cpu, 2),
        "worker_cpu_s": round(worker_cpu, 2),
    }


def run_ours(source: Path, target: Path) -> dict[str, Any]:
    from bench.corpus import INGESTED_AT
    from db import open_db
    from digests.ingest import ingest_files

    start = time.perf_counter()
    db = open_db(target)
    summary = ingest_files(db, [source], now=INGESTED_AT)
    db.close()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "papers": summary.added, "summary": summary.describe()}


def run_raw(source: Path, target: Path) -> dict[str, Any]:
    from bench.corpus import INGESTED_AT
    from db import open_db

    start = time.perf_counter()
    db = open_db(target)  # the same schema: tables, indexes, FTS5 table and triggers
    at = INGESTED_AT.isoformat()
    columns = (
        "id, venue, year, title, title_derived, abstract, abstract_text, url, arxiv_url, "
        "authors, sources, added_at, updated_at"
    )
    sql = f"insert into papers ({columns}) values (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)"
    sources = json.dumps([source.name])

    def rows() -> Any:
        with source.open(encoding="utf-8") as handle:
            for line in handle:
                paper = json.loads(line)
                yield (
                    paper["id"], paper.get("venue"), paper.get("year"), paper["title"],
                    paper["abstract"], paper["abstract"], paper.get("url"), paper.get("url"),
                    json.dumps(paper.get("authors", []), ensure_ascii=False), sources, at, at,
                )  # fmt: skip

    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    cursor = conn.executemany(sql, rows())
    count = cursor.rowcount
    conn.commit()
    db.close()
    return {"seconds": time.perf_counter() - start, "papers": count}


def child(side: str, source: Path, target: Path) -> int:
    result = (run_ours if side == "ours" else run_raw)(source, target)
    print(json.dumps(result | _peaks_mb()))
    return 0


def _measure(side: str, source: Path, folder: Path, run: int) -> dict[str, Any]:
    target = folder / f"{side}-{run}.db"
    command = [sys.executable, "-m", "bench.ingest", "--child", side, str(source), str(target)]
    done = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["db_mb"] = round(sum(f.stat().st_size for f in folder.glob(f"{target.name}*")) / 1e6, 1)
    for leftover in folder.glob(f"{target.name}*"):
        leftover.unlink()
    return result


def _side(runs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = statistics.median(r["seconds"] for r in runs)
    papers = runs[0]["papers"]
    return {
        "papers_per_s": round(papers / seconds),
        "seconds": round(seconds, 1),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "main_cpu_s": statistics.median(r["main_cpu_s"] for r in runs),
        "worker_cpu_s": statistics.median(r["worker_cpu_s"] for r in runs),
        "peak_rss_mb": round(max(max(r["rss_mb"], r["worker_rss_mb"]) for r in runs)),
        "db_mb": runs[0]["db_mb"],
        "stored": papers,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs (medians)")
    parser.add_argument(
        "--child", nargs=3, metavar=("SIDE", "SOURCE", "DB"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        side, source, target = args.child
        return child(side, Path(source), Path(target))
    from bench.corpus import SOURCE, available, jsonl_path

    if not available():
        print(f"skipped: {SOURCE} is not here", file=sys.stderr)
        return 0
    source = jsonl_path(args.papers)
    ours: list[dict[str, Any]] = []
    raw: list[dict[str, Any]] = []
    folder_root = os.environ.get("PAPERBOY_BENCH_CACHE") or str(ROOT / "bench" / ".cache")
    Path(folder_root).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder_root) as name:  # a disk, not a tmpfs
        folder = Path(name)
        for run in range(args.repeat):
            ours.append(_measure("ours", source, folder, run))
            raw.append(_measure("raw", source, folder, run))
    result = {"bench": "ingest", "papers": args.papers, **_side(ours)}
    result["summary"] = ours[0]["summary"]
    result["reference"] = {"what": "raw FTS5 executemany, same schema", **_side(raw)}
    ratios = [r["seconds"] / o["seconds"] for o, r in zip(ours, raw, strict=True)]
    result["ratio"] = round(statistics.median(ratios), 3)
    # Raw CPU seconds over ours: how much work each paper costs, whatever the load.
    cpu = [r["cpu_s"] / o["cpu_s"] for o, r in zip(ours, raw, strict=True)]
    result["cpu_ratio"] = round(statistics.median(cpu), 3)
    # What the ratio would be on two idle cores: the two processes overlap, so the longer
    # of them (or half the total, if the shorter one cannot keep pace) sets the time.
    bound = [
        r["cpu_s"] / max(o["main_cpu_s"], o["worker_cpu_s"], o["cpu_s"] / 2)
        for o, r in zip(ours, raw, strict=True)
    ]
    result["idle_ratio"] = round(statistics.median(bound), 3)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
