"""The digest batch through the scheduler, this tree against others, interleaved.

    PAPERBOY_BENCH_CACHE=/work/main/bench/.cache nice -n 5 .venv/bin/python -m bench.digest_pairs \\
        --papers 1000000 --rounds 2 --tree /tmp/wt-before [--tree /tmp/wt-other]

`bench.digest --scheduler`'s scheduler run alone (no naive reference, no bare build), for
comparing trees: the same prepared database (`bench.digest.prepare`: store, week, 10,000
channels, previous digests), a fresh copy for every run made Slack and Discord channels
(`platform_mix`), then the scheduler worker (`python -m bench.digest --worker scheduler`)
started from each tree in turn, round after round: seconds, CPU seconds (the child's, all
threads), peak RSS, and a hash of the sampled channels' recorded picks (the trees must
agree). For the goal's own figure with its naive reference, run `bench.digest
--scheduler`.

Prints one JSON line: every run, with the load average when it started, and per tree the
medians and the ratio of its CPU median to this tree's. Machines here are shared: read the
ratios from one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.corpus import available, cache_dir, copy_db
from bench.digest import platform_mix, prepare

ROOT = Path(__file__).resolve().parent.parent


def _run(tree: Path, db: Path, sample: int) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "bench.digest", "--worker", "scheduler", "--db", str(db),
        "--sample", str(sample), "--backlog-sample", "0", "--single", "0",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scheduler worker ({tree}) failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    picks = json.dumps(result.get("picks"), sort_keys=True).encode()
    return {
        "seconds": result["seconds"],
        "cpu_seconds": result["cpu_seconds"],
        "rss_mb": result["rss_mb"],
        "built": result["built"],
        "picks": hashlib.sha256(picks).hexdigest()[:12],
        "load": round(load, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sample", type=int, default=3, help="channels whose picks are hashed")
    parser.add_argument(
        "--tree", type=Path, action="append", default=[], help="another tree (a git worktree)"
    )
    args = parser.parse_args()
    if not available():
        print("skipped: ../shared/corpora is not here", file=sys.stderr)
        return 0
    trees = {str(tree.resolve()): tree.resolve() for tree in args.tree}
    trees["this"] = ROOT
    prepared = prepare(args.papers, args.channels, 3000, 0.01, False)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(dir=cache_dir()) as folder:
        for _ in range(args.rounds):
            for name, tree in trees.items():
                copy = copy_db(prepared, Path(folder) / "pair.db")
                platform_mix(copy)
                runs[name].append(_run(tree, copy, args.sample))
                for suffix in ("", "-wal", "-shm"):
                    Path(str(copy) + suffix).unlink(missing_ok=True)
    medians = {
        name: {key: statistics.median(r[key] for r in rs) for key in ("seconds", "cpu_seconds")}
        for name, rs in runs.items()
    }
    print(
        json.dumps(
            {
                "bench": "digest_pairs",
                "papers": args.papers,
                "channels": args.channels,
                "runs": runs,
                "medians": medians,
                "cpu_ratio_to_this": {
                    name: round(m["cpu_seconds"] / medians["this"]["cpu_seconds"], 3)
                    for name, m in medians.items()
                },
                "same_picks": len({r["picks"] for rs in runs.values() for r in rs}) == 1,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
