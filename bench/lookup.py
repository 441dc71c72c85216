"""Lookup latency in-process: Paperboy's `search_papers` against two references, one run.

    .venv/bin/python -m bench.lookup --papers 100000 [--per-kind 80] [--db PATH] [--extra]

On `bench.corpus.ready_db(N)` (or `--db`, or with `--quick` a database made in minutes
with only the columns a lookup reads: `quick_db`), times `db.search.search_papers(db, q, 10)` over
4 x `--per-kind` deterministic queries of four kinds, all derived from the ICLR 2021
source the corpus is generated from (`bench.corpus.load_source()`), so the same queries
run at every size:

- `method`: method names, the part before the colon of a source title ("CoDA: ...");
- `topic`: the most frequent 2-3-word author keywords ("graph neural networks");
- `common`: the words (4+ letters, not stop words) in the most source papers ("learning");
- `rare`: words found in exactly one source paper, evenly spaced in alphabetical order.

With `--extra`, after them, Paperboy alone (`by_kind`, and `cpu.paperboy_extra`) on two
more kinds: `author`, authors' names from the store, and `minus`, the topic queries
leaving out a common word (`extra_queries`).

In the same run, query by query and in rotating order (so a noisy neighbour hurts all
alike), two references:

- `fts5_or`: plain FTS5, the query's words quoted and ORed, `order by rank limit 10`
  (bm25, no column weights), rowid and title only, on its own read-only connection;
- `brute_force` (only when N <= --brute-max, 100k by default): an arxiv-sanity-style
  scan in pure Python. Every paper's title + abstract as a tf-idf vector (lower-cased
  `\\w+` words, sublinear tf 1 + log(tf), smooth idf log((1 + n) / (1 + df)) + 1, L2
  normalised, as scikit-learn's TfidfVectorizer(sublinear_tf=True) makes them) kept in
  memory as one dict per paper; a query is vectorised the same way and dotted with every
  paper's vector, the top 10 kept with a heap. Building the vectors is not timed.

Prints one JSON line: p50/p95/p99 (ms, wall clock) for each, per kind for Paperboy, and
the ratios reference / Paperboy (above 1: Paperboy is faster). `cpu` has the same
percentiles of the calling thread's CPU time: on a loaded machine a wall-clock tail is
mostly waiting for a core, which CPU time leaves out. `waits` says, for each engine, how
many lookups the kernel preempted (an involuntary context switch during the lookup: the
thread waited for a core), how many blocked (a voluntary one: a read from disk, a lock),
how many mapped pages were read from disk (major faults), and the percentiles of the
lookups with none of these. Objects made while setting up (the
brute force's vectors) are frozen out of the garbage collector's passes before timing.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import logging
import math
import re
import resource
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

KINDS = ("method", "topic", "common", "rare")
EXTRA_KINDS = ("author", "minus")  # with --extra
LIMIT = 10
_WORD = re.compile(r"\w+")
_METHOD = re.compile(r"^([A-Za-z][\w-]{1,30})\s*:")
_STOP = frozenset(
    """about above after again against also among an and are based been being both but
    can could does doing each from further have having here into itself more most much
    only other over same should such than that their them then there these they this
    those through under until very what when where which while will with within would
    your yours show shows shown paper propose proposed approach method methods results
    using use used well work works first given however""".split()  # noqa: SIM905
)


def queries(per_kind: int) -> list[tuple[str, str]]:
    """(kind, query) pairs, `per_kind` of each kind, the same on every machine."""
    from bench.corpus import load_source

    source = load_source()
    methods = sorted(
        {m.group(1) for paper in source if (m := _METHOD.match(paper.title))}, key=str.lower
    )
    keyword_counts = Counter(
        k.lower() for paper in source for k in set(paper.keywords) if 2 <= len(k.split()) <= 3
    )
    topics = [k for k, _ in sorted(keyword_counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    df: Counter[str] = Counter()
    for paper in source:
        text = (paper.title + " " + " ".join(paper.sentences)).lower()
        df.update({w for w in _WORD.findall(text) if w.isalpha()})
    common = [
        w
        for w, _ in sorted(df.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(w) >= 4 and w not in _STOP
    ]
    rare = sorted(w for w, n in df.items() if n == 1 and len(w) >= 6)

    def spread(items: list[str]) -> list[str]:
        step = max(1, len(items) // per_kind)
        return items[::step][:per_kind]

    chosen = {
        "method": spread(methods),
        "topic": topics[:per_kind],
        "common": common[:per_kind],
        "rare": spread(rare),
    }
    return [(kind, q) for kind in KINDS for q in chosen[kind]]


def extra_queries(db: Any, per_kind: int) -> list[tuple[str, str]]:
    """`--extra`: authors' names from the store (every other one "First Last", the others
    the last name alone), and topic queries that leave out a common word
    ("graph neural networks -learning"), the same for a given store."""
    step = max(1, db.execute("select max(rowid) from papers").fetchone()[0] // per_kind)
    rows = db.execute(
        "select authors from papers where rowid % ? = 0 and authors != '[]' limit ?",
        [step, per_kind],
    ).fetchall()
    names = [json.loads(row[0])[0] for row in rows]
    authors = [name if i % 2 else name.split()[-1] for i, name in enumerate(names)]
    topics = [q for kind, q in queries(per_kind) if kind == "topic"]
    common = [q for kind, q in queries(per_kind) if kind == "common"]
    minus = [f"{topic} -{common[i % 8]}" for i, topic in enumerate(topics)]
    return [("author", q) for q in authors] + [("minus", q) for q in minus]


class BruteForce:
    """The arxiv-sanity-style reference: tf-idf vectors in memory, one dot product per paper."""

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        counts = [Counter(_WORD.findall(text.lower())) for _, text in rows]
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        n = len(rows)
        self.idf = {w: math.log((1 + n) / (1 + d)) + 1 for w, d in df.items()}
        self.ids = [paper_id for paper_id, _ in rows]
        self.vectors = [self._vector(c) for c in counts]

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        weights = {w: (1 + math.log(tf)) * self.idf[w] for w, tf in counts.items() if w in self.idf}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        return {w: v / norm for w, v in weights.items()}

    def search(self, query: str, limit: int = LIMIT) -> list[str]:
        q = self._vector(Counter(_WORD.findall(query.lower())))
        if not q:
            return []
        terms = list(q.items())
        scored = (
            (sum(vec.get(t, 0.0) * w for t, w in terms), i) for i, vec in enumerate(self.vectors)
        )
        return [self.ids[i] for s, i in heapq.nlargest(limit, scored) if s > 0]


def fts5_or(conn: sqlite3.Connection, query: str) -> list[Any]:
    words = list(dict.fromkeys(_WORD.findall(query.lower())))
    if not words:
        return []
    expression = " OR ".join(f'"{w}"' for w in words)
    sql = "select rowid, title from papers_fts where papers_fts match ? order by rank limit ?"
    return conn.execute(sql, (expression, LIMIT)).fetchall()


def percentiles(times: list[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)

    def at(q: float) -> float:
        return round(ms[min(len(ms) - 1, math.ceil(q * len(ms)) - 1)], 2)

    return {"p50": round(statistics.median(ms), 2), "p95": at(0.95), "p99": at(0.99)}


def quick_db(count: int) -> Path:
    """A database of the corpus' `count` papers for lookups only, made in minutes rather
    than by Paperboy's ingest: the columns a lookup reads (title; method name and its forms
    from the title prefix, as ingest derives them; the abstract as its plain text, with no
    LaTeX cleanup, derived TL;DR or links; the authors), FTS5 filled by one 'rebuild'. Cached."""
    import hashlib

    from bench.corpus import GENERATOR_VERSION, SEED, _schema_version, cache_dir, jsonl_path
    from db import open_db
    from digests.enrich.paper import method_names, title_prefix_name

    path = cache_dir() / f"quick-a-{count}-s{SEED}-g{GENERATOR_VERSION}-{_schema_version()}.db"
    if path.exists():
        return path
    partial = path.with_suffix(".part.db")
    for leftover in partial.parent.glob(partial.name + "*"):
        leftover.unlink()
    db = open_db(partial)
    for trigger in ("papers_ai", "papers_au", "papers_ad"):  # FTS5 is rebuilt once below
        db.execute(f"drop trigger {trigger}")
    columns = "id, title, method, names, name_keys, abstract, abstract_text, url, venue, year"
    sql = f"insert into papers ({columns}, authors, added_at) values ({', '.join('?' * 12)})"
    with jsonl_path(count).open(encoding="utf-8") as lines, db.conn:
        batch = []
        for line in lines:
            paper = json.loads(line)
            method = title_prefix_name(paper["title"])
            names, keys = method_names(method, None)
            abstract = paper["abstract"]
            digest = hashlib.blake2b(abstract.encode(), digest_size=8).hexdigest()
            batch.append(
                ("p" + digest, paper["title"], method, names or None, keys or None, abstract,
                 abstract, paper["url"], paper["venue"], paper["year"],
                 json.dumps(paper["authors"]), "2026-01-05T09:00:00Z")
            )  # fmt: skip
            if len(batch) == 20_000:
                db.conn.executemany(sql, batch)
                batch = []
        db.conn.executemany(sql, batch)
    with db.conn:
        db.execute("insert into papers_fts (papers_fts) values ('rebuild')")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    partial.replace(path)
    return path


def prepare(db: Any) -> float:
    """Brings the search index beside the store up to date (built in full the first time
    on a database: `prepare_s` then is the build); seconds it took."""
    from db import text_index

    start = time.perf_counter()
    while True:
        try:
            text_index.ready(db)
            return time.perf_counter() - start
        except text_index.IndexUnavailable as exc:  # another process is building it
            if time.perf_counter() - start > 1800:
                raise
            log.warning("waiting for the search index: %s", exc)
            time.sleep(5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--per-kind", type=int, default=80, help="queries of each kind")
    parser.add_argument("--brute-max", type=int, default=100_000)
    parser.add_argument("--db", type=Path, help="a ready database (default: ready_db(N))")
    parser.add_argument(
        "--extra",
        action="store_true",
        help="also time authors' names and queries with a -word (Paperboy only)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="use quick_db(N) (lookup columns only), not ready_db(N)",
    )
    args = parser.parse_args()
    from bench.corpus import available, ready_db

    if not available():
        print("skipped: ../shared/corpora is not here", file=sys.stderr)
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from db import open_db
    from db.search import search_papers

    path = args.db or (quick_db(args.papers) if args.quick else ready_db(args.papers))
    db = open_db(path, create=False)
    papers = db.execute("select count(*) from papers").fetchone()[0]
    prepared = prepare(db)
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    engines: dict[str, Callable[[str], Any]] = {
        "paperboy": lambda q: search_papers(db, q, LIMIT),
        "fts5_or": lambda q: fts5_or(raw, q),
    }
    brute_seconds = None
    if papers <= args.brute_max:
        start = time.perf_counter()
        rows = [
            (r[0], f"{r[1]} {r[2]}")
            for r in raw.execute("select id, title, abstract_text from papers order by rowid")
        ]
        brute = BruteForce(rows)
        del rows
        brute_seconds = round(time.perf_counter() - start, 1)
        engines["brute_force"] = brute.search
    work = queries(args.per_kind)
    names = list(engines)
    extra = extra_queries(db, args.per_kind) if args.extra else []
    # The brute force keeps millions of objects: without this, the collector's full passes
    # over them land in whichever lookup is timed then (tens of ms), not in the lookup.
    gc.collect()
    gc.freeze()
    for _, q in work[:: max(1, len(work) // 10)]:  # warm caches alike
        for name in names:
            engines[name](q)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    by_kind: dict[str, list[float]] = {kind: [] for kind in KINDS + (EXTRA_KINDS if extra else ())}
    # Lookups during which the kernel took the core away (involuntary context switches),
    # the thread blocked (voluntary ones: a read from disk, a lock) or a mapped page was
    # read from disk (major faults): their wall clock includes that wait.
    undisturbed: dict[str, list[float]] = {name: [] for name in names}
    switches: dict[str, int] = dict.fromkeys(names, 0)
    blocked: dict[str, int] = dict.fromkeys(names, 0)
    faults: dict[str, int] = dict.fromkeys(names, 0)
    for number, (kind, q) in enumerate(work):
        for offset in range(len(names)):
            name = names[(number + offset) % len(names)]
            before = resource.getrusage(resource.RUSAGE_THREAD)
            start, start_cpu = time.perf_counter(), time.thread_time()
            engines[name](q)
            cpu[name].append(time.thread_time() - start_cpu)
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_THREAD)
            switched = after.ru_nivcsw - before.ru_nivcsw
            waited = after.ru_nvcsw - before.ru_nvcsw
            faulted = after.ru_majflt - before.ru_majflt
            switches[name] += switched > 0
            blocked[name] += waited > 0
            faults[name] += faulted
            if not switched and not waited and not faulted:
                undisturbed[name].append(elapsed)
            times[name].append(elapsed)
            if name == "paperboy":
                by_kind[kind].append(elapsed)
    if extra:
        from digests.lookup import parse_find

        extra_cpu: list[float] = []
        for kind, q in extra:
            parsed = parse_find(q)
            start, start_cpu = time.perf_counter(), time.thread_time()
            search_papers(db, parsed.words, LIMIT, parsed.excluded)
            extra_cpu.append(time.thread_time() - start_cpu)
            by_kind[kind].append(time.perf_counter() - start)
    ours = percentiles(times["paperboy"])
    result: dict[str, Any] = {
        "bench": "lookup",
        "papers": papers,
        "queries": len(work),
        "per_kind": args.per_kind,
        **ours,
        "by_kind": {kind: percentiles(t) for kind, t in by_kind.items()},
        "prepare_s": round(prepared, 1),
        "reference": {name: percentiles(times[name]) for name in names if name != "paperboy"},
        "cpu": {name: percentiles(cpu[name]) for name in names},
        "waits": {
            name: {
                "preempted": switches[name],
                "blocked": blocked[name],
                "major_faults": faults[name],
                "undisturbed": {"count": len(undisturbed[name])}
                | (percentiles(undisturbed[name]) if undisturbed[name] else {}),
            }
            for name in names
        },
    }
    if extra:
        result["cpu"]["paperboy_extra"] = percentiles(extra_cpu)
    if brute_seconds is not None:
        result["brute_force_build_s"] = brute_seconds
    result["ratio"] = {
        f"{name}_{p}": round(result["reference"][name][p] / max(ours[p], 1e-6), 1)
        for name in result["reference"]
        for p in ("p50", "p95")
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
