"""Experiment: catalog topics scored with meaning too (docs/dev/relevance.md, "Final push").

    /work/semvenv/bin/python -m bench.semantic_topics [--corpus PATH]

Needs the semantic extra (numpy and, for texts not yet cached, the model). Each catalog
topic gets a centroid: the mean embedding (all-MiniLM-L6-v2, `digests.semantic.paper_text`)
of the papers of the **calibrate half** of Set A labelled with it (the labels
`bench.train_topics` learns from). A paper's semantic score for the topic is its cosine to
the centroid, standardised over the calibrate half (z). Fusions of that with the lexical
score (the catalog topic as shipped, learned terms included; the line is 4.05 for every
topic) measured on the **report half**, as `bench.relevance` measures the catalog:

- lexical: the shipped catalog (the harness's "catalog" row);
- semantic: z alone;
- rrf: reciprocal rank fusion (k = 60) of the lexical ranking (papers scoring > 0) and the
  semantic one;
- blend w: lexical + w x 4.05 x z (the lexical line is 4.05, so w is "lines per standard
  deviation"); w chosen by the mean out-of-fold AP on the calibrate half (4 folds, each
  fold's centroid from the other three);
- selection of the blend: one line for every topic, the best pooled F1 of the out-of-fold
  calibrate scores, applied to the report half.

Set A topics map to catalog topics as in `bench.relevance.CATALOG_FOR` ("any RL" is the best
of seven RL topics, each with its own centroid when it has >= MIN_POSITIVES labelled
papers; NAS is free text, so it stays lexical). Vectors are cached in bench/.cache/ by a
hash of the text (`--cache`): the first run encodes the 2,613 abstracts (~290 CPU s), later
runs take seconds. Prints a table and one JSON line. Without the corpus or the extra it
says so and exits 0.
"""

from __future__ import annotations

import argparse
import array
import hashlib
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.relevance import CATALOG_FOR, CORPUS, SET_A, catalog_topics, load_set_a
from bench.relevance_metrics import average_precision, mean, ndcg_at, precision_at, rank_by
from bench.train_topics import _labels
from digests import semantic
from digests.matching import PaperText
from digests.topics import load_catalog

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache" / f"semantic-text-vectors-{semantic.MODEL}.bin"
FOLDS = 4
MIN_POSITIVES = 5  # labelled calibrate papers a centroid needs
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
LINE = 4.05  # the catalog's line; learned topics are scaled to it
RRF_K = 60
DIGEST_TOP = 5  # papers a digest shows a topic


class CacheError(ValueError):
    """A vector cache file that cannot be read as one: its message names the file and says
    what is wrong with it (one line, for the user)."""


