"""Run the benchmarks: one JSON line each on stdout.

    python3 tasks.py bench                      # all, at 100,000 papers
    python3 tasks.py bench --papers 1000000     # all, at 1M papers
    python3 tasks.py bench --only lookup,digest # some of them
    python3 tasks.py bench --list               # what there is

Each benchmark runs in its own child process (`python -m bench.NAME --papers N`), so its
peak memory is its own, and prints one JSON line with its figures and, measured in the
same run, its reference (raw FTS5 insert, plain FTS5 bm25, brute-force scan, the naive
per-channel loop...). The synthetic corpus is generated from `../shared/corpora`, read at
run time; without it every benchmark says "skipped" and exits 0. Machines here are shared
and noisy: compare the ratios in one line, not seconds across runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

from bench import corpus

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
# name -> what it measures; each is bench/NAME.py with `--papers N`.
SCALE_BENCHES = {
    "ingest": "papers/s and peak RSS of `ingest` vs a raw FTS5 bulk insert",
    "lookup": "p50/p95/p99 of lookups vs plain FTS5 bm25 and a brute-force scan",
    "digest": "10,000 channels' digests vs the naive per-channel loop",
    "delivery": "outbox throughput against a rate-limited fake platform",
    "outbox_prune": "a week's outbox at 10,000 channels: bytes before/after pruning, time",
    "commands": "/papers latency through the Slack HTTP endpoint, 50 concurrent",
    "startup": "`paperboy find` as a whole process vs `python -c pass`",
    "titles": "derived titles vs the real ones on ICLR 2021 (ROUGE-L), a noun-phrase baseline",
}


def _available() -> list[str]:
    return [name for name in SCALE_BENCHES if (ROOT / "bench" / f"{name}.py").exists()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000, help="corpus size (100000)")
    parser.add_argument("--only", help="comma-separated benchmark names")
    parser.add_argument("--list", action="store_true", help="list the benchmarks")
    args = parser.parse_args()
    names = _available()
    if args.list:
        for name in names:
            print(f"{name:10} {SCALE_BENCHES[name]}")
        return 0
    if args.only:
        wanted = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            print(f"error: no benchmark {', '.join(unknown)}; try --list", file=sys.stderr)
            return 2
        names = wanted
    if not corpus.available():
        print(f"skipped: {corpus.SOURCE} is not here", file=sys.stderr)
        return 0
    failed = 0
    for name in names:
        start = time.perf_counter()
        print(f"running {name} at {args.papers:,} papers ...", file=sys.stderr, flush=True)
        result = subprocess.run(
            [sys.executable, "-m", f"bench.{name}", "--papers", str(args.papers)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        if result.returncode != 0 or not lines:
            failed += 1
            print(json.dumps({"bench": name, "error": f"exit {result.returncode}"}), flush=True)
            continue
        print(lines[-1], flush=True)
        log.debug("%s took %.0f s", name, time.perf_counter() - start)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
