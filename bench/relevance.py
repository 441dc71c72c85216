"""The relevance harness: topics, free text, `find` and `similar` against references.

    python3 tasks.py relevance [--detail] [--corpus PATH] [--similar-sample N]

Prints one table (measure | Paperboy | references | goal | met) and one JSON line. The
references are rebuilt in the same run (bench/relevance_refs.py): tf-idf cosine
(unigrams + bigrams), FTS5 bm25 OR with title weight 5, and arxiv-sanity-lite's
`search_rank`. docs/dev/relevance.md explains every figure.

Set A, ICLR 2021 (../shared/corpora/iclr2021-openreview.tsv): the papers that have author
keywords, ingested WITHOUT the keywords column. A paper is relevant to one of Set A's
12 topics when one of its keywords matches a pattern (bench.relevance_metrics.
keyword_matches). Papers are split into halves by a hash of their OpenReview id: the
"calibrate" half sets the calibrated threshold, every figure is measured on the "report"
half. Each topic is measured three ways: as the catalog topic (CATALOG_FOR; "any RL" is
the best of the RL catalog topics, as a channel following all of them would get; NAS has
no catalog topic, so it is what `subscribe "neural architecture search"` builds), as the
query typed as free text (`custom_topic`, what a quoted `subscribe "..."` builds when it
names no catalog topic), and as a `find` query (`digests.lookup.find`, whole ranking).
Digest selection is "score >= threshold" (the catalog's one threshold, as
digests.digest._score_all applies it), pooled over the 12 topics.

Set B, the 38 bundled seeds: nDCG@5 per catalog topic against tests/data/seed_labels.toml,
known-item success@1 (tests/data/known_items.toml) and paraphrase success@3
(tests/data/paraphrases.toml) through `digests.lookup.find`, on a store of the seeds and
the real papers `find` once ranked wrongly (tests/fakes/search_papers.jsonl: DPO, IQL,
IDQL...; its AlphaDPO left out, as the seeds hold another version of it).

Similar: for a deterministic sample of Set A papers with a label, the share of the top 10
of `similar` (`digests.similar.similar_papers`, what the handler answers)
that share a labelled topic with the paper; tf-idf cosine neighbours as the reference.
Without ../shared, Set A and Similar print "skipped" and Set B still runs.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import math
import os
import platform
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.relevance_metrics import (
    average_precision,
    half,
    keyword_matches,
    mean,
    ndcg_at,
    pooled_selection,
    precision_at,
    rank_by,
    success_at,
)
from bench.relevance_refs import Doc, Fts5Or, TfIdf, sanity_search_rank
from db import open_db
from db.papers import decode
from digests import lookup, semantic
from digests.ingest import ingest_files
from digests.matching import PaperText, normalise
from digests.relevance import calibrate, load_labels
from digests.samples import sample_paths
from digests.similar import similar_papers
from digests.topics import Catalog, Topic, custom_topic, load_catalog

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "iclr2021-openreview.tsv"
DATA = ROOT / "tests" / "data"

# Set A: (topic, query, keyword patterns).
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

# The catalog topic(s) each Set A topic corresponds to (config/topics.toml). Several ids:
# the paper's best score among them. None: the catalog has no such topic.
CATALOG_FOR: dict[str, tuple[str, ...] | None] = {
    "offline RL": ("offline-rl",),
    "multi-agent RL": ("multi-agent-rl",),
    "RLHF / preference / IRL": ("rlhf",),
    "diffusion": ("diffusion-models",),
    "any RL": (
        "offline-rl", "multi-agent-rl", "rlhf", "rl-theory", "model-based-rl",
        "exploration", "imitation-learning",
    ),
    "GNNs": ("graph-neural-networks",),
    "federated": ("federated-learning",),
    "contrastive / self-supervised": ("self-supervised-learning",),
    "meta-learning / few-shot": ("meta-learning",),
    "adversarial robustness": ("adversarial-robustness",),
    "continual learning": ("continual-learning",),
    "NAS": None,
}  # fmt: skip

TOP = 10  # P@10, nDCG@10, similar's top 10
SIMILAR_SAMPLE = 300
MIN_PRECISION = 0.9  # the calibration target (the selection goal)


@dataclass
class SetA:
    """The blind ICLR 2021 store and its labels; ids are Paperboy's stored ids."""

    db: Any
    papers: dict[str, dict[str, Any]]
    source: dict[str, str]  # stored id -> OpenReview id
    keywords: dict[str, list[str]]
    labels: dict[str, set[str]]  # Set A topic -> relevant stored ids
    docs: list[Doc] = field(default_factory=list)
    semantic: dict[str, Any] | None = None  # embed_if_installed's report

    def half(self, name: str) -> list[str]:
        return sorted(p for p in self.papers if half(self.source[p]) == name)