class CachedEncoder:
    """The extra's model (or `model`) behind a disk cache keyed by a SHA-1 of the text: a
    JSON line {"model", "dim", "keys"}, then the float32 vectors in that order (no numpy
    needed to read it). Texts not in the cache are encoded and added.

    A cache written for another model or dimension is not used (and is replaced on the
    next save). A file that is not such a cache, or is cut short or damaged (a header
    that is not that JSON, keys that are not distinct SHA-1s, vector bytes that do not
    match the keys, a value that is not finite) raises CacheError instead: read as it is,
    its vectors would be shifted, short or NaN, and every score measured with them wrong
    without a word."""

    name = semantic.MODEL
    dim = 384

    def __init__(self, path: Path, model: semantic.Encoder | None = None) -> None:
        self.path = path
        self.vectors: dict[str, array.array[float]] = {}
        self.encoded = 0
        self.cpu = 0.0
        self._model = model
        if model is not None:
            self.name, self.dim = model.name, model.dim
        if path.is_file():
            self.vectors = self._read(path, self.name, self.dim)

    @staticmethod
    def _read(path: Path, name: str, dim: int) -> dict[str, array.array[float]]:
        """The vectors of the cache at `path` for model `name` of `dim` ({} when it holds
        another model's); CacheError when the file is not a whole cache."""

        def broken(why: str) -> CacheError:
            return CacheError(f"{path}: not a usable vector cache ({why}); delete it to rebuild")

        with path.open("rb") as handle:
            first = handle.readline()
            rest = handle.read()
        try:
            header = json.loads(first)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise broken("its first line is not a JSON header") from None
        if not isinstance(header, dict) or not isinstance(header.get("keys"), list):
            raise broken('its header has no "keys" list')
        if header.get("model") != name or header.get("dim") != dim:
            return {}  # another model's vectors: not these texts' vectors
        keys = header["keys"]
        if not all(isinstance(k, str) and len(k) == 40 for k in keys) or len(set(keys)) != len(
            keys
        ):
            raise broken("its keys are not distinct SHA-1 hex digests")
        data = array.array("f")
        if len(rest) != len(keys) * dim * data.itemsize:
            raise broken(
                f"{len(keys)} keys of {dim} float32 need {len(keys) * dim * data.itemsize} "
                f"bytes after the header, it has {len(rest)}: cut short or damaged"
            )
        data.frombytes(rest)
        if not all(math.isfinite(x) for x in data):
            raise broken("a vector holds a value that is not a finite number")
        return {k: data[i * dim : (i + 1) * dim] for i, k in enumerate(keys)}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if self.key(t) not in self.vectors]
        if missing:
            if self._model is None:
                self._model = semantic.SentenceEncoder()
            started = time.process_time()
            for start in range(0, len(missing), 256):
                chunk = missing[start : start + 256]
                for text, vector in zip(chunk, self._model.encode(chunk), strict=True):
                    self.vectors[self.key(text)] = array.array("f", vector)
                self.encoded += len(chunk)
                if len(missing) > 1:  # a pass over papers, not one query
                    print(f"encoded {self.encoded}/{len(missing)}", file=sys.stderr, flush=True)
                self.save()
            self.cpu += time.process_time() - started
        return [list(self.vectors[self.key(t)]) for t in texts]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.vectors)
        header = {"model": self.name, "dim": self.dim, "keys": keys}
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("wb") as handle:
            handle.write(json.dumps(header).encode("utf-8") + b"\n")
            for k in keys:
                handle.write(self.vectors[k].tobytes())
        tmp.replace(self.path)


def _best_f1_line(pairs: Sequence[tuple[float, bool]]) -> float:
    """The score line with the best F1 (halfway between two observed scores)."""
    ordered = sorted(pairs, key=lambda p: -p[0])
    wanted = sum(1 for _, r in pairs if r)
    best, line, hits = -1.0, math.inf, 0
    for i, (score, relevant) in enumerate(ordered):
        hits += relevant
        following = ordered[i + 1][0] if i + 1 < len(ordered) else score - 1.0
        if following == score:
            continue
        f1 = 2 * hits / (i + 1 + wanted) if wanted else 0.0
        if f1 > best:
            best, line = f1, (score + following) / 2
    return line


def _pooled(pairs: Sequence[tuple[float, bool]], line: float) -> tuple[float, float]:
    chosen = [r for s, r in pairs if s >= line]
    wanted = sum(1 for _, r in pairs if r)
    precision = sum(chosen) / len(chosen) if chosen else 1.0
    recall = sum(chosen) / wanted if wanted else 1.0
    return precision, recall


