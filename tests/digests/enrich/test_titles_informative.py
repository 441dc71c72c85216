"""Derived titles and TL;DRs that say what a paper does: a method or subject with what it
is about, never a bare generic phrase, and TL;DRs that never point back at a problem they
do not name ("to cope with these issues")."""

from __future__ import annotations

import re
from typing import Any

import pytest

from db.channels import add_subscription
from db.store import Store
from digests.digest import build_digest, ensure_channel
from digests.enrich.titles import derive
from digests.topics import load_catalog
from tests.conftest import NOW, seed_abstracts

ABSTRACTS = seed_abstracts()
# The demo's channel and topics (bot/cli/demo.py).
DEMO_TOPICS = ("offline-rl", "rlhf", "llm-reasoning-agents")

# Words that do not say what a paper is about; a title needs 3 others.
FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905
        "a an the of for and or to in on with by from via as at into over under through "
        "is are be can its it this that these their our we using based new novel which"
    ).split()
)
# Pointing back at something the TL;DR never names.
POINTS_BACK = re.compile(
    r"\b(?:these|those|this|such|the above|aforementioned)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:issues?|problems?|challenges?|limitations?|difficult(?:y|ies)|drawbacks?|"
    r"shortcomings?|gaps?|questions?|concerns?|justifications?)\b|\bsuch an?\b",
    re.I,
)


def _abstract_with(phrase: str) -> str:
    matches = [abstract for abstract in ABSTRACTS if phrase in abstract]
    assert len(matches) == 1, phrase
    return matches[0]


