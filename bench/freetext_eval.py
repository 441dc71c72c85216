"""Free-text topics against catalog topics on ICLR 2021 (Set A, "free text").

    .venv/bin/python -m bench.freetext_eval [--half calibrate|report|all]

Each of the 12 Set A topics is typed as free text, as `subscribe "<query>"` would take
it (a text that is a catalog name becomes that catalog topic; any other becomes
`custom_topic(text, catalog)`), and scored on the ICLR 2021 papers that have author
keywords (2,613 of 2,966), without their keywords.

This is a tool to tune with, so by default it measures only the "calibrate" half
(`bench.relevance_metrics.half` of the OpenReview id): `python3 tasks.py relevance`
reports on the other half, which nothing may be tuned on. `--half report` is for a
final check only; `--half all` for the figures quoted before the split existed.

A paper is relevant when one of its author keywords matches the topic's patterns (a
pattern of 3 characters or fewer must equal the keyword, a longer one is a substring).
Printed per topic: average precision over the score ranking (papers scoring 0 are not
retrieved), and precision/recall of "score >= catalog threshold", for the free text and
for the catalog topic it stands for. Ends with one JSON line.
Skips (prints why, exits 0) without ../shared/corpora.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.relevance_metrics import (
    average_precision,
    half,
    keyword_matches,
    pooled_selection,
    rank_by,
)
from db import open_db
from db.papers import decode
from digests.ingest import ingest_files
from digests.matching import PaperText
from digests.topics import Catalog, Topic, custom_topic, load_catalog

log = logging.getLogger(__name__)

CORPUS = (
    Path(__file__).resolve().parent.parent.parent
    / "shared"
    / "corpora"
    / ("iclr2021-openreview.tsv")
)

# Set A: (topic, query typed as free text, keyword patterns, catalog topic id or
# None where the catalog has no such topic).
SET_A = [
    ("offline RL", "offline reinforcement learning",
     ("offline reinforcement", "offline rl", "batch reinforcement", "batch rl"), "offline-rl"),
    ("multi-agent RL", "multi-agent reinforcement learning",
     ("multi-agent", "multiagent", "marl"), "multi-agent-rl"),
    ("RLHF / preference / IRL", "learning from human preferences and feedback",
     ("human feedback", "preference", "inverse reinforcement", "reward learning", "rlhf"), "rlhf"),
    ("diffusion", "diffusion models",
     ("diffusion", "score-based", "score matching", "denoising score"), "diffusion-models"),
    ("any RL", "reinforcement learning", ("reinforcement learning", "deep rl", "rl"), None),
    ("GNNs", "graph neural networks", ("graph neural", "gnn", "graph convolution"),
     "graph-neural-networks"),
    ("federated", "federated learning", ("federated",), "federated-learning"),
    ("contrastive / self-supervised", "self-supervised contrastive learning",
     ("contrastive", "self-supervised", "self supervised"), "self-supervised-learning"),
    ("meta-learning / few-shot", "meta-learning for few-shot learning",
     ("meta-learning", "meta learning", "few-shot", "few shot"), "meta-learning"),
    ("adversarial robustness", "adversarial robustness",
     ("adversarial robust", "adversarial examples", "adversarial attack", "adversarial training"),
     "adversarial-robustness"),
    ("continual learning", "continual learning and catastrophic forgetting",
     ("continual", "lifelong", "catastrophic forgetting"), "continual-learning"),
    ("NAS", "neural architecture search", ("architecture search", "nas"), None),
]  # fmt: skip


def as_typed(text: str, catalog: Catalog) -> Topic:
    """The topic `subscribe "<text>"` follows (see digests.commands.context.resolve_topic)."""
    return catalog.by_name(text) or custom_topic(text, catalog)


def evaluate(
    papers: list[tuple[PaperText, list[str]]],
    catalog: Catalog,
    typed: Callable[[str, Catalog], Topic] = as_typed,
) -> dict[str, object]:
    rows = []
    print("  topic                          free AP  cat AP   diff | free P/R    cat P/R   | as")
    # Papers by their place, zero-padded so that ties rank in input order (`rank_by`).
    ids = [f"{i:08d}" for i in range(len(papers))]
    for name, query, patterns, catalog_id in SET_A:
        relevant = [any(keyword_matches(k, patterns) for k in words) for _, words in papers]
        wanted = {i for i, r in zip(ids, relevant, strict=True) if r}
        measured = {}
        topics = {"free": typed(query, catalog)}
        if catalog_id is not None:
            topics["catalog"] = catalog.get(catalog_id)  # type: ignore[assignment]
        for kind, topic in topics.items():
            scores = [topic.score(text) for text, _ in papers]
            ranking = rank_by(dict(zip(ids, scores, strict=True)))
            precision, recall = pooled_selection(
                zip(scores, relevant, strict=True), catalog.threshold
            )
            measured[kind] = {
                "ap": round(average_precision(ranking, wanted), 3),
                "precision": round(precision, 2),
                "recall": round(recall, 2),
            }
        free, cat = measured["free"], measured.get("catalog")
        diff = f"{free['ap'] - cat['ap']:+.3f}" if cat else "   -  "
        cat_text = f"{cat['ap']:.3f}" if cat else "  -  "
        cat_pr = f"{cat['precision']:.2f}/{cat['recall']:.2f}" if cat else "    -    "
        print(
            f"  {name:30s} {free['ap']:.3f}   {cat_text}  {diff} | "
            f"{free['precision']:.2f}/{free['recall']:.2f}   {cat_pr} | {topics['free'].id}"
        )
        rows.append({"topic": name, "as": topics["free"].id, **measured})
    paired = [row for row in rows if "catalog" in row]
    free_map = sum(row["free"]["ap"] for row in paired) / len(paired)  # type: ignore[index]
    cat_map = sum(row["catalog"]["ap"] for row in paired) / len(paired)  # type: ignore[index]
    worst = min(row["free"]["ap"] - row["catalog"]["ap"] for row in paired)  # type: ignore[index]
    print(
        f"  MAP over the {len(paired)} topics with a catalog topic: free {free_map:.3f}, "
        f"catalog {cat_map:.3f}; worst topic {worst:+.3f}"
    )
    return {
        "topics": rows,
        "free_map": round(free_map, 3),
        "catalog_map": round(cat_map, 3),
        "worst_gap": round(worst, 3),
        "free_map_12": round(sum(row["free"]["ap"] for row in rows) / len(rows), 3),  # type: ignore[index]
    }


def load_papers(part: str = "calibrate") -> list[tuple[PaperText, list[str]]]:
    """ICLR 2021 papers with author keywords: their text without keywords, and keywords;
    only those of half `part` ("calibrate" or "report", as the harness splits them by
    OpenReview id), or all of them for "all"."""
    if part not in ("calibrate", "report", "all"):
        raise ValueError(f"part must be calibrate, report or all, not {part!r}")
    csv.field_size_limit(1 << 24)
    db = open_db(":memory:")
    ingest_files(db, [CORPUS], now=datetime.now(UTC))
    openreview = _openreview_ids()  # once: it reads the whole TSV
    source = {
        row["paper_id"]: row["alias"]
        for row in db.query("select alias, paper_id from paper_aliases")
        if row["alias"] in openreview
    }
    return [
        (PaperText.of({**paper, "keywords": [], "id": None}), list(paper["keywords"]))
        for paper in (
            decode(row) for row in db.query("select * from papers where keywords != '[]'")
        )
        if part == "all" or half(source[paper["id"]]) == part
    ]


def _openreview_ids() -> set[str]:
    with CORPUS.open(encoding="utf-8", newline="") as handle:
        return {row["paper_id"] for row in csv.DictReader(handle, delimiter="\t")}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--half",
        choices=("calibrate", "report", "all"),
        default="calibrate",
        help="which papers to measure (default: the calibrate half, the one to tune on)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is not here")
        return 0
    papers = load_papers(args.half)
    print(
        f"Free text vs catalog topics on ICLR 2021 ({args.half} half): {len(papers)} papers, "
        "scored without keywords"
    )
    result = evaluate(papers, load_catalog())
    del result["topics"]  # printed above
    print(json.dumps({"bench": "freetext", **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