def load_set_a(corpus: Path) -> SetA | None:
    """Ingest the papers with keywords, without their keywords column; None without the file."""
    if not corpus.is_file():
        return None
    csv.field_size_limit(1 << 24)
    with corpus.open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle, delimiter="\t")]
    keywords = {
        row["paper_id"]: [k.strip() for k in (row["keywords"] or "").split(",") if k.strip()]
        for row in rows
    }
    rows = [row for row in rows if keywords[row["paper_id"]]]  # papers without keywords left out
    db = open_db(":memory:")
    with tempfile.TemporaryDirectory() as folder:
        blind = Path(folder) / "iclr2021-no-keywords.tsv"
        with blind.open("w", encoding="utf-8", newline="") as out:
            columns = [c for c in rows[0] if c != "keywords"]
            writer = csv.DictWriter(out, columns, delimiter="\t", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        ingest_files(db, [blind], now=datetime(2026, 11, 30, tzinfo=UTC))
    # A file's id column becomes an alias of the stored paper.
    source = {
        row["paper_id"]: row["alias"]
        for row in db.query("select alias, paper_id from paper_aliases")
        if row["alias"] in keywords
    }
    papers = {
        p["id"]: p
        for p in (decode(row) for row in db.query("select * from papers"))
        if p["id"] in source
    }
    by_paper = {p: keywords[source[p]] for p in papers}
    labels = {
        topic: {p for p, words in by_paper.items() if any(keyword_matches(k, pats) for k in words)}
        for topic, _, pats in SET_A
    }
    docs = [Doc(p, paper["title"], paper["abstract"]) for p, paper in papers.items()]
    return SetA(db, papers, source, by_paper, labels, docs, embed_if_installed(db))


def embed_if_installed(db: Any) -> dict[str, Any] | None:
    """With the semantic extra installed (`pip install .[semantic]`), embed every paper as
    `paperboy embed` does, so `find` and `similar` use meaning as they would for a user;
    None without it (every figure is then lexical)."""
    if not semantic.installed():
        return None
    model = semantic.encoder()
    if model is None:
        return None
    cpu = time.process_time()
    report = semantic.embed(db, model)
    return {
        "model": model.name,
        "encoded": report.encoded,
        "encode_seconds": report.seconds,
        "per_second": round(report.encoded / report.seconds, 1) if report.seconds else None,
        "cpu_seconds": round(time.process_time() - cpu, 1),
    }


def _scorer(topics: Sequence[Topic]) -> Callable[[PaperText], float]:
    return lambda text: max(topic.score(text) for topic in topics)


def catalog_topics(name: str, query: str, catalog: Catalog) -> list[Topic]:
    ids = CATALOG_FOR[name]
    if ids is None:  # what `subscribe "query"` builds
        return [catalog.by_name(query) or custom_topic(query)]
    return [topic for topic in (catalog.get(i) for i in ids) if topic is not None]


def _ranking_metrics(
    rankings: Mapping[str, list[str]], labels: Mapping[str, set[str]]
) -> dict[str, float]:
    return {
        "map": round(mean([average_precision(rankings[t], labels[t]) for t in rankings]), 3),
        "p10": round(mean([precision_at(rankings[t], labels[t], TOP) for t in rankings]), 3),
        "ndcg10": round(mean([ndcg_at(rankings[t], labels[t], TOP) for t in rankings]), 3),
    }


def _line(table: Sequence[tuple[str, str, float, bool]], min_precision: float = 0.9) -> float:
    """`calibrate`'s threshold; inf (selects nothing) when no paper of `table` scores
    above 0, where `calibrate` has no candidate and raises."""
    if not any(score > 0 for _, _, score, _ in table):
        return math.inf
    return calibrate(table, min_precision).threshold


def measure_set_a(data: SetA, catalog: Catalog, detail: bool) -> dict[str, Any]:
    """Ranking metrics on the report half for Paperboy's three paths and the references,
    and digest selection at the catalog threshold and at one calibrated on the other half."""
    report, calib = data.half("report"), data.half("calibrate")
    report_set = set(report)
    texts = {p: PaperText.of(paper) for p, paper in data.papers.items()}
    labels = {t: data.labels[t] & report_set for t, _, _ in SET_A}
    tfidf, fts = TfIdf(data.docs), Fts5Or(data.docs)
    total = len(data.papers)
    rankings: dict[str, dict[str, list[str]]] = {
        m: {} for m in ("catalog", "free text", "find", "tf-idf", "fts5 OR", "arxiv-sanity")
    }
    pairs: dict[str, dict[str, list[tuple[str, str, float, bool]]]] = {
        "catalog": {"report": [], "calibrate": []},
        "free text": {"report": [], "calibrate": []},
    }
    for name, query, _ in SET_A:
        scorers = {
            "catalog": _scorer(catalog_topics(name, query, catalog)),
            "free text": _scorer([custom_topic(query)]),
        }
        for method, scorer in scorers.items():
            scores = {p: scorer(texts[p]) for p in data.papers}
            rankings[method][name] = rank_by({p: scores[p] for p in report})
            for part, ids in (("report", report), ("calibrate", calib)):
                pairs[method][part] += [(p, name, scores[p], p in data.labels[name]) for p in ids]
        found = [r["id"] for r in lookup.find(data.db, query, total)]
        rankings["find"][name] = [p for p in found if p in report_set]
        rankings["tf-idf"][name] = rank_by(
            {p: s for p, s in tfidf.scores(query).items() if p in report_set}
        )
        rankings["fts5 OR"][name] = rank_by(
            {p: s for p, s in fts.scores(query).items() if p in report_set}
        )
        rankings["arxiv-sanity"][name] = [
            p for p in sanity_search_rank(query, data.docs) if p in report_set
        ]
    result: dict[str, Any] = {
        "papers": total,
        "report_half": len(report),
        "relevant": {t: len(labels[t]) for t in labels},
    }
    for method, by_topic in rankings.items():
        result[method] = _ranking_metrics(by_topic, labels)
    for method in ("catalog", "free text"):
        held = [(score, relevant) for _, _, score, relevant in pairs[method]["report"]]
        precision, recall = pooled_selection(held, catalog.threshold)
        tuned = _line(pairs[method]["calibrate"], MIN_PRECISION)
        tuned_p, tuned_r = pooled_selection(held, tuned)
        result[method]["selection"] = {
            "threshold": catalog.threshold,
            "precision": round(precision, 3),
            "recall": round(recall, 3),
            "calibrated_threshold": tuned,
            "calibrated_precision": round(tuned_p, 3),
            "calibrated_recall": round(tuned_r, 3),
        }
        # A diagnostic for "per-topic thresholds": each topic's own
        # line calibrated on the calibrate half, all applied to the report half, pooled.
        lines = {
            name: _line([row for row in pairs[method]["calibrate"] if row[1] == name])
            for name, _, _ in SET_A
        }
        per_p, per_r = pooled_selection(
            (
                (1.0 if score >= lines[name] else 0.0, relevant)
                for _, name, score, relevant in pairs[method]["report"]
            ),
            1.0,
        )
        result[method]["selection"].update(
            per_topic_thresholds=lines,
            per_topic_precision=round(per_p, 3),
            per_topic_recall=round(per_r, 3),
        )
    if detail:
        methods = list(rankings)
        print("Set A, average precision per topic (report half):")
        print(f"  {'topic':30s} {'rel':>4s} " + " ".join(f"{m:>12s}" for m in methods))
        for name, _, _ in SET_A:
            aps = [average_precision(rankings[m][name], labels[name]) for m in methods]
            print(f"  {name:30s} {len(labels[name]):4d} " + " ".join(f"{a:12.3f}" for a in aps))
    return result


def repo_check(data: SetA, catalog: Catalog) -> dict[str, float]:
    """The older 21-topic check (tests/data/iclr2021_keyword_labels.toml, exact keywords),
    pooled, at the catalog threshold, on all papers with keywords."""
    wanted = tomllib.loads((DATA / "iclr2021_keyword_labels.toml").read_text(encoding="utf-8"))
    pairs = []
    for topic_id, words in wanted.items():
        topic = catalog.get(topic_id)
        if topic is None:
            continue
        keys = {normalise(k) for k in words}
        for p, paper in data.papers.items():
            relevant = any(normalise(k) in keys for k in data.keywords[p])
            pairs.append((topic.score(PaperText.of(paper)), relevant))
    precision, recall = pooled_selection(pairs, catalog.threshold)
    return {"precision": round(precision, 3), "recall": round(recall, 3)}


def similar_ranking(db: Any, paper: Mapping[str, Any], k: int) -> list[str]:
    """What `similar` answers: `digests.similar.similar_papers`, the function the handler
    (digests/commands/papers.py `_similar`) calls, so the two cannot drift."""
    return [hit.paper["id"] for hit in similar_papers(db, paper, k)]


def measure_similar(data: SetA, sample: int) -> dict[str, Any]:
    topics_of = {p: {t for t, ids in data.labels.items() if p in ids} for p in data.papers}
    chosen = sorted(
        (p for p in data.papers if topics_of[p]),
        key=lambda p: hashlib.sha256(data.source[p].encode()).hexdigest(),
    )[:sample]
    tfidf = TfIdf(data.docs)

    def share(ranking: list[str], p: str) -> float:
        return sum(1 for q in ranking[:TOP] if topics_of[q] & topics_of[p]) / TOP

    ours = [share(similar_ranking(data.db, data.papers[p], TOP), p) for p in chosen]
    theirs = [share(rank_by(tfidf.neighbours(p)), p) for p in chosen]
    return {
        "sample": len(chosen),
        "similar": round(mean(ours), 3),
        "tf-idf": round(mean(theirs), 3),
    }


def _find_phrase(path: Path, papers: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(query, target id) per [[item]], the target named by a unique abstract phrase."""
    items = tomllib.loads(path.read_text(encoding="utf-8"))["item"]
    out = []
    for item in items:
        found = [p["id"] for p in papers if item["find"] in p["abstract"]]
        if len(found) != 1:
            raise ValueError(f"{path}: {item['find']!r} matches {len(found)} papers, not 1")
        out.append((item["query"], found[0]))
    return out


KNOWN_PAPERS = ROOT / "tests" / "fakes" / "search_papers.jsonl"
SEEDS_HOLD = {"2410.10148"}  # AlphaDPO, whose other version is a seed


def known_papers(folder: Path) -> Path:
    """KNOWN_PAPERS without the ones the seeds hold, as a file in `folder`."""
    lines = KNOWN_PAPERS.read_text(encoding="utf-8").splitlines()
    path = folder / "known-papers.jsonl"
    kept = [line for line in lines if json.loads(line)["id"] not in SEEDS_HOLD]
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


def measure_set_b(catalog: Catalog, detail: bool) -> dict[str, Any]:
    db = open_db(":memory:")
    with tempfile.TemporaryDirectory() as folder:
        paths = [*sample_paths(), known_papers(Path(folder))]
        ingest_files(db, paths, now=datetime(2026, 11, 30, tzinfo=UTC))
    embed_if_installed(db)
    papers = [decode(row) for row in db.query("select * from papers")]
    labelled = load_labels(DATA / "seed_labels.toml", papers)
    key_to_id = {
        item.key: p["id"] for item in labelled for p in papers if item.key in p["abstract"]
    }
    ndcg = {}
    for topic in catalog.topics:
        relevant = {key_to_id[item.key] for item in labelled if topic.id in item.topics}
        if not relevant:
            continue
        scores = {key_to_id[item.key]: topic.score(item.text) for item in labelled}
        ndcg[topic.id] = round(ndcg_at(rank_by(scores), relevant, 5), 3)
    table = [
        (item.key, topic.id, topic.score(item.text), topic.id in item.topics)
        for item in labelled
        for topic in catalog.topics
    ]
    precision, recall = pooled_selection([(s, r) for _, _, s, r in table], catalog.threshold)
    docs = [Doc(p["id"], p["title"], p["abstract"]) for p in papers]
    tfidf, fts = TfIdf(docs), Fts5Or(docs)
    rankers: dict[str, Callable[[str], list[str]]] = {
        "find": lambda q: [r["id"] for r in lookup.find(db, q, 10)],
        "tf-idf": lambda q: rank_by(tfidf.scores(q)),
        "fts5 OR": lambda q: rank_by(fts.scores(q)),
        "arxiv-sanity": lambda q: sanity_search_rank(q, docs),
    }
    result: dict[str, Any] = {
        "ndcg5": round(mean(list(ndcg.values())), 3),
        "ndcg5_by_topic": ndcg,
        "selection": {"precision": round(precision, 3), "recall": round(recall, 3)},
    }
    for name, path, k in (
        ("known_item", "known_items.toml", 1),
        ("paraphrase", "paraphrases.toml", 3),
    ):
        items = _find_phrase(DATA / path, papers)
        result[name] = {
            method: round(mean([success_at(rank(q), target, k) for q, target in items]), 3)
            for method, rank in rankers.items()
        }
        result[name]["queries"] = len(items)
        if detail:
            misses = [q for q, target in items if target not in rankers["find"](q)[:k]]
            print(f"Set B {name}: find misses {len(misses)}/{len(items)}: {misses}")
    if detail:
        print(f"Set B nDCG@5 by topic: {ndcg}")
        print(f"Set B selection errors at {catalog.threshold}:")
        for key, topic_id, value, wanted in sorted(table, key=lambda r: (r[1], -r[2])):
            if (value >= catalog.threshold) != wanted:
                kind = "false positive" if wanted is False else "missed"
                print(f"  {kind:14s} {topic_id:24s} {value:5.2f}  {key[:48]}")
    return result


def _pr(figures: Mapping[str, float]) -> str:
    return f"P {figures['precision']:.3f} R {figures['recall']:.3f}"


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def table_rows(
    a: dict[str, Any] | None, b: dict[str, Any], sim: dict[str, Any] | None
) -> list[tuple[str, ...]]:
    """(measure, Paperboy, references, goal, met) rows."""
    rows: list[tuple[str, ...]] = []
    if a is None:
        rows.append(("Set A (ICLR 2021)", "skipped: no ../shared corpus", "", "", ""))
    else:
        refs = {m: a[m] for m in ("tf-idf", "fts5 OR", "arxiv-sanity")}
        best = max(r["map"] for r in refs.values())

        def ref(metric: str) -> str:
            return ", ".join(f"{m} {r[metric]:.3f}" for m, r in refs.items())

        cat, free, find = a["catalog"], a["free text"], a["find"]
        rows += [
            (
                "A catalog topics MAP",
                f"{cat['map']:.3f}",
                ref("map"),
                ">= 0.85",
                _met(cat["map"] >= 0.85),
            ),
            (
                "A catalog topics P@10",
                f"{cat['p10']:.3f}",
                ref("p10"),
                ">= 0.95",
                _met(cat["p10"] >= 0.95),
            ),
            ("A catalog topics nDCG@10", f"{cat['ndcg10']:.3f}", ref("ndcg10"), "", ""),
        ]
        for label, m in (("catalog", cat), ("free text", free)):
            s = m["selection"]
            ok = s["precision"] >= 0.9 and s["recall"] >= 0.8
            rows.append(
                (
                    f"A {label} selection at {s['threshold']}",
                    f"P {s['precision']:.3f} R {s['recall']:.3f}",
                    "",
                    "P >= 0.9 at R >= 0.8",
                    _met(ok),
                )
            )
            ok = s["calibrated_precision"] >= 0.9 and s["calibrated_recall"] >= 0.8
            rows.append(
                (
                    f"A {label} selection at calibrated {s['calibrated_threshold']}",
                    f"P {s['calibrated_precision']:.3f} R {s['calibrated_recall']:.3f}",
                    "",
                    "P >= 0.9 at R >= 0.8",
                    _met(ok),
                )
            )
            ok = s["per_topic_precision"] >= 0.9 and s["per_topic_recall"] >= 0.8
            low, high = (
                min(s["per_topic_thresholds"].values()),
                max(s["per_topic_thresholds"].values()),
            )
            rows.append(
                (
                    f"A {label} selection, per-topic lines {low}-{high}",
                    f"P {s['per_topic_precision']:.3f} R {s['per_topic_recall']:.3f}",
                    "",
                    "P >= 0.9 at R >= 0.8",
                    _met(ok),
                )
            )
        gap = cat["map"] - free["map"]
        rows += [
            (
                "A free text MAP",
                f"{free['map']:.3f}",
                f"catalog {cat['map']:.3f}",
                "within 0.05 of catalog",
                _met(gap <= 0.05),
            ),
            ("A free text P@10 / nDCG@10", f"{free['p10']:.3f} / {free['ndcg10']:.3f}", "", "", ""),
            (
                "A find MAP",
                f"{find['map']:.3f}",
                ref("map"),
                f">= best ref {best:.3f}",
                _met(find["map"] >= best),
            ),
            ("A find P@10", f"{find['p10']:.3f}", ref("p10"), "", ""),
            ("A find nDCG@10", f"{find['ndcg10']:.3f}", ref("ndcg10"), "", ""),
            ("A repo check (21 topics) at threshold", _pr(a["repo_check"]), "", "", ""),
        ]
    rows.append(
        ("B nDCG@5 (catalog topics)", f"{b['ndcg5']:.3f}", "", ">= 0.95", _met(b["ndcg5"] >= 0.95))
    )
    rows.append(("B selection at threshold", _pr(b["selection"]), "", "", ""))
    for key, label, goal, need in (
        ("known_item", "B known-item success@1", "= 1.0", 1.0),
        ("paraphrase", "B paraphrase success@3", ">= 0.75", 0.75),
    ):
        r = b[key]
        refs_b = ", ".join(f"{m} {r[m]:.3f}" for m in ("tf-idf", "fts5 OR", "arxiv-sanity"))
        rows.append(
            (
                f"{label} ({r['queries']} queries)",
                f"{r['find']:.3f}",
                refs_b,
                goal,
                _met(r["find"] >= need),
            )
        )
    if sim is None:
        rows.append(("Similar (Set A)", "skipped: no ../shared corpus", "", "", ""))
    else:
        rows.append(
            (
                f"Similar: top-10 sharing a topic ({sim['sample']} papers)",
                f"{sim['similar']:.3f}",
                f"tf-idf {sim['tf-idf']:.3f}",
                ">= 0.8",
                _met(sim["similar"] >= 0.8),
            )
        )
    return rows


def print_table(rows: Sequence[tuple[str, ...]]) -> None:
    head = ("measure", "Paperboy", "references", "goal", "")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def run(
    corpus: Path = CORPUS, detail: bool = False, similar_sample: int = SIMILAR_SAMPLE
) -> dict[str, Any]:
    """Measure everything, print the table and the JSON line; return what the JSON holds."""
    started, cpu = time.perf_counter(), time.process_time()
    catalog = load_catalog()
    data = load_set_a(corpus)
    a = sim = None
    if data is None:
        print(f"Set A and Similar: skipped, {corpus} is not here")
    else:
        a = measure_set_a(data, catalog, detail)
        a["repo_check"] = repo_check(data, catalog)
        sim = measure_similar(data, similar_sample)
    b = measure_set_b(catalog, detail)
    print_table(table_rows(a, b, sim))
    result = {
        "bench": "relevance",
        "set_a": a,
        "set_b": b,
        "similar": sim,
        "semantic": data.semantic if data is not None else None,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
    }
    print(
        "semantic extra: "
        + (
            f"on ({data.semantic['model']}, {data.semantic['encoded']} Set A abstracts "
            f"encoded at {data.semantic['per_second']}/s)"
            if data is not None and data.semantic
            else ("on" if semantic.installed() else "not installed: every figure is lexical")
        )
    )
    print(f"time: {result['seconds']} s wall, {result['cpu_seconds']} s CPU")
    print(json.dumps(result, sort_keys=True))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--detail", action="store_true", help="per-topic figures and misses too")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the ICLR 2021 TSV (Set A)")
    parser.add_argument("--similar-sample", type=int, default=SIMILAR_SAMPLE)
    parser.add_argument(
        "--vectors-cache",
        type=Path,
        help="with the semantic extra: reuse the model's vectors cached in this file "
        "(bench.semantic_topics' cache, keyed by a hash of the text; new texts are encoded "
        "and added), so a rerun does not encode the 2,613 abstracts again (~290 CPU s)",
    )
    args = parser.parse_args()
    if args.vectors_cache is not None and semantic.installed():
        from bench.semantic_topics import CachedEncoder, CacheError  # imports this module

        try:
            semantic.use_encoder(CachedEncoder(args.vectors_cache))
        except CacheError as error:  # one line, not a traceback or wrong figures
            raise SystemExit(f"relevance: {error}") from None
        print(
            f"semantic vectors: from the cache {args.vectors_cache} (new texts encoded and "
            "added); the 'encoded at' rate below is the cache's, not the model's"
        )
    run(args.corpus, args.detail, args.similar_sample)


if __name__ == "__main__":
    main()