def _rrf(lexical: Mapping[str, float], sem: Mapping[str, float]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking in (rank_by(dict(lexical)), rank_by(dict(sem))):
        for rank, p in enumerate(ranking, start=1):
            fused[p] = fused.get(p, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def run(corpus: Path, cache: Path) -> dict[str, Any] | None:
    if not semantic.installed():
        print("semantic_topics: the semantic extra is not installed; nothing measured")
        return None
    import numpy as np  # with the extra

    try:
        model = CachedEncoder(cache)
    except CacheError as error:
        print(f"semantic_topics: {error}")
        return None
    semantic.use_encoder(model)  # load_set_a embeds with it: cached
    started, cpu = time.perf_counter(), time.process_time()
    data = load_set_a(corpus)
    if data is None:
        print(f"semantic_topics: no corpus at {corpus}; nothing measured")
        return None
    catalog, hand_catalog = load_catalog(), load_catalog(learned=False)
    ids = sorted(data.papers)
    vec = np.array(model.encode([semantic.paper_text(data.papers[p]) for p in ids]))
    row = {p: i for i, p in enumerate(ids)}
    calib, report = data.half("calibrate"), data.half("report")
    texts = {p: PaperText.of(data.papers[p]) for p in ids}
    topic_labels = _labels(data, catalog, calib)
    for name, _, _ in SET_A:  # composite Set A topics: their own labels, for "rrf"/"semantic"
        topic_labels.setdefault(name, data.labels[name] & set(calib))
    folds = {p: i % FOLDS for i, p in enumerate(calib)}
    calib_rows = np.array([row[p] for p in calib])

    def z_scores(positives: Sequence[str]) -> np.ndarray:
        """Every paper's standardised cosine to the centroid of `positives`."""
        centroid = vec[[row[p] for p in positives]].mean(axis=0)
        cos = vec @ centroid / (np.linalg.norm(centroid) or 1.0)
        ref = cos[calib_rows]
        return (cos - ref.mean()) / (ref.std() or 1.0)

    # Per catalog topic: z on the report half (centroid from all calibrate positives) and
    # out of fold on the calibrate half.
    sem_report: dict[str, dict[str, float]] = {}
    sem_oof: dict[str, dict[str, float]] = {}
    for topic_id, positives in topic_labels.items():
        if len(positives) < MIN_POSITIVES:
            continue
        z = z_scores(sorted(positives))
        sem_report[topic_id] = {p: float(z[row[p]]) for p in report}
        oof: dict[str, float] = {}
        for fold in range(FOLDS):
            train = sorted(p for p in positives if folds[p] != fold)
            zf = z_scores(train)
            oof.update({p: float(zf[row[p]]) for p in calib if folds[p] == fold})
        sem_oof[topic_id] = oof

    lexical_cache: dict[tuple[str, bool], dict[str, float]] = {}

    def lexical(topic_id: str, hand: bool) -> dict[str, float]:
        """The shipped topic's scores, or its hand terms alone (`hand`)."""
        if (topic_id, hand) not in lexical_cache:
            topic = (hand_catalog if hand else catalog).get(topic_id)
            assert topic is not None
            lexical_cache[topic_id, hand] = {p: topic.score(texts[p]) for p in ids}
        return lexical_cache[topic_id, hand]

    def blended(name: str, w: float, part: str, hand: bool = False) -> dict[str, float]:
        """The Set A topic's blended score: best over its catalog topics of lex + w*LINE*z.
        `hand`: the hand terms alone, for choosing w on the calibrate half (the learned
        terms were fitted to that half: they would look better there than they are and
        pull w towards lexical)."""
        papers = report if part == "report" else calib
        sem = sem_report if part == "report" else sem_oof
        topic_ids = CATALOG_FOR[name]
        if topic_ids is None:  # NAS: free text, no centroid
            (topic,) = catalog_topics(name, dict((n, q) for n, q, _ in SET_A)[name], catalog)
            return {p: topic.score(texts[p]) for p in papers}
        out = {}
        for p in papers:
            out[p] = max(
                lexical(t, hand)[p] + (w * LINE * sem[t][p] if t in sem else 0.0) for t in topic_ids
            )
        return out

    def metrics(
        scorer: Callable[[str], Mapping[str, float]], part: str = "report"
    ) -> dict[str, Any]:
        papers = set(report if part == "report" else calib)
        per = {}
        for name, _, _ in SET_A:
            relevant = data.labels[name] & papers
            ranking = rank_by({p: s for p, s in scorer(name).items() if p in papers})
            per[name] = (
                average_precision(ranking, relevant),
                precision_at(ranking, relevant, 10),
                ndcg_at(ranking, relevant, 10),
            )
        return {
            "map": round(mean([v[0] for v in per.values()]), 3),
            "p10": round(mean([v[1] for v in per.values()]), 3),
            "ndcg10": round(mean([v[2] for v in per.values()]), 3),
            "ap": {n: round(v[0], 3) for n, v in per.items()},
        }

    # The weight: mean out-of-fold AP on the calibrate half.
    oof_map = {
        w: metrics(lambda n, w=w: blended(n, w, "calibrate", True), "calibrate") for w in WEIGHTS
    }
    w_best = max(WEIGHTS, key=lambda w: (oof_map[w]["map"], -w))
    results: dict[str, Any] = {"calibrate_oof_map": {w: oof_map[w]["map"] for w in WEIGHTS}}
    results["weight"] = w_best
    results["lexical"] = metrics(lambda n: blended(n, 0.0, "report"))

    def semantic_only(name: str, own: bool = False) -> dict[str, float]:
        """z alone; "any RL" is the best z of its seven topics (as a channel following
        them would get), or with `own` its own labels' centroid (not a catalog topic)."""
        topic_ids = CATALOG_FOR[name]
        if topic_ids is None:
            return blended(name, 0.0, "report")
        if own and name in sem_report:
            return sem_report[name]
        have = [t for t in topic_ids if t in sem_report]
        if not have:
            return blended(name, 0.0, "report")
        return {p: max(sem_report[t][p] for t in have) for p in report}

    def rrf(name: str, own: bool = False) -> dict[str, float]:
        lex = blended(name, 0.0, "report")
        if CATALOG_FOR[name] is None:
            return lex
        return _rrf({p: s for p, s in lex.items() if s > 0}, semantic_only(name, own))

    results["semantic"] = metrics(semantic_only)
    results["semantic, any RL own"] = metrics(lambda n: semantic_only(n, True))
    results["rrf"] = metrics(rrf)
    results["rrf, any RL own"] = metrics(lambda n: rrf(n, True))
    for w in WEIGHTS[1:]:
        results[f"blend {w}"] = metrics(lambda n, w=w: blended(n, w, "report"))

    # Selection: one line on the blended scale, from the out-of-fold calibrate scores.
    def pairs(w: float, part: str) -> list[tuple[float, bool]]:
        papers = report if part == "report" else calib
        out = []
        for name, _, _ in SET_A:
            scores = blended(name, w, part)
            out += [(scores[p], p in data.labels[name]) for p in papers]
        return out

    selection = {}
    for w in WEIGHTS:  # all shown; w_best is the one chosen (on the calibrate half)
        line = _best_f1_line(pairs(w, "calibrate"))
        p_at, r_at = _pooled(pairs(w, "report"), line)
        p_405, r_405 = _pooled(pairs(w, "report"), LINE)
        selection[w] = {
            "line": round(line, 2),
            "precision": round(p_at, 3),
            "recall": round(r_at, 3),
            "at_4.05": (round(p_405, 3), round(r_405, 3)),
        }
    results["selection"] = selection

    # What a digest would show: the papers at or above the lexical line, the first
    # DIGEST_TOP in each order (lexical; RRF; the chosen blend), their precision.
    def shown(name: str, order: Mapping[str, float]) -> float:
        lex = blended(name, 0.0, "report")
        above = {p: order[p] for p in report if lex[p] >= LINE}
        top = rank_by(above)[:DIGEST_TOP]
        return sum(1 for p in top if p in data.labels[name]) / DIGEST_TOP

    orders: dict[str, Callable[[str], Mapping[str, float]]] = {
        "lexical": lambda n: blended(n, 0.0, "report"),
        "rrf": rrf,
        f"blend {w_best}": lambda n: blended(n, w_best, "report"),
    }
    results["digest_top"] = {
        m: round(mean([shown(n, order(n)) for n, _, _ in SET_A]), 3) for m, order in orders.items()
    }
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["cpu_seconds"] = round(time.process_time() - cpu, 1)
    results["encoded_now"] = model.encoded
    results["encode_cpu_seconds"] = round(model.cpu, 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    results = run(args.corpus, args.cache)
    if results is None:
        return
    print("calibrate out-of-fold MAP by weight:", results["calibrate_oof_map"])
    print(f"chosen weight: {results['weight']}")
    names = [name for name, _, _ in SET_A]
    methods = [k for k in results if isinstance(results[k], dict) and "map" in results[k]]
    print(f"{'report half':14s} {'MAP':>6s} {'P@10':>6s} {'nDCG':>6s}  " + " ".join(
        f"{n[:10]:>10s}" for n in names))  # fmt: skip
    for m in methods:
        r = results[m]
        print(f"{m:14s} {r['map']:6.3f} {r['p10']:6.3f} {r['ndcg10']:6.3f}  " + " ".join(
            f"{r['ap'][n]:10.3f}" for n in names))  # fmt: skip
    for w, s in results["selection"].items():
        print(f"selection, blend {w}: line {s['line']} (calibrate OOF best F1): "
              f"P {s['precision']} R {s['recall']}; at 4.05: P/R {s['at_4.05']}")  # fmt: skip
    print(f"digest view (P@{DIGEST_TOP} of the papers above the line): {results['digest_top']}")
    print(json.dumps({"bench": "semantic_topics", **results}, sort_keys=True, default=str))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    main()
