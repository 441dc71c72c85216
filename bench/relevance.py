"""Relevance of topic matching: seed labels (the goal) and ICLR 2021 (a held-out check).

    python3 tasks.py relevance [--threshold T]

1. On the 38 bundled seed papers, labelled by hand in tests/data/seed_labels.toml:
   precision and recall of "score >= threshold" over all (paper, topic) pairs, across
   thresholds, the calibrated threshold, and the misses at the catalog's threshold.
2. On ICLR 2021 (../shared/corpora), scored WITHOUT the authors' keywords, against weak
   labels taken from those keywords (tests/data/iclr2021_keyword_labels.toml).
3. `find` on ICLR 2021 (issue 12's "Set A"): the file ingested WITHOUT its keywords
   column, each of 12 topics asked as a `find` query; a paper is relevant when one of its
   keywords matches one of the topic's patterns (a pattern of 3 characters or fewer must
   equal the keyword, a longer one is a substring of it); papers without keywords are
   left out. Mean average precision over the whole ranking `search_papers` returns,
   beside plain FTS5 bm25 (the words ORed, title weight 5) on the same database.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import tempfile
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


# Issue 12's Set A: (topic, find query, keyword patterns).
SET_A = [
    ("offline RL", "offline reinforcement learning",
     ("offline reinforcement", "offline rl", "batch reinforcement", "batch rl")),
    ("multi-agent RL", "multi-agent reinforcement learning", ("multi-agent", "multiagent", "marl")),
    ("RLHF / preference / IRL", "learning from human preferences and feedback",
     ("human feedback", "preference", "inverse reinforcement", "reward learning", "rlhf")),
    ("diffusion", "diffusion models",
     ("diffusion", "score-based", "score matching", "denoising score")),
    ("any RL", "reinforcement learning", ("reinforcement learning", "deep rl", "rl")),
    ("GNNs", "graph neural networks", ("graph neural", "gnn", "graph convolution")),
    ("federated", "federated learning", ("federated",)),
    ("contrastive / self-supervised", "self-supervised contrastive learning",
     ("contrastive", "self-supervised", "self supervised")),
    ("meta-learning / few-shot", "meta-learning for few-shot learning",
     ("meta-learning", "meta learning", "few-shot", "few shot")),
    ("adversarial robustness", "adversarial robustness",
     ("adversarial robust", "adversarial examples", "adversarial attack", "adversarial training")),
    ("continual learning", "continual learning and catastrophic forgetting",
     ("continual", "lifelong", "catastrophic forgetting")),
    ("NAS", "neural architecture search", ("architecture search", "nas")),
]  # fmt: skip


def keyword_matches(keyword: str, patterns: tuple[str, ...]) -> bool:
    keyword = keyword.strip().lower()
    return any(keyword == p if len(p) <= 3 else p in keyword for p in patterns)


def average_precision(ranking: list[str], relevant: set[str]) -> float:
    found, total = 0, 0.0
    for rank, paper_id in enumerate(ranking, start=1):
        if paper_id in relevant:
            found += 1
            total += found / rank
    return total / len(relevant) if relevant else 0.0


def find_map() -> dict[str, float] | None:
    """Set A's `find` MAP and its FTS5 reference, printed as a table; None without ICLR."""
    from db.search import search_papers, tokens

    if not CORPUS.is_file():
        print(f"find on ICLR 2021: skipped, {CORPUS} is not here")
        return None
    csv.field_size_limit(1 << 24)
    with CORPUS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    keywords = {
        row["paper_id"]: [k for k in row["keywords"].split(",") if k.strip()] for row in rows
    }
    db = open_db(":memory:")
    with tempfile.TemporaryDirectory() as folder:
        blind = Path(folder) / "iclr2021-no-keywords.tsv"
        with blind.open("w", encoding="utf-8", newline="") as out:
            columns = [c for c in rows[0] if c != "keywords"]
            writer = csv.DictWriter(out, columns, delimiter="\t", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        ingest_files(db, [blind], now=datetime.now(UTC))
    # A file's id column becomes an alias of the stored paper.
    stored = {
        row["alias"]: row["paper_id"]
        for row in db.query("select alias, paper_id from paper_aliases")
        if row["alias"] in keywords
    }
    labelled = {stored[source]: words for source, words in keywords.items() if source in stored}
    judged = {paper for paper, words in labelled.items() if words}
    total = db.execute("select count(*) from papers").fetchone()[0]
    print(f"\nfind on ICLR 2021 (Set A): {len(judged)} papers with keywords, ingested without them")
    print("  topic                           relevant  find AP  FTS5 OR AP")
    ours, theirs = [], []
    for topic, query, patterns in SET_A:
        relevant = {p for p in judged if any(keyword_matches(k, patterns) for k in labelled[p])}
        ranking = [hit.paper["id"] for hit in search_papers(db, query, total)]
        ranking = [p for p in ranking if p in judged]
        expression = " OR ".join(f'"{w}"' for w in tokens(query))
        reference = [
            row["id"]
            for row in db.query(
                "select papers.id from papers_fts join papers on papers.rowid = papers_fts.rowid"
                " where papers_fts match ? order by bm25(papers_fts, 5.0, 1.0, 1.0, 1.0)",
                [expression],
            )
            if row["id"] in judged
        ]
        ours.append(average_precision(ranking, relevant))
        theirs.append(average_precision(reference, relevant))
        print(f"  {topic:30s}  {len(relevant):8d}  {ours[-1]:7.3f}  {theirs[-1]:10.3f}")
    result = {
        "find_map": round(sum(ours) / len(ours), 3),
        "fts5_or_map": round(sum(theirs) / len(theirs), 3),
    }
    print(f"  {'MAP':30s}  {'':8s}  {result['find_map']:7.3f}  {result['fts5_or_map']:10.3f}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threshold", type=float, default=None)
    args = parser.parse_args()
    threshold = args.threshold if args.threshold is not None else load_catalog().threshold
    seeds(threshold)
    iclr(threshold)
    found = find_map()
    if found is not None:
        print(json.dumps({"bench": "relevance", **found}))


if __name__ == "__main__":
    main()
