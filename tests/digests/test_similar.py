"""`similar` ranks by content: papers that share a paper's subject, not its name."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from db import open_db, text_index
from db.papers import decode
from db.store import Store
from digests import similar
from digests.ingest import ingest_files
from digests.similar import Frequencies, similar_papers, term_counts, vector
from tests.conftest import NOW

TARGET = (
    "AlphaDPO: Adaptive Reward Margin for Direct Preference Optimization",
    "Aligning large language models with human preferences is usually done by "
    "preference optimization on pairs of chosen and rejected responses. We propose an "
    "adaptive reward margin for preference optimization that scales with how strongly the "
    "annotators preferred one response, and a reference policy that stays close to the "
    "supervised model. On chat and summarization benchmarks the aligned language models "
    "win more often against human-written responses.",
)
# Papers that share the target's name words (alpha, dpo, adaptive, direct, optimization).
NAME_SHARERS = [
    (
        "Alpha-Net: Adaptive Residual Networks for Image Classification",
        "Convolutional networks for image classification stack residual blocks. Alpha-Net "
        "learns an adaptive depth per image and reaches higher top-1 accuracy on ImageNet "
        "with fewer convolutional layers and less memory.",
    ),
    (
        "Alpha-DAG: Adaptive Structure Learning for Causal Discovery",
        "Causal discovery from observational data searches over directed acyclic graphs. "
        "Alpha-DAG relaxes the acyclicity constraint adaptively and recovers causal graphs "
        "from gene expression and protein signalling data.",
    ),
    (
        "DPO-Net: Direct Point Optimization for 3D Reconstruction",
        "Reconstructing 3D shapes from point clouds needs accurate surface normals. DPO-Net "
        "optimizes point positions directly against a differentiable mesh renderer and "
        "recovers thin structures of scanned objects.",
    ),
]
# Papers that share the target's subject and none of its name.
CONTENT_SHARERS = [
    (
        "Learning to Summarize from Human Feedback",
        "We fine-tune language models on human preferences between pairs of summaries: a "
        "reward model is trained on which of two responses the annotators preferred, and "
        "the policy is optimized against it while staying close to the supervised model.",
    ),
    (
        "Constitutional Preferences for Aligned Chat Assistants",
        "Chat assistants built on large language models are aligned with preference data. "
        "We collect chosen and rejected responses from annotators and show that training on "
        "these preference pairs makes the language models preferred by human raters.",
    ),
]
FILLER = [
    (
        "Graph Attention for Molecule Property Prediction",
        "Molecules are graphs of atoms; attention over neighbouring atoms predicts "
        "solubility and toxicity better than fingerprints.",
    ),
    (
        "Federated Averaging with Client Drift Correction",
        "Clients with different data drift apart in federated training; a control variate "
        "corrects the drift and speeds up convergence.",
    ),
    (
        "Offline Reinforcement Learning with Conservative Critics",
        "Learning policies from a fixed dataset overestimates unseen actions; a conservative "
        "critic keeps value estimates low outside the data.",
    ),
    (
        "Certified Robustness by Randomized Smoothing",
        "Adding Gaussian noise to inputs gives classifiers a certified radius against "
        "adversarial perturbations of bounded norm.",
    ),
]


def _store(tmp_path: Path) -> Store:
    rows = [TARGET, *NAME_SHARERS, *CONTENT_SHARERS, *FILLER]
    path = tmp_path / "papers.tsv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, delimiter="\t")
        writer.writerow(["paper_id", "title", "link", "abstract"])
        for n, (title, abstract) in enumerate(rows):
            writer.writerow([f"p{n}", title, f"https://openreview.net/forum?id=p{n}", abstract])
    db = open_db(":memory:")
    ingest_files(db, [path], now=NOW)
    return db


def _paper(db: Store, title: str) -> dict[str, object]:
    row = next(iter(db.query("select * from papers where title = ?", [title])))
    return decode(row)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return _store(tmp_path)


def test_papers_sharing_the_subject_outrank_papers_sharing_the_name(store: Store) -> None:
    target = _paper(store, TARGET[0])
    titles = [hit.paper["title"] for hit in similar_papers(store, target, 5)]
    assert set(titles[:2]) == {title for title, _ in CONTENT_SHARERS}
    assert TARGET[0] not in titles
    # The old `similar` (a `find` for the title and method names) led with the name-sharers.
    from db.search import search_papers

    old = [
        hit.paper["title"]
        for hit in search_papers(store, f"{target['title']} {target['names']}", 6)
        if hit.paper["id"] != target["id"]
    ]
    assert not set(old[:2]) & {title for title, _ in CONTENT_SHARERS}


def test_the_fts5_fallback_ranks_the_same(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _paper(store, TARGET[0])
    on_index = [(h.paper["id"], h.score) for h in similar_papers(store, target, 5)]

    def unavailable(db: Store) -> text_index.TextIndex:
        raise text_index.IndexUnavailable("busy")

    monkeypatch.setattr(text_index, "ready", unavailable)
    on_fts = [(h.paper["id"], h.score) for h in similar_papers(store, target, 5)]
    # Same order; the scores differ (up to a quarter in a store this small): FTS5's index
    # stems (Porter), so it counts "models" in a paper that says "model".
    assert [i for i, _ in on_fts] == [i for i, _ in on_index]
    assert on_fts[0][1] == pytest.approx(on_index[0][1], rel=0.25)


def test_scores_are_cosines_best_first_and_limited(store: Store) -> None:
    target = _paper(store, TARGET[0])
    hits = similar_papers(store, target, 3)
    assert len(hits) == 3
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert similar_papers(store, target, 0) == []


def test_a_paper_without_content_words_finds_nothing(store: Store) -> None:
    assert similar_papers(store, {"id": "x", "title": "The", "abstract": "of and 42"}, 5) == []


def test_common_words_weigh_less_than_rare_ones() -> None:
    counts = term_counts({"title": "Preference optimization", "abstract": "models"})
    assert counts["preference"] == 2 and counts["models"] == 1
    assert counts["preference optimization"] == 1
    freqs = Frequencies(100, {"preference": 2, "optimization": 50, "models": 90})
    weights = vector(counts, freqs)
    assert weights["preference"] > weights["optimization"] > weights["models"]
    # A pair is as rare as its rarer word.
    assert freqs.idf("preference optimization") == freqs.idf("preference")
    assert "the" not in similar.words("the model of the world")


def test_a_huge_abstract_is_read_only_as_far_as_a_real_one_goes() -> None:
    # A 100 KB record made one `similar` cost seconds (its words counted, weighted and
    # looked up for every candidate); past MAX_ABSTRACT_CHARS nothing is read.
    head = "preference optimization aligns language models with human raters. " * 80
    assert len(head) < similar.MAX_ABSTRACT_CHARS
    tail = " ".join(f"filler{n}" for n in range(15_000))
    huge = {"title": "T", "abstract_text": head + tail}
    cut = {"title": "T", "abstract_text": (head + tail)[: similar.MAX_ABSTRACT_CHARS]}
    assert term_counts(huge) == term_counts(cut)
    assert len(term_counts(huge)) < 2 * similar.MAX_ABSTRACT_CHARS // 7


def test_on_fts5_only_the_paper_s_own_words_are_counted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FTS5 counts a word's papers by reading its document list: counting every candidate's
    # words too cost 5-7 CPU s per similar on a 1M store (while the index is being built).
    def unavailable(db: Store) -> text_index.TextIndex:
        raise text_index.IndexUnavailable("busy")

    monkeypatch.setattr(text_index, "ready", unavailable)
    asked: set[str] = set()
    count = similar._FtsSource.frequencies

    def recording(self: similar._FtsSource, wanted: set[str]) -> Frequencies:
        asked.update(wanted)
        return count(self, wanted)

    monkeypatch.setattr(similar._FtsSource, "frequencies", recording)
    target = _paper(store, TARGET[0])
    titles = [hit.paper["title"] for hit in similar_papers(store, target, 5)]
    own = {w for term in term_counts(target) for w in term.split(" ")}
    assert asked and asked <= own
    assert set(titles[:2]) == {title for title, _ in CONTENT_SHARERS}
