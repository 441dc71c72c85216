"""Ingest and lookup timings on the ICLR 2021 corpus.

    .venv/bin/python -m bench.iclr [--repeat N]

Prints the median of N fresh ingests of the 2,966-paper TSV into a new database file,
the median latency of 100 lookups (method names, topic phrases, hostile text) on it, and
the time to build one channel's weekly digest (3 topics) over all those papers.
Machines here are shared and noisy: read medians, and compare numbers from one run.
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
from typing import Any

from db import open_db
from db.search import search_papers
from digests.ingest import ingest_files

log = logging.getLogger(__name__)

CORPUS = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "iclr2021-openreview.tsv"
)
QUERIES = [
    "graph neural networks", "offline reinforcement learning", "contrastive learning",
    "adversarial robustness", "federated learning", "meta-learning", "transformer attention",
    "diffusion models", "neural architecture search", "GAN", "BERT", "pruning lottery ticket",
    "knowledge distillation", "continual learning catastrophic forgetting",
    "exploration intrinsic motivation", "multi-agent", "imitation learning", "normalizing flows",
    "variational autoencoder", "quantization", '"unbalanced', "c++", "AND OR NOT", "x" * 500,
    "self-supervised representation learning",
]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="ingest repetitions")
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is not here", file=sys.stderr)
        return 0
    ingest_times = []
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.repeat):
            db = open_db(Path(folder) / f"bench{run}.db")
            start = time.perf_counter()
            summary = ingest_files(db, [CORPUS], now=datetime.now(UTC))
            ingest_times.append(time.perf_counter() - start)
            assert summary.added == 2966, summary.describe()
        lookups = []
        queries = (QUERIES * 4)[:100]
        for query in queries:
            start = time.perf_counter()
            search_papers(db, query, 10)
            lookups.append(time.perf_counter() - start)
        digest_times = _digest_times(db)
    lookups_ms = sorted(t * 1000 for t in lookups)
    print(f"ingest {CORPUS.name} (2,966 papers), {args.repeat} runs:")
    print(f"  median {statistics.median(ingest_times):.2f} s  (min {min(ingest_times):.2f} s)")
    print("lookup, 100 queries, limit 10:")
    print(
        f"  median {statistics.median(lookups_ms):.2f} ms  "
        f"p90 {lookups_ms[89]:.2f} ms  max {lookups_ms[-1]:.2f} ms"
    )
    print("digest for one channel, 3 topics, 2,966 papers (preview, 6 builds):")
    print(
        f"  first {digest_times[0]:.2f} s, then median {statistics.median(digest_times[1:]):.2f} s"
    )
    return 0


def _digest_times(db: Any) -> list[float]:
    from config.settings import load_settings
    from db.channels import add_subscription
    from digests.digest import build_digest, ensure_channel
    from digests.topics import load_catalog

    settings, catalog = load_settings({}, dotenv=None), load_catalog()
    now = datetime.now(UTC)
    ensure_channel(db, "local:bench", settings, now)
    for topic in ("offline-rl", "graph-neural-networks", "meta-learning"):
        add_subscription(db, "local:bench", topic, None, "bench", now.isoformat())
    times = []
    for _ in range(6):
        start = time.perf_counter()
        build_digest(db, "local:bench", now, catalog=catalog, settings=settings, preview=True)
        times.append(time.perf_counter() - start)
    return times


if __name__ == "__main__":
    sys.exit(main())
