"""Relevance of topic matching: seed labels (the goal) and ICLR 2021 (a held-out check).

    python3 tasks.py relevance [--threshold T]

1. On the 38 bundled seed papers, labelled by hand in tests/data/seed_labels.toml:
   precision and recall of "score >= threshold" over all (paper, topic) pairs, across
   thresholds, the calibrated threshold, and the misses at the catalog's threshold.
2. On ICLR 2021 (../shared/corpora), scored WITHOUT the authors' keywords, against weak
   labels taken from those keywords (tests/data/iclr2021_keyword_labels.toml).
"""

from __future__ import annotations

import argparse
import logging
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from db import open_db
from db.papers import decode
from digests.ingest import ingest_files
from digests.matching import PaperText, normalise
from digests.relevance import calibrate, load_labels, measure, score_table
from digests.samples import sample_paths
from digests.topics import load_catalog

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "iclr2021-openreview.tsv"


def seeds(threshold: float) -> None:
    db = open_db(":memory:")
    ingest_files(db, sample_paths(), now=datetime.now(UTC))
    papers = [decode(row) for row in db.query("select * from papers")]
    catalog = load_catalog()
    table = score_table(load_labels(ROOT / "tests/data/seed_labels.toml", papers), catalog)
    positives = sum(1 for row in table if row[3])
    print(
        f"Seeds: {len({row[0] for row in table})} papers x {len(catalog.topics)} topics, "
        f"{positives} relevant pairs"
    )
    print("  threshold  precision  recall   TP  FP  FN")
    for value in (2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0):
        m = measure(table, value)
        mark = "  <- catalog" if value == threshold else ""
        print(
            f"  {value:9.1f}  {m.precision:9.3f}  {m.recall:6.3f}  {m.true_positives:3d} "
            f"{m.false_positives:3d} {m.false_negatives:3d}{mark}"
        )
    best = calibrate(table, 0.9)
    print(
        f"  calibrated (best F1 at precision >= 0.9): threshold {best.threshold}, "
        f"precision {best.precision}, recall {best.recall}"
    )
    print(f"  errors at {threshold}:")
    for key, topic, value, relevant in sorted(table, key=lambda r: (r[1], -r[2])):
        if (value >= threshold) != relevant:
            kind = "false positive" if value >= threshold else "missed"
            print(f"    {kind:14s} {topic:24s} {value:5.2f}  {key[:48]}")


def iclr(threshold: float) -> None:
    if not CORPUS.is_file():
        print(f"ICLR 2021: skipped, {CORPUS} is not here")
        return
    db = open_db(":memory:")
    ingest_files(db, [CORPUS], now=datetime.now(UTC))
    catalog = load_catalog()
    labels = tomllib.loads((ROOT / "tests/data/iclr2021_keyword_labels.toml").read_text())
    papers = [decode(row) for row in db.query("select * from papers where keywords != '[]'")]
    print(
        f"\nICLR 2021 held-out check: {len(papers)} papers with author keywords, "
        "scored without them"
    )
    print("  topic                     labelled  selected  precision  recall")
    totals = [0, 0, 0]
    for topic_id, keywords in labels.items():
        topic = catalog.get(topic_id)
        assert topic is not None, topic_id
        wanted = {normalise(k) for k in keywords}
        labelled = selected = hits = 0
        for paper in papers:
            relevant = any(normalise(k) in wanted for k in paper["keywords"])
            text = PaperText.of({**paper, "keywords": [], "id": None})  # uncached: no keywords
            chosen = topic.score(text) >= threshold
            labelled += relevant
            selected += chosen
            hits += relevant and chosen
        totals = [totals[0] + labelled, totals[1] + selected, totals[2] + hits]
        precision = hits / selected if selected else 1.0
        recall = hits / labelled if labelled else 1.0
        print(f"  {topic_id:24s}  {labelled:8d}  {selected:8d}  {precision:9.2f}  {recall:6.2f}")
    print(
        f"  {'all topics':24s}  {totals[0]:8d}  {totals[1]:8d}  "
        f"{totals[2] / totals[1]:9.2f}  {totals[2] / totals[0]:6.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threshold", type=float, default=None)
    args = parser.parse_args()
    threshold = args.threshold if args.threshold is not None else load_catalog().threshold
    seeds(threshold)
    iclr(threshold)


if __name__ == "__main__":
    main()
