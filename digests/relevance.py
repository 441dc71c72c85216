"""Measure topic matching against hand labels: precision, recall, and the threshold.

Each (paper, catalog topic) pair is one decision: the paper is selected for the topic
when its score reaches the threshold. Labels say which pairs are right.
`calibrate()` tries thresholds halfway between consecutive observed scores (so no
paper sits exactly on the line), keeps those whose precision reaches the target,
and picks the best F1 among them; ties go to the lower threshold.
"""

from __future__ import annotations

import itertools
import logging
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from digests.matching import PaperText
from digests.topics import Catalog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Labelled:
    key: str
    text: PaperText
    topics: frozenset[str]


@dataclass(frozen=True)
class Measure:
    threshold: float
    precision: float
    recall: float
    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def load_labels(path: Path, papers: Sequence[Mapping[str, Any]]) -> list[Labelled]:
    """Match each label's `find` phrase to exactly one paper's abstract."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    labelled = []
    for entry in data["paper"]:
        found = [paper for paper in papers if entry["find"] in paper["abstract"]]
        if len(found) != 1:
            raise ValueError(f"{path}: {entry['find']!r} matches {len(found)} papers, not 1")
        labelled.append(Labelled(entry["find"], PaperText.of(found[0]), frozenset(entry["topics"])))
    return labelled


def score_table(
    labelled: Sequence[Labelled], catalog: Catalog
) -> list[tuple[str, str, float, bool]]:
    """(paper key, topic id, score, labelled relevant) for every pair."""
    return [
        (item.key, topic.id, topic.score(item.text), topic.id in item.topics)
        for item in labelled
        for topic in catalog.topics
    ]


def measure(table: Sequence[tuple[str, str, float, bool]], threshold: float) -> Measure:
    tp = sum(1 for _, _, score, relevant in table if relevant and score >= threshold)
    fp = sum(1 for _, _, score, relevant in table if not relevant and score >= threshold)
    fn = sum(1 for _, _, score, relevant in table if relevant and score < threshold)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return Measure(threshold, round(precision, 3), round(recall, 3), tp, fp, fn)


def calibrate(table: Sequence[tuple[str, str, float, bool]], min_precision: float = 0.9) -> Measure:
    """The threshold with the best F1 among those at or above the target precision."""
    scores = sorted({score for _, _, score, _ in table if score > 0})
    candidates = [round((low + high) / 2, 2) for low, high in itertools.pairwise(scores)]
    measures = [measure(table, threshold) for threshold in candidates or scores]
    good = [m for m in measures if m.precision >= min_precision] or measures
    return max(good, key=lambda m: (round(m.f1, 6), -m.threshold))
