"""Ranking and selection metrics for the relevance harness (bench/relevance.py).

Pure functions over paper ids, so they can be checked by hand
(tests/bench/test_relevance_harness.py).
A ranking is a list of ids, best first; `relevant` is the set of ids judged relevant.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable, Sequence

log = logging.getLogger(__name__)


def average_precision(ranking: Sequence[str], relevant: set[str]) -> float:
    """Mean of the precision at the rank of each relevant paper; a relevant paper the
    ranking leaves out counts as found at no rank (precision 0)."""
    found, total = 0, 0.0
    for rank, paper_id in enumerate(ranking, start=1):
        if paper_id in relevant:
            found += 1
            total += found / rank
    return total / len(relevant) if relevant else 0.0


def precision_at(ranking: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the first k places holding a relevant paper (a short ranking's empty
    places count as misses, so it cannot gain by returning less)."""
    return sum(1 for paper_id in ranking[:k] if paper_id in relevant) / k


def ndcg_at(ranking: Sequence[str], relevant: set[str], k: int) -> float:
    """Binary-gain nDCG@k: DCG = sum of 1/log2(rank+1) over relevant papers in the first
    k, divided by the DCG of a perfect ranking (min(k, |relevant|) hits first)."""
    if not relevant:
        return 0.0
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, paper_id in enumerate(ranking[:k], start=1)
        if paper_id in relevant
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(relevant)) + 1))
    return dcg / ideal


def success_at(ranking: Sequence[str], target: str, k: int) -> float:
    """1.0 when `target` is among the first k, else 0.0."""
    return 1.0 if target in ranking[:k] else 0.0


def rank_by(scores: dict[str, float]) -> list[str]:
    """Ids with a positive score, best first; ties by id so every run ranks alike.
    Papers scoring 0 are not retrieved (every method is treated the same way)."""
    return [
        key for key, value in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])) if value > 0
    ]


def half(key: str) -> str:
    """The deterministic half a paper belongs to: "calibrate" or "report", from a hash
    of its source id (stable across runs, machines and Python versions)."""
    return "report" if hashlib.sha256(key.encode("utf-8")).digest()[0] & 1 else "calibrate"


def keyword_matches(keyword: str, patterns: Iterable[str]) -> bool:
    """The labelling rule: a pattern of 3 characters or fewer must equal the
    (case-folded, trimmed) keyword; a longer one matches as a substring."""
    keyword = keyword.strip().lower()
    return any(keyword == p if len(p) <= 3 else p in keyword for p in patterns)


def pooled_selection(pairs: Iterable[tuple[float, bool]], threshold: float) -> tuple[float, float]:
    """(precision, recall) of "score >= threshold" over (score, relevant) decisions.
    Nothing selected counts as precision 1.0; nothing relevant as recall 1.0."""
    tp = fp = fn = 0
    for value, relevant in pairs:
        chosen = value >= threshold
        tp += chosen and relevant
        fp += chosen and not relevant
        fn += relevant and not chosen
    return (tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
