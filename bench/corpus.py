"""A deterministic synthetic corpus of N papers, built from the ICLR 2021 abstracts.

    .venv/bin/python -m bench.corpus --papers 100000          # JSONL, cached
    .venv/bin/python -m bench.corpus --papers 100000 --db     # and a ready database

The sentences, titles and keywords come from `../shared/corpora/iclr2021-openreview.tsv`,
read at run time (never copied into the project). Each generated paper takes one real
paper's sentences (so its words hang together as a topic does), swaps in one or two
sentences from other papers, and gets a title made from its base paper's title with
one word from another title; so term statistics, topical clusters and abstract lengths
look like real ML papers', and every abstract and title is distinct. Authors come from
synthetic name pools; each paper has an arXiv-style id (`2501.00001`), as a year of
arXiv would.

The same `--papers N` and `--seed` give the same papers, byte for byte, on any machine.
Files go to `bench/.cache/` (ignored by git), or `$PAPERBOY_BENCH_CACHE`:
`corpus-{N}.jsonl`, and with `--db`, `papers-{N}.db`: Paperboy's own `ingest_files`
run on that JSONL at a fixed clock, reused while the generator is unchanged (a newer
schema's migrations are applied to it in place; `--fresh` ingests it again).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import os
import random
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "corpora" / "iclr2021-openreview.tsv"
GENERATOR_VERSION = "1"
SEED = 2021
# The clock the ready databases are ingested at: a benchmark's "new" papers come after it.
INGESTED_AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_TITLE_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
_STOP = frozenset("with from that this their for and the into over under using via".split())  # noqa: SIM905


@dataclass(frozen=True)
class SourcePaper:
    title: str
    keywords: tuple[str, ...]
    sentences: tuple[str, ...]


def cache_dir() -> Path:
    folder = Path(os.environ.get("PAPERBOY_BENCH_CACHE") or ROOT / "bench" / ".cache")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def available() -> bool:
    """Whether `../shared` has the source corpus (a user's clone does not)."""
    return SOURCE.is_file()


def load_source(path: Path = SOURCE) -> list[SourcePaper]:
    """The real papers the generator draws from, in file order."""
    csv.field_size_limit(1 << 24)
    found = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            sentences = tuple(s.strip() for s in _SENTENCE.split(row["abstract"]) if s.strip())
            if len(sentences) < 2 or not row["title"].strip():
                continue
            keywords = tuple(k.strip() for k in row["keywords"].split(",") if k.strip())
            found.append(SourcePaper(" ".join(row["title"].split()), keywords, sentences))
    return found


def _surnames(rng: random.Random, count: int) -> list[str]:
    onsets = "b c d f g h j k l m n p r s t v w z br ch gr kh sh st th tr zh".split()  # noqa: SIM905
    vowels = "a e i o u ai ao ei ia ou".split()  # noqa: SIM905
    codas = ["", "", "n", "ng", "r", "s", "l", "k", "m", "t"]
    names: set[str] = set()
    while len(names) < count:
        parts = rng.randint(2, 3)
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(parts))
        names.add((word + rng.choice(codas)).capitalize())
    return sorted(names)


class Generator:
    """Makes papers one at a time, deterministically from `seed`."""

    def __init__(self, source: list[SourcePaper], seed: int = SEED) -> None:
        self.source = source
        self.rng = random.Random(seed)
        self.pool = [sentence for paper in source for sentence in paper.sentences]
        self.title_words = [
            word
            for paper in source
            for word in _TITLE_WORD.findall(paper.title)
            if word.lower() not in _STOP
        ]
        self.surnames = _surnames(random.Random(seed + 1), 40_000)
        self.given = _surnames(random.Random(seed + 2), 3_000)
        self.seen_abstracts: set[bytes] = set()
        self.seen_titles: set[bytes] = set()

    def _unique(self, seen: set[bytes], text: str) -> bool:
        key = hashlib.blake2b(text.lower().encode(), digest_size=8).digest()
        if key in seen:
            return False
        seen.add(key)
        return True

    def _abstract(self, base: SourcePaper) -> str:
        rng = self.rng
        sentences = list(base.sentences)
        for _ in range(rng.randint(1, 2)):
            sentences[rng.randrange(1, len(sentences))] = rng.choice(self.pool)
        if rng.random() < 0.5 and len(sentences) > 3:
            del sentences[rng.randrange(1, len(sentences))]
        abstract = " ".join(sentences)
        while not self._unique(self.seen_abstracts, abstract):
            abstract += " " + rng.choice(self.pool)
        return abstract

    def _title(self, base: SourcePaper) -> str:
        rng = self.rng
        words = base.title.split()
        for attempt in range(20):
            changed = list(words)
            spots = [i for i, w in enumerate(changed) if _TITLE_WORD.fullmatch(w.strip(":,"))]
            if spots:
                spot = rng.choice(spots)
                changed[spot] = rng.choice(self.title_words)
            if attempt >= 10:  # rare: a short title whose variants are used up
                changed.append(rng.choice(self.title_words))
            title = " ".join(changed)
            if self._unique(self.seen_titles, title):
                return title
        title = f"{base.title} ({rng.randrange(10**9)})"
        self._unique(self.seen_titles, title)
        return title

    def paper(self, number: int) -> dict[str, Any]:
        """Paper `number` (1-based); call in order, the generator's state moves on."""
        rng = self.rng
        base = self.source[rng.randrange(len(self.source))]
        authors = [
            f"{rng.choice(self.given)} {rng.choice(self.surnames)}"
            for _ in range(rng.randint(1, 6))
        ]
        # Real arXiv ids: YYMM.NNNNN, up to 99,999 a month.
        block, serial = divmod(number - 1, 99_999)
        arxiv = f"{25 + block // 12}{1 + block % 12:02d}.{serial + 1:05d}"
        return {
            "id": arxiv,
            "title": self._title(base),
            "abstract": self._abstract(base),
            "authors": authors,
            "url": f"https://arxiv.org/abs/{arxiv}",
            "venue": "arXiv",
            "year": 2025,
        }