def _content_words(title: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", title.lower()) if w not in FUNCTION_WORDS]


def test_a_generic_model_gets_its_field_and_a_tldr_that_names_its_point() -> None:
    derived = derive(_abstract_with("we propose a novel model of behavior"))
    assert derived.title == "Model of behavior in Inverse Reinforcement Learning"
    # The sentence "to cope with these issues" says nothing alone: the next contribution.
    assert derived.tldr.startswith(
        "We devise two provably-efficient algorithms for learning utilities"
    )


def test_a_named_concept_comes_with_its_field_and_its_result() -> None:
    derived = derive(_abstract_with("We name this issue"))
    assert derived.title == "Task representation shift in offline meta reinforcement learning"
    assert derived.tldr.startswith(
        "We identify task representation shift and theoretically prove that the monotonic"
    )


def test_a_short_contribution_keeps_what_it_does() -> None:
    derived = derive(_abstract_with("novel *distinguishability query*"))
    assert derived.title == (
        "Distinguishability query enabling humans to express preference strength"
    )


def test_a_clause_that_only_points_back_leaves_the_tldr() -> None:
    assert derive(_abstract_with("We propose AlphaDPO")).tldr == (
        "We propose AlphaDPO, an adaptive preference optimization framework that "
        "dynamically reparameterizes the reference distribution."
    )
    assert derive(_abstract_with("finite-time convergence analysis")).tldr.startswith(
        "We propose a justification for asymmetric actor-critic algorithms"
    )


@pytest.mark.parametrize(
    ("abstract", "title"),
    [
        (
            "Graphs are everywhere. In this paper, we propose a new model, BiGCN, which "
            "represents a graph neural network as a bi-directional low-pass filter.",
            "BiGCN: Model that represents a graph neural network as a bi-directional low-pass "
            "filter",
        ),
        (
            "Agents compete. We propose a method, D3C, for online adjustment of agent "
            "incentives that reduces the loss incurred at a Nash equilibrium.",
            "D3C: Method for online adjustment of agent incentives",
        ),
        (
            "Views matter. To address this, we propose viewmaker networks: generative models "
            "which learn to produce input-dependent views for contrastive learning.",
            "Viewmaker networks: generative models that learn to produce input-dependent views",
        ),
    ],
)
def test_a_generic_description_says_more(abstract: str, title: str) -> None:
    assert derive(abstract).title == title


@pytest.mark.parametrize("abstract", ABSTRACTS, ids=range(len(ABSTRACTS)))
def test_no_sample_title_has_under_3_content_words(abstract: str) -> None:
    title = derive(abstract).title
    assert len(_content_words(title)) >= 3, title


@pytest.mark.parametrize("abstract", ABSTRACTS, ids=range(len(ABSTRACTS)))
def test_no_sample_tldr_points_back(abstract: str) -> None:
    tldr = derive(abstract).tldr
    assert not POINTS_BACK.search(tldr), tldr


def _demo_items(db: Store, settings: Any) -> list[Any]:
    """The items of the demo's digest (its 12 papers), as `paperboy demo` previews it."""
    ensure_channel(db, "local:demo", settings, NOW)
    for topic in DEMO_TOPICS:
        add_subscription(db, "local:demo", topic, None, "demo", NOW.isoformat())
    digest = build_digest(
        db, "local:demo", NOW, catalog=load_catalog(), settings=settings, preview=True
    )
    assert len(digest.items) == 12
    return list(digest.items)


def test_the_demo_digest_tldrs_never_point_back(seeded_db: Store, settings: Any) -> None:
    items = _demo_items(seeded_db, settings)
    tldrs = [item.paper["tldr"] for item in items]
    assert [tldr for tldr in tldrs if POINTS_BACK.search(tldr)] == []
    titles = [item.paper["title"] for item in items]
    assert [title for title in titles if len(_content_words(title)) < 3] == []


# What a TL;DR reads like when a rule cut a clause that its sentence needed.
BROKEN = re.compile(
    r"\b(?:propose|proposes) by\b|\bas a (?:way|means)\.|\bthe first \w+\.|^So as\b|\bgoal is,"
    r"|\ban extension by\b|\bWe identify new\b|\bthat are robust\.|, an algorithm\.",
)

ROTOGRAD = (
    "GradNorm is a broadly used gradient-based approach for training multitask networks. "
    "However, it does not prevent the individual tasks' gradients from conflicting. In this "
    "work we propose Rotograd, an extension to GradNorm that addresses this problem by "
    "dynamically homogenizing not only the gradient magnitudes but also their directions "
    "across tasks."
)
DEEPSPU = (
    "Worse yet, the given labels are often assigned sequentially, resulting in sequential "
    "bias. Current Positive Unlabeled (PU) classifiers, a state-of-the-art family of robust "
    "semi-supervised methods, are ineffective under sequential bias. In this work, we propose "
    "DeepSPU, the first method to address this sequential bias problem."
)
URE = (
    "This paper proposes a novel setting, namely pairwise comparison (Pcomp) classification, "
    "where we are given only pairs of unlabeled data. To solve this problem, we present a "
    "mathematical formulation for the generation process of pairwise comparison data, based "
    "on which we exploit an unbiased risk estimator (URE) to train a binary classifier."
)


@pytest.mark.parametrize(
    ("abstract", "tldr"),
    [
        # "to VERB this problem" after "propose" is what is proposed: it stays.
        (
            "Labels are scarce. We propose to solve this problem by utilizing self-supervised "
            "pre-training.",
            "We propose to solve this problem by utilizing self-supervised pre-training.",
        ),
        # "to GradNorm that addresses" is not one clause; "by ..." belongs to "addresses".
        (
            ROTOGRAD,
            "We propose Rotograd, an extension to GradNorm that addresses this problem by "
            "dynamically homogenizing not only the gradient magnitudes but also their "
            "directions across tasks.",
        ),
        (
            "Most of this research has been on European languages. So as to address these "
            "issues: We propose a new dataset for African languages that provides parallel "
            "data for vernaculars.",
            "We propose a new dataset for African languages that provides parallel data for "
            "vernaculars.",
        ),
        (
            "Heavy Ball has eluded theoretical understanding. Our goal is to address this gap, "
            "and in the present work we identify two problems where we provably show that "
            "Heavy Ball is faster.",
            "Our goal is to address this gap, and in the present work we identify two problems "
            "where we provably show that Heavy Ball is faster.",
        ),
        (DEEPSPU, "We propose DeepSPU, the first method to address this sequential bias problem."),
        (
            "Training suffers instability. This paper proposes augmented DRL (ADRL) as a way "
            "to alleviate these issues.",
            "This paper proposes augmented DRL (ADRL) as a way to alleviate these issues.",
        ),
        (
            "Distribution matching is a challenging task. In this paper, we propose to use the "
            "contrastive learning framework, as a means to resolve this problem.",
            "We propose to use the contrastive learning framework, as a means to resolve this "
            "problem.",
        ),
        # "such an adversary" is the one described before: "an adversary" would be any.
        (
            "An optimal adversary exists. In this paper, we show that any classifier that "
            "cannot abstain will be defeated by such an adversary.",
            "We show that any classifier that cannot abstain will be defeated by such an "
            "adversary.",
        ),
        (
            "Simulators differ from reality. We introduce e-Robust Multi-Agent Simulation "
            "(ERMAS), a robust optimization framework to learn AI policies that are robust to "
            "such multi-agent reality gaps.",
            "We introduce e-Robust Multi-Agent Simulation (ERMAS), a robust optimization "
            "framework to learn AI policies that are robust to such multi-agent reality gaps.",
        ),
        # "an algorithm." would say nothing: the clause says what it is for.
        (
            "Constrained optimization is slow. We present Deep Constraint Completion and "
            "Correction (DC3), an algorithm to address this challenge.",
            "We present Deep Constraint Completion and Correction (DC3), an algorithm to "
            "address this challenge.",
        ),
        # "while ..." says how the verb it follows mitigates: without it, "approach while".
        (
            "Training is unstable. By attributing gradient vanishing to poor signal "
            "propagation, we introduce a simple temperature scaling approach to mitigate this "
            "issue while preserving the decision boundary.",
            "We introduce a simple temperature scaling approach to mitigate this issue while "
            "preserving the decision boundary.",
        ),
        (
            "Attention shortcuts exist. We analyze the shortcuts theoretically, design one "
            "experiment to demonstrate their existence, and propose two methods to mitigate "
            "this issue.",
            "We analyze the shortcuts theoretically, design one experiment to demonstrate their "
            "existence, and propose two methods to mitigate this issue.",
        ),
        # Another sentence that starts "This ..." is no better than the key sentence.
        (
            "Graph networks need much data. We propose a new hybrid architecture to overcome "
            "this limitation. This significantly improves the amount of training data needed "
            "that we establish via improved generalization bounds.",
            "We propose a new hybrid architecture to overcome this limitation.",
        ),
        # Naming a setup or a method is no "We identify ...": only an issue is.
        (
            "Multi-objective learning needs many models. We call this new setup Pareto-Front "
            "Learning (PFL).",
            "We call this new setup Pareto-Front Learning (PFL).",
        ),
        (
            "Modalities differ. We term this as Layer-Wise PPO (L-PPO), which clips each layer "
            "of a multi-modal policy separately.",
            "We term this as Layer-Wise PPO (L-PPO), which clips each layer of a multi-modal "
            "policy separately.",
        ),
    ],
)
def test_a_tldr_keeps_the_clauses_its_sentence_needs(abstract: str, tldr: str) -> None:
    derived = derive(abstract)
    assert derived.tldr == tldr
    assert not BROKEN.search(derived.tldr)


@pytest.mark.parametrize(
    ("abstract", "title"),
    [
        (
            "Agents forget. We call it Elastic Replay and show it halves forgetting on "
            "standard benchmarks.",
            "Elastic Replay halves forgetting on standard benchmarks",
        ),
        (
            "Labels are scarce. We propose to solve this problem by utilizing self-supervised "
            "pre-training.",
            "Utilizing self-supervised pre-training",
        ),
        (URE, "URE: Unbiased risk estimator"),
        (
            "Multi-objective learning needs many models. We call this new setup Pareto-Front "
            "Learning (PFL).",
            "PFL: Pareto-Front Learning",
        ),
        # "the first method" says nothing without what it is the first to do.
        (DEEPSPU, "DeepSPU in Positive Unlabeled"),
        (ROTOGRAD, "Rotograd: Extension to GradNorm"),
        # A candidate that points back is no headline, however many words it has.
        (
            "Existing generative models approximating an ELBO are not able to fulfill all "
            "desired requirements of multimodal models. We propose a new, generalized ELBO "
            "formulation for multimodal data that overcomes these limitations.",
            "New, generalized ELBO formulation for multimodal data",
        ),
    ],
)
def test_every_title_candidate_reads_as_a_headline(abstract: str, title: str) -> None:
    assert derive(abstract).title == title


def test_no_sample_or_demo_tldr_reads_broken(seeded_db: Store, settings: Any) -> None:
    assert [t for t in (derive(a).tldr for a in ABSTRACTS) if BROKEN.search(t)] == []
    tldrs = [item.paper["tldr"] for item in _demo_items(seeded_db, settings)]
    assert [tldr for tldr in tldrs if BROKEN.search(tldr)] == []
