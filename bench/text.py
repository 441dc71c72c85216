"""Text processing on hostile inputs, against an ordinary abstract of the same size.

    .venv/bin/python -m bench.text [--repeat N] [--only TEXT]

For each input: the median CPU time of N runs of one step (everything ingest does to an
abstract, LaTeX maths rendering, or a platform's escaping), and its ratio to a reference
input of the same length run through the same step (the seed abstracts repeated).
`--only` keeps the cases whose "step: input" line contains TEXT.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from digests.enrich.paper import build_row
from digests.records import PaperRecord
from digests.render.escape import discord_escape, slack_escape, with_code
from digests.text import latex_to_text, plain_text
from tests.conftest import seed_abstracts

log = logging.getLogger(__name__)

MEGABYTE = 1_000_000


def _mb(piece: str) -> str:
    return (piece * (MEGABYTE // len(piece) + 1))[:MEGABYTE]


def _ingest(text: str) -> None:
    plain_text.cache_clear()
    build_row(PaperRecord(abstract=text, source="bench", line=1), datetime.now(UTC))


STEPS: dict[str, Callable[[str], object]] = {
    "ingest": _ingest,
    "latex_to_text": latex_to_text,
    "discord_escape": discord_escape,
    "slack_escape": slack_escape,
    "with_code(discord_escape)": lambda text: with_code(text, discord_escape),
}
CASES: list[tuple[str, str, str]] = [  # step, label, input
    ("ingest", '"We propose X e.g. " x 4000 (72 KB)', "We propose X e.g. " * 4000),
    ("ingest", '"We propose X e.g. " x 10000 (180 KB)', "We propose X e.g. " * 10000),
    ("ingest", '"*a " x 20000 (60 KB)', "*a " * 20000),
    ("ingest", '"*a " x 1 MB', _mb("*a ")),
    ("ingest", '"\\(" x 1 MB', _mb("\\(")),
    ("ingest", '"[" x 1 MB', "[" * MEGABYTE),
    ("ingest", '"$\\sqrt{" x 1 MB', _mb("$\\sqrt{")),
    ("ingest", '"*a* " x 1 MB', _mb("*a* ")),
    ("ingest", '"\\(A\\u2003[" x 1 MB', _mb("\\(A\u2003[")),
    ("latex_to_text", '"\\sqrt{" x 1 MB', _mb("\\sqrt{")),
    ("latex_to_text", '"\\frac{" x 1 MB', _mb("\\frac{")),
    ("latex_to_text", '"\\textbf{" x 1 MB', _mb("\\textbf{")),
    ("latex_to_text", '"_" x 1 MB', "_" * MEGABYTE),
    ("latex_to_text", '"^" x 1 MB', "^" * MEGABYTE),
    ("latex_to_text", '"_{" x 1 MB', _mb("_{")),
    ("latex_to_text", '"{é_" x 1 MB', _mb("{é_")),
    ("latex_to_text", '"\\sqrt{" then "}" (nested) 1 MB', "\\sqrt{" * 142_857 + "}" * 142_858),
    ("latex_to_text", '"\\hat{x}" x 1 MB', _mb("\\hat{x}")),
    ("latex_to_text", '"_\\alpha" x 1 MB', _mb("_\\alpha")),
    ("latex_to_text", '"x" x 1 MB', "x" * MEGABYTE),
    ("discord_escape", '"\\n" x 8000', "\n" * 8000),
    ("discord_escape", '"\\n" x 16000', "\n" * 16000),
    ("discord_escape", '"\\n" x 1 MB', "\n" * MEGABYTE),
    ("discord_escape", '"\\n #" x 1 MB', _mb("\n #")),
    ("discord_escape", '"\\n#" x 1 MB', _mb("\n#")),
    ("discord_escape", '"*" x 1 MB', "*" * MEGABYTE),
    ("discord_escape", '"*_@everyone<@" x 1 MB', _mb("*_@everyone<@")),
    ("with_code(discord_escape)", '"`" x 1 MB', "`" * MEGABYTE),
    ("slack_escape", '"<&>" x 1 MB', _mb("<&>")),
    ("slack_escape", '"\\n" x 1 MB', "\n" * MEGABYTE),
]


def cpu_seconds(step: Callable[[str], object], text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        step(text)
        times.append(time.thread_time() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help='cases whose "step: input" contains this')
    args = parser.parse_args()
    ordinary = " ".join(seed_abstracts())
    print(f"median CPU seconds of {args.repeat} runs; ratio to a seed-abstract text of equal size")
    for step_name, label, text in CASES:
        name = f"{step_name}: {label}"
        if args.only not in name:
            continue
        step = STEPS[step_name]
        reference = (ordinary * (len(text) // len(ordinary) + 1))[: len(text)]
        hostile, normal = (
            cpu_seconds(step, text, args.repeat),
            cpu_seconds(step, reference, args.repeat),
        )
        ratio = hostile / max(normal, 1e-9)
        print(f"  {name:55} {hostile:7.3f} s   reference {normal:7.3f} s   x{ratio:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
