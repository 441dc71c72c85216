"""The digest batch with 👍/👎 feedback in the store, against the same batch
without it, and against another tree (one without feedback), interleaved.

    nice -n 5 .venv/bin/python -m bench.digest_feedback --papers 100000 --channels 10000 \\
        --share 0.1 --rounds 3 --before /tmp/wt-old [--after /tmp/wt-new]

The database is `bench.digest`'s (same store, week, channels and previous digests, made
Slack and Discord channels as `--platforms mixed` makes them). For each round and each
tree (`--before`, when given, then this one), a fresh copy is built with no feedback and
another with feedback: `--share` of the channels (drawn with a fixed seed) have voted on
their first topic, `--votes` papers each (half 👍, half 👎, one user), papers of the
store's first 20,000. Each build is `bench.digest`'s own build worker (one
`build_digests` batch of every channel, in a child process, run from that tree):
seconds, CPU seconds (the child's, all threads), peak RSS, items recorded. A tree that
predates feedback ignores the table: its "with feedback" builds are the same work as
without, a reference for the noise.

Prints one JSON line: each configuration's runs and medians, and the ratios of the
medians (CPU) to this tree without feedback. Machines here are shared: read the ratios
from one run, with the load average printed beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.corpus import available, cache_dir, copy_db

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
AT = "2026-01-12T10:00:00+00:00"  # when the votes were cast (after the previous digests)


def add_feedback(path: Path, share: float, votes: int, seed: int = 13) -> int:
    """Votes of `share` of the channels on their first topic; returns the channels."""
    rng = random.Random(seed)
    with sqlite3.connect(path) as db:
        channels = [row[0] for row in db.execute("select id from channels order by id")]
        papers = [row[0] for row in db.execute("select id from papers order by rowid limit 20000")]
        chosen = rng.sample(channels, round(len(channels) * share))
        rows = []
        for channel in chosen:
            topic = db.execute(
                "select topic_id from subscriptions where channel = ? and removed_at is null "
                "order by id limit 1",
                [channel],
            ).fetchone()[0]
            for index, paper_id in enumerate(rng.sample(papers, votes)):
                rows.append((channel, topic, paper_id, "U0BENCH", 1 if index % 2 == 0 else -1))
        db.executemany(
            'insert into feedback (channel, topic_id, paper_id, "user", vote, digest_id, '
            "created_at, updated_at) values (?, ?, ?, ?, ?, null, ?, ?)",
            [(*row, AT, AT) for row in rows],
        )
    return len(chosen)


def build(tree: Path, db: Path) -> dict[str, Any]:
    """`bench.digest`'s build worker, run from `tree` (its code, its digest module)."""
    command = [
        sys.executable, "-m", "bench.digest", "--worker", "build", "--db", str(db),
        "--sample", "1", "--backlog-sample", "0", "--single", "0",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"build in {tree} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: result[k] for k in ("seconds", "cpu_seconds", "rss_mb", "items")}


def picks(path: Path) -> str:
    """A hash of every digest item in the database (channel, paper, rank, topics, score,
    archive or not): two builds of one copy that pick the same papers in the same order
    for the same topics with the same scores give the same hash."""
    digest = hashlib.sha256()
    with sqlite3.connect(path) as db:
        for row in db.execute(
            "select channel, paper_id, rank, topics, score, from_archive from digest_items "
            "order by channel, digest_id, rank, paper_id"
        ):
            digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--share", type=float, default=0.1, help="channels with feedback")
    parser.add_argument("--votes", type=int, default=10, help="votes per such channel")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another tree to interleave (old code)")
    parser.add_argument("--after", type=Path, default=ROOT, help="the tree measured (this one)")
    args = parser.parse_args()
    if not available():
        print("skipped: ../shared/corpora is not here", file=sys.stderr)
        return 0
    command = [
        sys.executable, "-m", "bench.digest", "--worker", "prepare",
        "--papers", str(args.papers), "--channels", str(args.channels),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    prepared = Path(json.loads(done.stdout.strip().splitlines()[-1])["db"])
    from bench.digest import platform_mix

    trees = {"before": args.before, "after": args.after} if args.before else {"after": args.after}
    runs: dict[str, list[dict[str, Any]]] = {}
    loads = []
    with tempfile.TemporaryDirectory(dir=cache_dir()) as folder:
        for _ in range(args.rounds):
            for name, tree in trees.items():
                assert tree is not None
                for feedback in (False, True):
                    copy = copy_db(prepared, Path(folder) / "run.db")
                    platform_mix(copy)
                    voters = add_feedback(copy, args.share, args.votes) if feedback else 0
                    loads.append(os.getloadavg()[0])
                    result = build(tree.resolve(), copy) | {
                        "voting_channels": voters,
                        "picks": picks(copy),
                    }
                    runs.setdefault(f"{name}{'+feedback' if feedback else ''}", []).append(result)
                    for leftover in (copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")):
                        leftover.unlink(missing_ok=True)
    medians = {
        name: {
            key: round(statistics.median(r[key] for r in found), 2)
            for key in ("seconds", "cpu_seconds", "rss_mb")
        }
        for name, found in runs.items()
    }
    base = medians["after"]["cpu_seconds"]
    print(
        json.dumps(
            {
                "bench": "digest_feedback",
                "papers": args.papers,
                "channels": args.channels,
                "share": args.share,
                "votes": args.votes,
                "runs": runs,
                "medians": medians,
                "cpu_ratio_to_after": {
                    name: round(m["cpu_seconds"] / base, 3) if base else None
                    for name, m in medians.items()
                },
                "load_1min": {"min": min(loads), "max": max(loads)},
                # Per configuration, the distinct `picks` hashes of its runs: one each, and
                # the same for before and after, when a change keeps every pick.
                "picks": {name: sorted({r["picks"] for r in rs}) for name, rs in runs.items()},
            }
        )
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
