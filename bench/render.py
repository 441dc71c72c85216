"""Rendering a batch of digests for the outbox, alone: this tree against another, interleaved.

    nice -n 5 .venv/bin/python -m bench.render --papers 100000 --channels 10000 \\
        --rounds 3 --before /tmp/wt-old

The digests are `bench.digest`'s (same store, week, channels, made Slack and Discord
channels as `--platforms mixed` makes them: 60% Block Kit, 40% embeds), built once as
previews and given digest ids as if recorded (so every item has its buttons), then
pickled. Each round, for each tree (`--before`, when given, then this one), a child
process started from that tree loads them and renders every digest as the scheduler
queues it (`bot.send.platform_messages`, each payload's JSON text made as the outbox
stores it), its caches empty at the start, as a batch's are: CPU seconds, peak RSS, and
a hash of every payload's text (the trees must agree byte for byte, else the line says
so). A `--batch` round renders the digests inside `digests.render.view.batch()`, the
scope the scheduler renders a batch in, when the tree has it.

Prints one JSON line: each tree's runs, medians, and the ratio of the medians (CPU).
Machines here are shared: read the ratio from one run, with the load average beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import available, cache_dir, copy_db

ROOT = Path(__file__).resolve().parent.parent


def _digests(papers: int, channels: int, out: Path) -> int:
    """`bench.digest`'s batch as previews, given ids as if recorded, pickled to `out`."""
    from bench import digest as bench_digest
    from config.settings import load_settings
    from db import open_db
    from digests.digest import build_digests
    from digests.topics import load_catalog

    prepared = bench_digest.prepare(papers, channels, 3000, 0.01, False)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as folder:
        copy = copy_db(prepared, Path(folder) / "render.db")
        bench_digest.platform_mix(copy)
        db = open_db(copy)
        names = [row[0] for row in db.execute("select id from channels order by id")]
        settings, catalog = load_settings({}, dotenv=None), load_catalog()
        built = [
            dataclasses.replace(digest, recorded=True, digest_id=number)
            for number, digest in enumerate(
                build_digests(
                    db, names, bench_digest.NOW, catalog=catalog, settings=settings, preview=True
                ),
                start=1,
            )
        ]
        db.close()
    with out.open("wb") as file:
        pickle.dump(built, file, protocol=pickle.HIGHEST_PROTOCOL)
    return len(built)


def worker(path: Path, batch: bool) -> dict[str, Any]:
    """In a child process: render every pickled digest as the scheduler queues it."""
    from bot.send import platform_messages
    from digests.channels import parse_channel
    from digests.render import view

    with path.open("rb") as file:
        digests = pickle.load(file)
    scope = getattr(view, "batch", None) if batch else None
    digest_hash = hashlib.sha256()
    start, cpu = time.perf_counter(), time.process_time()
    with scope() if scope is not None else contextlib.nullcontext():
        for digest in digests:
            platform = parse_channel(digest.channel).platform
            for payload, _ in platform_messages(digest, platform, "notice"):
                text = payload.encoded if hasattr(payload, "encoded") else json.dumps(payload)
                digest_hash.update(text.encode())
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "digests": len(digests),
        "batch": scope is not None,
        "sha256": digest_hash.hexdigest(),
    }


def _child(tree: Path, path: Path, batch: bool) -> dict[str, Any]:
    # This file, run with the tree's packages first (an older tree may not have it).
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--pickle", str(path)]
    command += ["--batch"] if batch else []
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"render worker ({tree}) failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another tree (a git worktree) to compare")
    parser.add_argument("--batch", action="store_true", help="render inside view.batch()")
    parser.add_argument(
        "--keep", type=Path, help="also keep the pickled digests here (for profiling a worker)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pickle", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.pickle, args.batch)))
        return 0
    if not available():
        print("skipped: ../shared/corpora is not here", file=sys.stderr)
        return 0
    trees = {"this": ROOT}
    if args.before:
        trees = {"before": args.before.resolve(), **trees}
    with tempfile.TemporaryDirectory(dir=cache_dir()) as folder:
        path = Path(folder) / "digests.pickle"
        count = _digests(args.papers, args.channels, path)
        if args.keep:
            shutil.copyfile(path, args.keep)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(_child(tree, path, args.batch))
    medians = {name: statistics.median(r["cpu_seconds"] for r in rs) for name, rs in runs.items()}
    hashes = {name: {r["sha256"] for r in rs} for name, rs in runs.items()}
    result: dict[str, Any] = {
        "bench": "render",
        "papers": args.papers,
        "digests": count,
        "rounds": args.rounds,
        "cpu_median": medians,
        "rss_mb": {name: max(r["rss_mb"] for r in rs) for name, rs in runs.items()},
        "runs": runs,
        "same_payloads": len(set().union(*hashes.values())) == 1,
        "load": os.getloadavg(),
    }
    if "before" in medians:
        result["ratio_this_to_before"] = round(medians["this"] / medians["before"], 3)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
