"""`paperboy find` as a whole process: start-up, and the lookup on top of it.

    .venv/bin/python -m bench.startup --papers 100000 [--runs 15]
    .venv/bin/python -m bench.startup --db PATH          # a ready database of your own
    .venv/bin/python -m bench.startup --tree OLD         # OLD's code too (a worktree)

Times, interleaved round by round (every other one backwards) so that the machine's noise
falls on all of them alike (median of `--runs`, wall clock from spawning to exit):
- `python_pass`: `python -c pass`, the reference: an interpreter with this venv's `site`;
- `import_cli`: `python -c "import bot.cli"`;
- `help`: `paperboy --help`;
- `find_small`: `paperboy find "graph neural networks"` on the 38 bundled papers: start-up
  and opening the database, with almost no lookup;
- `find`: the same on a copy of `bench.corpus.ready_db(N)`;
- `lookup_in_process`: that lookup alone, in one process, on a warm connection (measured
  in a child before the runs: an index held open here would change what the runs do).

`startup_ms` = find_small − python_pass: what Paperboy adds to an interpreter before any
real lookup. `overhead_ms` = find − lookup_in_process: what a whole process costs beyond
the lookup itself at N papers. With `--tree OLD`, every case also runs on OLD's code
(`CASE@tree`, interleaved process by process), and `tree_ratio` is find_small / find_small@tree.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
QUERY = "graph neural networks"
PREPARE = """
import contextlib, json, statistics, sys, time
from db import open_db
from digests import lookup
db = open_db(sys.argv[1])
with contextlib.suppress(ImportError):
    from db import text_index
    text_index.ready(db)
lookup.find(db, sys.argv[2], 10)
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    lookup.find(db, sys.argv[2], 10)
    times.append(time.perf_counter() - start)
count = db.execute("select count(*) from papers").fetchone()[0]
print(json.dumps([count, round(statistics.median(times) * 1000, 1)]))
"""


def paperboy() -> list[str]:
    script = Path(sys.executable).with_name("paperboy")
    if script.is_file():
        return [str(script)]
    found = shutil.which("paperboy")
    return [found] if found else [sys.executable, "-m", "bot"]


def wall(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-300:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--db", type=Path, default=None, help="a ready database (copied)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", type=Path, default=None, help="another checkout to time")
    args = parser.parse_args()
    from bench import corpus

    if args.db is None and not corpus.available():
        print(f"skipped: {corpus.SOURCE} is not here", file=sys.stderr)
        return 0
    from db import open_db
    from digests.ingest import ingest_files
    from digests.samples import sample_paths

    source = args.db or corpus.ready_db(args.papers)
    with tempfile.TemporaryDirectory(dir=os.environ.get("PAPERBOY_BENCH_TMP")) as name:
        folder = Path(name)
        big = corpus.copy_db(source, folder / "big.db")
        # In a child: migrate once, up front, as the owner's first command would, and build
        # the search index beside the store if there is one (the first lookup would).
        # Not here: this process must hold no index open while the runs below use it.
        prepared = subprocess.run(
            [sys.executable, "-c", PREPARE, str(big), QUERY, str(args.runs)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True,
        )  # fmt: skip
        papers, in_process_ms = json.loads(prepared.stdout.splitlines()[-1])
        small = folder / "small.db"
        ingest_files(open_db(small), list(sample_paths()), now=corpus.INGESTED_AT)
        # Any value of PYTHONDONTWRITEBYTECODE (even "0") stops the warm-up writing bytecode.
        skipped = ("PAPERBOY_", "SLACK_", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if not k.startswith(skipped)}
        py = sys.executable
        commands = {
            "python_pass": [py, "-c", "pass"],
            "import_cli": [py, "-c", "import bot.cli"],
            "help": [*paperboy(), "--help"],
            "find_small": [*paperboy(), "find", QUERY, "--db", str(small)],
            "find": [*paperboy(), "find", QUERY, "--db", str(big)],
        }
        trees = {"": env}
        if args.tree:  # its code comes first on the path of the processes timed
            trees["@tree"] = {**env, "PYTHONPATH": str(args.tree.resolve())}
        cases = {
            f"{name}{tree}": (argv, tree_env)
            for name, argv in commands.items()
            for tree, tree_env in trees.items()
        }
        for argv, case_env in cases.values():  # warm the page cache and the bytecode once
            wall(argv, folder, case_env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        order = list(cases.items())
        for run in range(args.runs):  # every other round backwards: no case always goes first
            for case, (argv, case_env) in order if run % 2 == 0 else order[::-1]:
                times[case].append(wall(argv, folder, case_env))
    ms: dict[str, Any] = {
        case: round(statistics.median(values) * 1000, 1) for case, values in times.items()
    }
    ms["lookup_in_process"] = in_process_ms
    line = {
        "bench": "startup",
        "papers": papers,
        "runs": args.runs,
        "query": QUERY,
        "median_ms": ms,
        "startup_ms": round(ms["find_small"] - ms["python_pass"], 1),
        "overhead_ms": round(ms["find"] - ms["lookup_in_process"], 1),
        "reference": {"python_pass_ms": ms["python_pass"]},
        "ratio": round(ms["find_small"] / ms["python_pass"], 2),
        "ratio_what": "find on the bundled papers / python -c pass",
        "cpus": os.cpu_count(),
    }
    if args.tree:
        line["tree"] = str(args.tree)
        line["tree_ratio"] = round(ms["find_small"] / ms["find_small@tree"], 3)
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
