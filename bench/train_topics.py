"""Learn catalog topics from labelled examples: writes config/topic_models.toml.

    python3 -m bench.train_topics [--corpus PATH] [--out PATH] [--top N] [--precision P]
    python3 -m bench.train_topics --cost   # the matcher's cost, hand vs learned terms

"Learn topics from examples, as arxiv-sanity's tag SVM does". For each catalog
topic with labelled papers, a linear model over the matcher's own features
(`digests.topic_model.features`: every word and word pair of a paper's normalised text,
valued as the matcher values a term): Naive Bayes log-count ratios (the weights of
Wang & Manning's NBSVM), the `TOP_TERMS` strongest positive ones, added to the hand score
with a weight (`MIXES`) chosen by out-of-fold average precision. Its weights are term
weights: the model ships as terms added to the hand terms, scored by the same `Matcher`,
at the same cost per (paper, term). (A logistic regression over the same features, with
or without the hand score as a feature, ranked worse out of fold: docs/dev/relevance.md.)

Data: ICLR 2021 (../shared/corpora/iclr2021-openreview.tsv), ingested without its keywords
column exactly as the relevance harness does (`bench.relevance.load_set_a`), and ONLY its
"calibrate" half (`bench.relevance_metrics.half`): `python3 tasks.py relevance` reports on
the other half. Labels: the harness's keyword patterns (SET_A) for the ten catalog topics
it maps, tests/data/iclr2021_keyword_labels.toml's exact keywords for the others. Each
topic's line (`threshold`) is chosen on out-of-fold scores of the calibrate half (the
model trained on the other folds scores each fold), so it is not set on the papers a
model was fitted to: the best F1 (`LINE_PRECISION`). Nothing of the corpus's text is
written: only words, pairs and numbers. Without the corpus the script says so and exits 0
(a user's clone).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import statistics
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.relevance import CATALOG_FOR, CORPUS, DATA, SET_A, load_set_a
from bench.relevance_metrics import average_precision, rank_by
from digests.matching import Matcher, PaperText, normalise
from digests.relevance import calibrate
from digests.topic_model import MODELS_PATH, features, hand_key
from digests.topics import Catalog, load_catalog

log = logging.getLogger(__name__)

TOP_TERMS = 60  # learned terms kept per topic
SMOOTH = 1.0  # add-one smoothing of the log-count ratios
MIN_SUPPORT = 3  # relevant papers a learned word or pair must occur in
MIXES = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # learned score's weights tried
FOLDS = 4
MIN_POSITIVES = 10  # fewer labelled papers in the calibrate half: hand terms only (robotics,
# 8, learned a line of 24.3 that missed all three robotics seeds)
# A topic's line: the best F1 out of fold, at no precision floor. Lines held to
# precision >= 0.9 per topic (10-70 relevant papers a topic) carried over worst.
LINE_PRECISION = 0.0


def _labels(data: object, catalog: Catalog, ids: Sequence[str]) -> dict[str, set[str]]:
    """{catalog topic id: relevant paper ids among `ids`}."""
    wanted = set(ids)
    labels: dict[str, set[str]] = {}
    for name, _, _ in SET_A:
        mapped = CATALOG_FOR.get(name)
        if mapped and len(mapped) == 1:
            labels[mapped[0]] = data.labels[name] & wanted  # type: ignore[attr-defined]
    extra = tomllib.loads((DATA / "iclr2021_keyword_labels.toml").read_text(encoding="utf-8"))
    for topic_id, words in extra.items():
        if topic_id in labels or catalog.get(topic_id) is None:
            continue
        keys = {normalise(k) for k in words}
        labels[topic_id] = {
            p
            for p in ids
            if any(normalise(k) in keys for k in data.keywords[p])  # type: ignore[attr-defined]
        }
    return labels


def _ratios(rows: Sequence[Mapping[str, float]], ys: Sequence[bool], top: int) -> dict[str, float]:
    """Naive Bayes log-count ratios (Wang & Manning's NBSVM features), the positive ones:
    r = ln((p + a) / |p + a| / ((q + a) / |q + a|)) over the summed feature values p of the
    relevant papers and q of the others, for the `top` words and pairs with the largest
    r x sqrt(relevant papers having it) that at least MIN_SUPPORT relevant papers have
    (one paper's odd words are not its topic's)."""
    pos: Counter[str] = Counter()
    neg: Counter[str] = Counter()
    support: Counter[str] = Counter()
    for x, y in zip(rows, ys, strict=True):
        (pos if y else neg).update(x)
        if y:
            support.update(x.keys())
    vocab = set(pos) | set(neg)
    pos_total = sum(pos.values()) + SMOOTH * len(vocab)
    neg_total = sum(neg.values()) + SMOOTH * len(vocab)
    ranked = []
    for f in pos:
        if support[f] < MIN_SUPPORT:
            continue
        r = math.log((pos[f] + SMOOTH) / pos_total) - math.log((neg[f] + SMOOTH) / neg_total)
        if r > 0:
            ranked.append((r * math.sqrt(support[f]), f, r))
    ranked.sort(reverse=True)
    return {f: r for _, f, r in ranked[:top]}


def _ap(
    ids: Sequence[str],
    hand: Sequence[float],
    learned: Sequence[float],
    relevant: set[str],
    mix: float,
) -> float:
    return average_precision(
        rank_by({p: hand[i] + mix * learned[i] for i, p in enumerate(ids)}), relevant
    )


def _score(x: Mapping[str, float], model: Mapping[str, float]) -> float:
    return sum(model.get(f, 0.0) * v for f, v in x.items())


def train(
    corpus: Path, top: int = TOP_TERMS, precision: float = LINE_PRECISION
) -> tuple[dict[str, dict[str, object]], str]:
    """{topic id: {"threshold", "hand", "terms"}} and a report of the out-of-fold figures."""
    data = load_set_a(corpus)
    if data is None:
        raise FileNotFoundError(corpus)
    catalog = load_catalog(learned=False)
    ids = data.half("calibrate")
    texts = {p: PaperText.of(data.papers[p]) for p in ids}
    rows = [features(texts[p]) for p in ids]
    labels = _labels(data, catalog, ids)
    models: dict[str, dict[str, object]] = {}
    gains: list[tuple[float, float]] = []
    lines = [
        f"calibrate half: {len(ids)} papers; out-of-fold ({FOLDS} folds) figures",
        "topic                       pos  AP hand  AP model  mix   line  P     R",
    ]
    for topic_id, relevant in labels.items():
        topic = catalog.get(topic_id)
        if topic is None or len(relevant) < MIN_POSITIVES:
            continue
        ys = [p in relevant for p in ids]
        hand = [topic.score(texts[p]) for p in ids]
        # Out-of-fold learned scores: each fold scored by the ratios of the others.
        learned = [0.0] * len(ids)
        for fold in range(FOLDS):
            ratios = _ratios(
                [r for i, r in enumerate(rows) if i % FOLDS != fold],
                [y for i, y in enumerate(ys) if i % FOLDS != fold],
                top,
            )
            for i in range(fold, len(ids), FOLDS):
                learned[i] = _score(rows[i], ratios)

        # How much of the learned score to add to the hand score: the best OOF AP.
        aps = {m: _ap(ids, hand, learned, relevant, m) for m in MIXES}
        mix = max(MIXES, key=lambda m: (round(aps[m], 4), -m))
        table = [(p, topic_id, hand[i] + mix * learned[i], ys[i]) for i, p in enumerate(ids)]
        line = calibrate(table, precision)
        lines.append(
            f"{topic_id:26s} {len(relevant):4d}  {aps[0.0]:7.3f}  {aps[mix]:8.3f}  {mix:4.2f} "
            f"{line.threshold:6.2f} {line.precision:.2f} {line.recall:.2f}"
        )
        gains.append((aps[0.0], aps[mix]))
        ratios = _ratios(rows, ys, top) if mix else {}
        models[topic_id] = {
            "threshold": line.threshold,
            "hand": 1.0,
            "hand_terms": hand_key(topic.terms),
            "terms": {f: round(mix * r, 4) for f, r in ratios.items()},
        }
    lines.append(
        f"mean AP over {len(gains)} topics: hand {sum(g[0] for g in gains) / len(gains):.3f}, "
        f"with the learned terms {sum(g[1] for g in gains) / len(gains):.3f}"
    )
    return models, "\n".join(lines)


def write(models: Mapping[str, Mapping[str, object]], out: Path, command: str) -> None:
    """The model file: one table per topic, its terms strongest first."""
    lines = [
        "# Learned topic models: generated by `" + command + "`, do not edit by hand.",
        "# Each topic: `threshold` (its line on this model's score), `hand` (the weight of",
        "# the hand terms of config/topics.toml) and `terms` (learned phrase weights, added",
        "# to the hand terms); `hand_terms` (a hash of the hand terms it was learned with: a",
        "# topic whose hand terms differ keeps them alone). Learned on the calibrate half of",
        "# ICLR 2021 only; see",
        "# docs/dev/relevance.md 'Learned topic models'.",
        "",
    ]
    for topic_id, model in models.items():
        lines += [f"[{topic_id}]", f"threshold = {model['threshold']}", f"hand = {model['hand']}"]
        lines.append(f'hand_terms = "{model["hand_terms"]}"')
        lines.append(f"[{topic_id}.terms]")
        terms = model["terms"]
        assert isinstance(terms, dict)
        for phrase, weight in sorted(terms.items(), key=lambda kv: -abs(kv[1])):
            lines.append(f'"{phrase.strip()}" = {weight}')
        lines.append("")
    out.write_text("\n".join(lines), encoding="utf-8")


def cost(papers: int = 5000, repeats: int = 5) -> dict[str, float]:
    """CPU microseconds a paper for `Matcher.scores` over every catalog topic, hand terms
    alone vs with the learned terms, interleaved (median of `repeats`), on synthetic
    papers (`bench.corpus`)."""
    from bench.corpus import jsonl_path

    texts = []
    with jsonl_path(10_000).open(encoding="utf-8") as handle:
        for line in itertools.islice(handle, papers):
            row = json.loads(line)
            texts.append(PaperText.of({"title": row["title"], "abstract": row["abstract"]}))
    matchers = {
        name: Matcher({t.id: t.terms for t in load_catalog(learned=learned).topics})
        for name, learned in (("hand", False), ("learned", True))
    }
    times: dict[str, list[float]] = {name: [] for name in matchers}
    for _ in range(repeats):
        for name, matcher in matchers.items():
            started = time.process_time()
            for text in texts:
                matcher.scores(text)
            times[name].append((time.process_time() - started) / len(texts) * 1e6)
    result = {f"{name}_us": round(statistics.median(v), 1) for name, v in times.items()}
    result["ratio"] = round(result["learned_us"] / result["hand_us"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=MODELS_PATH)
    parser.add_argument("--top", type=int, default=TOP_TERMS)
    parser.add_argument("--precision", type=float, default=LINE_PRECISION)
    parser.add_argument("--cost", action="store_true", help="measure the matcher's cost only")
    args = parser.parse_args()
    if args.cost:
        print(json.dumps({"bench": "topic_cost", **cost()}))
        return
    if not args.corpus.is_file():
        print(f"train_topics: no corpus at {args.corpus}; nothing learned (needs ../shared)")
        return
    started = time.process_time()
    models, report = train(args.corpus, args.top, args.precision)
    write(models, args.out, "python3 -m bench.train_topics")
    print(report)
    print(f"{len(models)} topics -> {args.out} ({time.process_time() - started:.1f} s CPU)")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    main()