def generate(count: int, seed: int = SEED, start: int = 1) -> Iterator[dict[str, Any]]:
    """Papers `start` .. `start + count - 1` of the corpus for `seed` (earlier ones are
    generated and dropped, so paper k is the same whatever `start`)."""
    generator = Generator(load_source(), seed)
    for number in range(1, start + count):
        paper = generator.paper(number)
        if number >= start:
            yield paper


def jsonl_path(count: int, seed: int = SEED) -> Path:
    """The corpus of `count` papers as JSON Lines, written once and cached."""
    path = cache_dir() / f"corpus-{count}-s{seed}-g{GENERATOR_VERSION}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".part")
        with partial.open("w", encoding="utf-8") as out:
            for paper in generate(count, seed):
                out.write(json.dumps(paper, ensure_ascii=False) + "\n")
        partial.replace(path)
    return path


def _schema_version() -> str:
    text = (ROOT / "db" / "migrations.py").read_bytes()
    return hashlib.sha256(text).hexdigest()[:8]


def ready_db(count: int, seed: int = SEED, fresh: bool = False) -> Path:
    """A database holding the corpus of `count` papers, made by Paperboy's own
    `ingest_files` at INGESTED_AT, cached until the generator changes (migrations added
    since it was built are applied to it).
    Benchmarks that write should copy it first (`copy_db`)."""
    from db import open_db
    from digests.ingest import ingest_files

    stem = f"papers-{count}-s{seed}-g{GENERATOR_VERSION}"
    if not fresh:
        built = [
            found
            for found in cache_dir().glob(stem + "-*.db")
            if re.fullmatch(re.escape(stem) + r"-[0-9a-f]{8}\.db", found.name)
        ]
        if built:
            # Migrations are append-only: a database built under an older schema is
            # brought up to date in place (minutes at most), not ingested again.
            newest = max(built, key=lambda found: found.stat().st_mtime)
            open_db(newest).close()
            return newest
    path = cache_dir() / f"{stem}-{_schema_version()}.db"
    source = jsonl_path(count, seed)
    partial = path.with_suffix(".part.db")
    for leftover in partial.parent.glob(partial.name + "*"):
        leftover.unlink()
    start = time.perf_counter()
    db = open_db(partial)
    summary = ingest_files(db, [source], now=INGESTED_AT)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    log.info("ready_db %d: %s in %.0f s", count, summary.describe(), time.perf_counter() - start)
    partial.replace(path)
    return path


def copy_db(source: Path, target: Path) -> Path:
    """A private copy of a ready database (SQLite's backup API: consistent, WAL included)."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--db", action="store_true", help="also build the ready database")
    parser.add_argument("--fresh", action="store_true", help="rebuild the database")
    args = parser.parse_args()
    if not available():
        print(f"skipped: {SOURCE} is not here", file=sys.stderr)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    path = jsonl_path(args.papers, args.seed)
    result: dict[str, Any] = {
        "bench": "corpus",
        "papers": args.papers,
        "jsonl": str(path),
        "jsonl_mb": round(path.stat().st_size / 1e6, 1),
    }
    if args.db:
        db_path = ready_db(args.papers, args.seed, args.fresh)
        result |= {"db": str(db_path), "db_mb": round(db_path.stat().st_size / 1e6, 1)}
    result["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
