"""The digest scores a topic refined by feedback on its original's papers with the terms
whose first word each paper has (`_Window._score_some`): exactly `score`'s values, so
the speed-up changes no pick; and `refine` given a cache of `features` (as
`digests.learning` passes one per batch) refines exactly as without it."""

from __future__ import annotations

import random
import statistics
from dataclasses import replace

import pytest

from digests.digest import _Window
from digests.matching import PaperText, Term, normalise, score
from digests.topic_model import features, refine
from digests.topics import Topic, custom_topic

WORDS = [
    "offline",
    "rl",
    "url",
    "reinforcement",
    "learning",
    "robot",
    "grasping",
    "data",
    "the",
    "of",
    "q",
    "policy",
]


def texts(rng: random.Random, count: int) -> dict[str, PaperText]:
    def some(size: int) -> str:
        return normalise(" ".join(rng.choice(WORDS) for _ in range(size)))

    return {
        f"p{n}": PaperText(
            some(rng.randint(0, 6)), some(rng.randint(0, 3)), some(rng.randint(0, 40))
        )
        for n in range(count)
    }


def window(found: dict[str, PaperText], threshold: float) -> _Window:
    papers = {paper_id: {"id": paper_id, "added_at": "2026-01-01"} for paper_id in found}
    return _Window("2026-01-02", threshold, (), papers, found)


@pytest.mark.parametrize("threshold", [0.0, 1.5, 4.0])
def test_scoring_only_the_terms_a_paper_has_the_first_word_of_gives_scores_exactly(
    threshold: float,
) -> None:
    rng = random.Random(13)
    found = texts(rng, 300)
    win = window(found, threshold)
    padded = [
        Term.of(" ".join(rng.sample(WORDS, rng.randint(1, 3))), rng.uniform(-2.0, 3.0))
        for _ in range(60)
    ]
    for terms in (
        tuple(padded),
        # Not padded (made by hand): "rl" is in "url" and "offline rl" alike.
        (*padded[:20], Term("rl", 1.25), *padded[20:]),
    ):
        expected = [(p, v) for p, t in found.items() if (v := score(t, terms)) >= threshold]
        assert win._score_some([terms], list(found)) == {terms: expected}
        # Several topics at once (the refined topics of one original), each as alone.
        other = tuple(reversed(padded))
        both = win._score_some([terms, other], list(found))
        assert both[terms] == expected
        alone = [(p, v) for p, t in found.items() if (v := score(t, other)) >= threshold]
        assert both[other] == alone


def test_refine_with_cached_features_is_refine() -> None:
    rng = random.Random(7)
    found = list(texts(rng, 12).values())
    topic = custom_topic("offline reinforcement learning")
    cache: dict[PaperText, dict[str, float]] = {}

    def cached(text: PaperText) -> dict[str, float]:
        return cache.setdefault(text, features(text))

    plain = refine(topic, found[:6], found[6:])
    assert refine(topic, found[:6], found[6:], featurize=cached) == plain
    assert refine(topic, found[:6], found[6:], featurize=cached) == plain  # from the cache
    assert plain.terms != topic.terms


def reference_refine(topic: Topic, positives: list[PaperText], negatives: list[PaperText]) -> Topic:
    """`refine` as first written (every phrase of every paper summed, then filtered)."""
    scale = statistics.median([abs(t.weight) for t in topic.terms])
    shift: dict[str, float] = {}
    support: dict[str, list[int]] = {}
    for side, papers, weight in ((0, positives, 0.75), (1, negatives, -0.75)):
        for paper in papers:
            for phrase, value in features(paper).items():
                shift[phrase] = shift.get(phrase, 0.0) + weight * value / len(papers)
                support.setdefault(phrase, [0, 0])[side] += 1
    moved = sorted(
        ((abs(v), p) for p, v in shift.items() if max(support[p]) >= 2 and v), reverse=True
    )[:40]
    weights = {term.phrase: term.weight for term in topic.terms}
    for _, phrase in moved:
        weights[phrase] = round(weights.get(phrase, 0.0) + scale * shift[phrase], 4)
    return replace(topic, terms=tuple(Term(p, w) for p, w in weights.items() if w))


@pytest.mark.parametrize("seed", range(5))
def test_refine_sums_only_shared_phrases_with_the_same_results(seed: int) -> None:
    rng = random.Random(seed)
    found = list(texts(rng, 14).values())
    topic = custom_topic("offline reinforcement learning for robot policy")
    for positives, negatives in ((found[:7], found[7:]), (found[:5], []), ([], found[5:9])):
        assert refine(topic, positives, negatives) == reference_refine(topic, positives, negatives)
