"""Peak memory of `ingest` on a large generated TSV (issue 9, item 17).

    .venv/bin/python -m bench.ingest_memory [--mb 60]

Builds a TSV of about --mb megabytes from the ICLR 2021 corpus rows (each copy of a row
gets its own words, so every row is a new paper), then runs `paperboy ingest` on it in
a child process and reports that child's peak RSS (resource.getrusage) and time, beside
the same for the 4 MB corpus itself (the reference).
"""

from __future__ import annotations

import argparse
import logging
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "iclr2021-openreview.tsv"


def build(corpus: Path, target: Path, megabytes: int) -> int:
    header, *rows = corpus.read_text(encoding="utf-8").splitlines()
    keys = header.split("\t")
    id_column, abstract_column = keys.index("paper_id"), keys.index("abstract")
    written, copy = 0, 0
    with target.open("w", encoding="utf-8") as out:
        out.write(header + "\n")
        while written < megabytes * 1_000_000:
            copy += 1
            for row in rows:
                cells = row.split("\t")
                cells[id_column] = f"{cells[id_column]}-{copy}"
                cells[abstract_column] = f"Variant {copy} of this study. {cells[abstract_column]}"
                line = "\t".join(cells) + "\n"
                out.write(line)
                written += len(line.encode("utf-8"))
    return written


def measure(path: Path, folder: Path) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one `paperboy ingest` child process."""
    db = folder / f"{path.stem}.db"
    code = (
        "import sys; from bot.cli import main; "
        f"sys.argv = ['paperboy', 'ingest', {str(path)!r}, '--db', {str(db)!r}]; main()"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest child so far: run the big file last.
    return max(peak, before) / 1024, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=60, help="size of the generated TSV")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the rows to copy")
    args = parser.parse_args()
    corpus = args.corpus
    if not corpus.is_file():
        print(f"skipped: {corpus} is not here", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        big = folder / "large-iclr2021.tsv"
        size = build(corpus, big, args.mb)
        small_rss, small_time = measure(corpus, folder)
        big_rss, big_time = measure(big, folder)
    print(f"reference: {corpus.name} (4 MB): peak RSS {small_rss:.0f} MB, {small_time:.1f} s")
    print(f"generated TSV ({size / 1e6:.0f} MB): peak RSS {big_rss:.0f} MB, {big_time:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
