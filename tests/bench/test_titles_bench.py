"""The derived-titles benchmark (bench/titles.py): its metrics on hand-computed examples,
its baseline, and a run on a small slice of ICLR 2021 (skipped without the corpus)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import titles as bench
from bench.relevance_metrics import half

ROOT = Path(__file__).resolve().parents[2]


def test_rouge_l_by_hand() -> None:
    # LCS "graph neural networks" (3): precision 3/4, recall 3/5, F1 2/3.
    real = "Scalable Graph Neural Networks everywhere"
    assert bench.rouge_l(real, "graph neural networks, scaled") == pytest.approx(2 / 3)
    assert bench.rouge_l(real, "nothing in common") == 0.0
    assert bench.rouge_l(real, real) == pytest.approx(1.0)


def test_content_recall_counts_the_real_titles_content_words() -> None:
    # Content words of the real title: scalable, graph, neural, networks.
    real = "Towards Scalable Graph Neural Networks"
    assert bench.content_recall(real, "Neural networks for graphs") == pytest.approx(2 / 4)
    assert bench.content_words("A model for the graph") == ["model", "graph"]


def test_the_baseline_is_the_first_noun_phrase() -> None:
    abstract = (
        "Training Generative Adversarial Networks on high-fidelity images usually requires "
        "large GPU clusters. We propose a light GAN."
    )
    assert bench.first_noun_phrase(abstract) == "Training Generative Adversarial Networks"
    assert bench.first_noun_phrase("The lottery ticket hypothesis is popular.") == (
        "lottery ticket hypothesis"
    )


def test_tldrs_that_point_back_are_counted() -> None:
    assert bench.DANGLING.search("We propose X to cope with these issues.")
    assert not bench.DANGLING.search("We propose X, which copes with label noise.")


def test_a_run_scores_each_half_and_the_baseline() -> None:
    papers = [
        bench.Paper(
            f"id{n}",
            "AlphaDPO: Adaptive preference optimization",
            "Alignment is hard. We propose AlphaDPO, an adaptive preference optimization "
            "framework that reparameterizes the reference distribution.",
        )
        for n in range(8)
    ]
    result = bench.run(papers, {"derived": bench.derive_here})
    halves = {half(paper.paper_id) for paper in papers}
    assert set(result["halves"]) == halves
    for figures in result["halves"].values():
        assert figures["derived"]["rouge_l"] > figures["baseline"]["rouge_l"]
        assert figures["derived"]["share_under_3_content_words"] == 0.0
        assert figures["derived"]["tldr_dangling"] == 0


@pytest.mark.skipif(not bench.CORPUS.is_file(), reason="needs ../shared/corpora")
def test_the_bench_runs_on_a_slice_of_the_corpus() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.titles", "--papers", "60", "--before", str(ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    figures = json.loads(result.stdout.splitlines()[-1])
    assert figures["bench"] == "titles"
    report = figures["halves"]["report"]
    assert report["derived"]["papers"] + figures["halves"]["calibrate"]["derived"]["papers"] == 60
    # --before ran this very tree in a child process: the same titles.
    assert report["before"] == report["derived"]
    assert 0.0 <= report["baseline"]["rouge_l"] <= 1.0
