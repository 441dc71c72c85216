"""What the archive's full-text query for a learned topic costs and keeps.

The digest's archive (backlog) reads a topic's 2,000 best full-text matches (bm25) and
scores those. For each catalog topic with learned terms, this asks for: all its terms,
its hand phrases only, and its hand phrases plus its N strongest learned terms; and
prints, for each, how many of the topic's 5 best papers above the line (found by scoring
every match of all its terms) are among the 5 best of the 2,000 read, and the CPU
seconds of the rank-2,000 queries (median of `--repeats`, all topics summed, the
variants interleaved). Read only: the cached database is opened `mode=ro`.

    nice -n 5 python3 -m bench.archive_search --papers 100000
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from collections.abc import Sequence

from bench.corpus import ready_db
from db.candidates import ARCHIVE_COLUMNS
from db.papers import decode
from digests.digest import ARCHIVE_LIMIT, ARCHIVE_PAGES
from digests.matching import PaperText
from digests.topic_model import load_models
from digests.topics import Topic, load_catalog

DEPTH = ARCHIVE_LIMIT * ARCHIVE_PAGES


def _ranked(db: sqlite3.Connection, phrases: Sequence[str], limit: int | None) -> list[int]:
    expression = " OR ".join(f'"{p}"' for p in dict.fromkeys(p.strip() for p in phrases) if p)
    sql = "select rowid from papers_fts where papers_fts match ? order by rank"
    if limit:
        sql += f" limit {limit}"
    return [row[0] for row in db.execute(sql, [expression]).fetchall()]


def _best(db: sqlite3.Connection, topic: Topic, rowids: list[int], line: float) -> list[str]:
    found = []
    for start in range(0, len(rowids), 900):
        chunk = rowids[start : start + 900]
        cursor = db.execute(
            f"select {ARCHIVE_COLUMNS} from papers where rowid in ({','.join('?' * len(chunk))})",
            chunk,
        )
        names = [d[0] for d in cursor.description]
        for values in cursor.fetchall():
            row = decode(dict(zip(names, values, strict=True)))
            value = topic.score(PaperText.of(row))
            if value >= line:
                found.append((value, str(row["id"])))
    return [paper_id for _, paper_id in sorted(found, reverse=True)[:5]]


def run(papers: int, strongest: Sequence[int], repeats: int) -> dict[str, object]:
    db = sqlite3.connect(f"file:{ready_db(papers)}?mode=ro", uri=True)
    catalog, hand = load_catalog(), load_catalog(learned=False)
    models = load_models()
    kept: dict[str, int] = {}
    cpu: dict[str, float] = {}
    missed: dict[str, dict[str, int]] = {}
    for topic_id, model in models.items():
        topic, hand_topic = catalog.get(topic_id), hand.get(topic_id)
        if topic is None or hand_topic is None:
            continue
        phrases = [t.phrase for t in hand_topic.terms]
        # the strongest learned terms that are not hand phrases (as Topic.search_phrases)
        learned = [
            t.phrase
            for t in sorted(model.terms, key=lambda t: -t.weight)
            if t.phrase not in phrases
        ]
        variants = {"all": [t.phrase for t in topic.terms], "hand": phrases}
        variants["search_phrases"] = list(topic.search_phrases)
        variants.update({f"hand+{n}": phrases + learned[:n] for n in strongest})
        truth = set(_best(db, topic, _ranked(db, variants["all"], None), catalog.threshold))
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(repeats):
            for name, searched in variants.items():
                started = time.process_time()
                _ranked(db, searched, DEPTH)
                times[name].append(time.process_time() - started)
        for name, searched in variants.items():
            got = len(
                truth & set(_best(db, topic, _ranked(db, searched, DEPTH), catalog.threshold))
            )
            kept[name] = kept.get(name, 0) + got
            cpu[name] = cpu.get(name, 0.0) + statistics.median(times[name])
            if got < len(truth):
                missed.setdefault(name, {})[topic_id] = len(truth) - got
    return {
        "bench": "archive_search",
        "papers": papers,
        "topics": len(models),
        "kept_of": 5 * len(models),
        "kept": kept,
        "cpu_s": {name: round(value, 2) for name, value in cpu.items()},
        "missed": missed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--strongest", type=int, nargs="*", default=[3, 5, 10])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(args.papers, args.strongest, args.repeats)))


if __name__ == "__main__":
    main()
