"""Text processing on hostile inputs, against an ordinary abstract of the same size.

    .venv/bin/python -m bench.text [--repeat N]

For each input: the median CPU time of N runs of everything ingest does to an
abstract (cleanup, derived title and TL;DR, links, id), and its ratio to a reference
input of the same length (a real seed abstract repeated). Issue 9, item 14.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from datetime import UTC, datetime

from digests.enrich.paper import build_row
from digests.enrich.text import plain_text
from digests.records import PaperRecord
from tests.conftest import seed_abstracts

log = logging.getLogger(__name__)

MEGABYTE = 1_000_000
INPUTS = {
    '"We propose X e.g. " x 4000 (72 KB)': "We propose X e.g. " * 4000,
    '"We propose X e.g. " x 10000 (180 KB)': "We propose X e.g. " * 10000,
    '"*a " x 20000 (60 KB)': "*a " * 20000,
    '"*a " x 1 MB': ("*a " * MEGABYTE)[:MEGABYTE],
    '"\\(" x 1 MB': ("\\(" * MEGABYTE)[:MEGABYTE],
    '"[" x 1 MB': "[" * MEGABYTE,
    '"$\\sqrt{" x 1 MB': ("$\\sqrt{" * MEGABYTE)[:MEGABYTE],
    '"*a* " x 1 MB': ("*a* " * MEGABYTE)[:MEGABYTE],
    '"\\(A\\u2003[" x 1 MB': ("\\(A\u2003[" * MEGABYTE)[:MEGABYTE],
}


def cpu_seconds(text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        plain_text.cache_clear()
        start = time.thread_time()
        build_row(PaperRecord(abstract=text, source="bench", line=1), datetime.now(UTC))
        times.append(time.thread_time() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ordinary = " ".join(seed_abstracts())
    print(f"median CPU seconds of {args.repeat} runs; ratio to a seed-abstract text of equal size")
    for name, text in INPUTS.items():
        reference = (ordinary * (len(text) // len(ordinary) + 1))[: len(text)]
        hostile, normal = cpu_seconds(text, args.repeat), cpu_seconds(reference, args.repeat)
        print(
            f"  {name:40} {hostile:7.3f} s   reference {normal:7.3f} s   x{hostile / normal:5.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
