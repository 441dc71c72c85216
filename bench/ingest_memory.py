"""Peak memory of `ingest` on a large generated TSV, or on blank lines.

    .venv/bin/python -m bench.ingest_memory [--mb 60]
    .venv/bin/python -m bench.ingest_memory --blank [--mb 20] [--repeat 3]

Builds a TSV of about --mb megabytes from the ICLR 2021 corpus rows (each copy of a row
gets its own words, so every row is a new paper), then runs `paperboy ingest` on it in
a child process and reports that child's peak RSS (resource.getrusage) and time, beside
the same for the 4 MB corpus itself (the reference).

`--blank`: `paperboy ingest` of --mb MB of newlines (a seed file), of a CSV header and
--mb MB of blank rows, and of --mb MB of newlines before one JSON Lines paper, beside the
reference: a TSV of the same size of real rows. Each file is ingested --repeat times, in
turn, each run in its own child process; prints one JSON line with the medians of peak
RSS, CPU seconds (user + system, the child and its worker) and elapsed seconds per file,
and each blank file's CPU as a fraction of the reference's (`cpu_ratio`); `bench_rss_mb`
is this process's own peak, from which a child's count starts.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import statistics
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


def build_blank(folder: Path, megabytes: int) -> dict[str, Path]:
    """The blank-line files of `--blank`, each about `megabytes` MB, written a megabyte at
    a time: a child's peak RSS starts from this process's at the fork."""
    paper = '{"abstract": "We propose BlankNet, a model that reads past blanks."}\n'
    files = {
        "newlines": (folder / "blank.txt", "", ""),
        "csv_blank_rows": (folder / "blank.csv", "title,abstract\n", ""),
        "newlines_then_jsonl": (folder / "blank.jsonl", "", paper),
    }
    megabyte = "\n" * 1_000_000
    for path, head, tail in files.values():
        with path.open("w", encoding="utf-8") as out:
            out.write(head)
            for _ in range(megabytes):
                out.write(megabyte)
            out.write(tail)
    return {name: path for name, (path, _, _) in files.items()}


def measure_child(path: Path, folder: Path) -> dict[str, float | str]:
    """Peak RSS (MB), CPU and elapsed seconds of one `paperboy ingest` of `path` in a new
    database, from the child's own rusage (wait4: the child and the worker it waited for),
    and the last line it printed."""
    store = Path(tempfile.mkdtemp(dir=folder))
    db = store / f"{path.stem}.db"
    code = (
        "import sys; from bot.cli import main; "
        f"sys.argv = ['paperboy', 'ingest', {str(path)!r}, '--db', {str(db)!r}]; main()"
    )
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped by wait4
    elapsed = time.perf_counter() - start
    shutil.rmtree(store)
    return {
        "rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "elapsed_s": elapsed,
        "said": (output.strip().splitlines() or [""])[-1][-120:],
    }


def blank_lines(corpus: Path, megabytes: int, repeat: int) -> dict[str, object]:
    """The `--blank` figures (see the module doc)."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        files = build_blank(folder, megabytes)
        files["reference_real_rows"] = folder / "real.tsv"
        build(corpus, files["reference_real_rows"], megabytes)
        runs: dict[str, list[dict[str, float | str]]] = {name: [] for name in files}
        for _ in range(repeat):  # in turn, so that other load falls on every file
            for label, path in files.items():
                runs[label].append(measure_child(path, folder))
        sizes = {label: path.stat().st_size for label, path in files.items()}
    result: dict[str, object] = {"bench": "ingest_memory.blank", "mb": megabytes, "repeat": repeat}
    # A child's peak RSS counts from this process's at the fork: the floor of every figure.
    result["bench_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    reference_cpu = statistics.median(float(r["cpu_s"]) for r in runs["reference_real_rows"])
    for label, measured in runs.items():
        figures: dict[str, object] = {"bytes": sizes[label]}
        for key in ("rss_mb", "cpu_s", "elapsed_s"):
            figures[key] = round(statistics.median(float(r[key]) for r in measured), 2)
        figures["cpu_ratio"] = round(float(figures["cpu_s"]) / reference_cpu, 3)  # type: ignore[arg-type]
        figures["said"] = measured[-1]["said"]
        result[label] = figures
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=None, help="size of the generated files")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the rows to copy")
    parser.add_argument("--blank", action="store_true", help="blank lines (see the doc)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per file with --blank")
    args = parser.parse_args()
    corpus = args.corpus
    if not corpus.is_file():
        print(f"skipped: {corpus} is not here", file=sys.stderr)
        return 0
    if args.blank:
        print(json.dumps(blank_lines(corpus, args.mb or 20, args.repeat)))
        return 0
    args.mb = args.mb or 60
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
