"""Re-ingesting a file with nothing new, against a first ingest of the same file.

    .venv/bin/python -m bench.reingest [--repeat N]

Ingests the ICLR 2021 corpus into a fresh database (the reference: all the work), then
ingests it again N times (nothing new) and prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from db import open_db
from digests.ingest import ingest_files

log = logging.getLogger(__name__)

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"
CORPUS = CORPUS / "iclr2021-openreview.tsv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    if not args.corpus.is_file():
        print(f"skipped: {args.corpus} is not here", file=sys.stderr)
        return 0
    firsts, agains = [], []
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.repeat):
            db = open_db(Path(folder) / f"bench{run}.db")
            start = time.perf_counter()
            ingest_files(db, [args.corpus], now=datetime.now(UTC))
            firsts.append(time.perf_counter() - start)
            start = time.perf_counter()
            summary = ingest_files(db, [args.corpus], now=datetime.now(UTC))
            agains.append(time.perf_counter() - start)
            assert summary.added == summary.merged == 0, summary.describe()
    first, again = statistics.median(firsts), statistics.median(agains)
    print(f"{args.corpus.name}, {args.repeat} runs (median):")
    print(f"  first ingest {first:.2f} s   re-ingest, nothing new {again:.2f} s")
    print(f"  re-ingest / first = {again / first:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
