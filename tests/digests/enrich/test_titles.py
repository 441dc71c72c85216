"""Derived titles, method names and TL;DRs on the 38 bundled seed abstracts."""

from __future__ import annotations

import re

import pytest

from digests.enrich.titles import TITLE_LIMIT, derive, is_name_like, tidy_phrase
from digests.text import plain_text
from tests.conftest import seed_abstracts

ABSTRACTS = seed_abstracts()

# A phrase that picks out one seed abstract -> the method name its title must contain.
PINNED = {
    "We propose AlphaDPO": "AlphaDPO",
    "called Flow-of-Options (FoO)": "FoO",
    "named MaxEnt RL with Diffusion Policy": "MaxEntDP",
    "We term this as Layer-Wise PPO": "L-PPO",
    "*Local Manifold Approximation and Projection*": "LoMAP",
    "Continual Churn Approximated Reduction": "C-CHAIN",
    "Distributionally Robust Multi-Agent": "DRMARL",
    "we introduce CollabLLM": "CollabLLM",
    "We propose DRAGO": "DRAGO",
    "we propose RobustZero": "RobustZero",
    "We introduce UCB-TQL": "UCB-TQL",
    "to propose SEQUOIA": "SEQUOIA",
    "Sub-optimal Data Pre-training, SDP": "SDP",
    "Soft Analytic Policy Optimization (SAPO)": "SAPO",
    "Annealed Rewards (NEAR)": "NEAR",
    "approach, SCoRe, that": "SCoRe",
    "called Digi-Q": "Digi-Q",
    "named ExpoComm": "ExpoComm",
    "we present HyPoGen": "HyPoGen",
    "task, named LoL": "LoL",
    "Distillation for In-Context Planning (DICP)": "DICP",
    "personalized FedRL framework (PFedRL)": "PFedRL",
    "we introduce ResDex": "ResDex",
    "policy iteration algorithm (PI-FT)": "PI-FT",
}


def _abstract_with(phrase: str) -> str:
    matches = [abstract for abstract in ABSTRACTS if phrase in abstract]
    assert len(matches) == 1, phrase
    return matches[0]


def test_there_are_38_seed_abstracts() -> None:
    assert len(ABSTRACTS) == 38


@pytest.mark.parametrize(("phrase", "method"), PINNED.items())
def test_pinned_method_names(phrase: str, method: str) -> None:
    derived = derive(_abstract_with(phrase))
    assert derived.method == method
    assert derived.title.startswith(method + ":")


def test_titles_say_what_the_method_is() -> None:
    assert derive(_abstract_with("We propose AlphaDPO")).title == (
        "AlphaDPO: Adaptive preference optimization framework"
    )
    assert derive(_abstract_with("*Local Manifold")).title == (
        "LoMAP: Local Manifold Approximation and Projection"
    )
    assert derive(_abstract_with("named MaxEnt RL")).title == (
        "MaxEntDP: MaxEnt RL with Diffusion Policy"
    )


def test_a_concept_defined_on_the_way_is_not_the_method() -> None:
    # ICET (a vulnerability) and Clip-PPO (the baseline) are named before L-PPO.
    assert derive(_abstract_with("We term this as Layer-Wise PPO")).method == "L-PPO"


def test_without_a_method_the_title_is_a_headline() -> None:
    derived = derive(_abstract_with("We present the first mechanistic evidence"))
    assert derived.method is None
    assert derived.title == (
        "First mechanistic evidence that model-free reinforcement learning agents can learn to plan"
    )
    variance = derive(_abstract_with("optimal variance-minimizing behavior policy"))
    assert variance.title == "Optimal variance-minimizing behavior policy under safety constraints"


def test_a_named_concept_is_the_headline() -> None:
    derived = derive(_abstract_with("We name this issue"))
    assert derived.method is None
    # With its field: the concept's name alone says too little.
    assert derived.title == "Task representation shift in offline meta reinforcement learning"


def test_field_acronyms_are_not_method_names() -> None:
    derived = derive(_abstract_with("quantum reinforcement learning (QRL)"))
    assert derived.method is None
    for generic in ("RL", "LLMs", "MDP", "MoE", "DQN"):
        assert not is_name_like(generic)


@pytest.mark.parametrize("abstract", ABSTRACTS, ids=range(len(ABSTRACTS)))
def test_every_title_is_sound(abstract: str) -> None:
    title = derive(abstract).title
    assert title.strip() == title
    assert 0 < len(title) <= TITLE_LIMIT
    text = plain_text(abstract)
    last_word = re.findall(r"[\w-]+", title)[-1]
    # The title ends on a word that the abstract has whole, not on a fragment of one.
    assert re.search(rf"(?<![\w-]){re.escape(last_word)}(?![\w-])", text), title
    assert not re.search(r"\b(of|the|a|an|and|or|to|for|with)$", title, re.I), title


@pytest.mark.parametrize("abstract", ABSTRACTS, ids=range(len(ABSTRACTS)))
def test_every_tldr_is_one_trimmed_sentence(abstract: str) -> None:
    tldr = derive(abstract).tldr
    assert 40 <= len(tldr) <= 200
    assert tldr[0].isupper()
    assert tldr.endswith((".", "…", "!", "?"))
    assert "*" not in tldr and "](" not in tldr and "\\" not in tldr


def test_tldr_is_the_contribution_sentence() -> None:
    assert derive(_abstract_with("we introduce ResDex")).tldr == (
        "We introduce ResDex, a novel approach that integrates residual policy learning "
        "with a mixture-of-experts (MoE) framework."
    )
    # A lead-in such as "To improve ... (i.e., ...)," goes.
    assert derive(_abstract_with("Sub-optimal Data Pre-training, SDP")).tldr.startswith(
        "This paper introduces Sub-optimal Data Pre-training, SDP"
    )


def test_long_tldr_is_cut_at_a_word_boundary() -> None:
    tldr = derive(_abstract_with("*Local Manifold")).tldr
    assert tldr.endswith("…")
    assert len(tldr) <= 200
    last = tldr[:-1].split()[-1]
    assert re.search(
        rf"(?<![\w-]){re.escape(last)}(?![\w-])", plain_text(_abstract_with("*Local Manifold"))
    )


def test_tidy_phrase_drops_fillers_and_clauses() -> None:
    assert tidy_phrase("a novel benchmarking methodology, which is based on") == (
        "Benchmarking methodology"
    )
    # One word alone says too little, so the clause stays.
    assert tidy_phrase("a framework that casts exploration as entropy maximization") == (
        "Framework that casts exploration as entropy maximization"
    )
    assert tidy_phrase("such a justification for X by adapting Y") == "Justification for X"
    assert tidy_phrase("an approach to the") == "Approach"


def test_odd_abstracts_still_get_a_title() -> None:
    for abstract in ("x", "🙂 🙂", "שלום עולם. זה תקציר.", "a " * 5000, "We propose Foo."):
        derived = derive(abstract)
        assert derived.title
        assert len(derived.title) <= TITLE_LIMIT


# --- TL;DRs state the contribution -------------------------------------------------------

BRAC_PLUS = (
    "Standard off-policy RL algorithms are prone to overestimations of the values of out of "
    "distribution actions and are hence unsuitable for Offline RL. Behavior regularization has "
    "been proposed to tackle the limitations of standard off-policy algorithms. In this paper, "
    "we improve the behavior regularized offline reinforcement learning and propose "
    "\\emph{BRAC+}. We use an analytical upper bound on KL divergence as the behavior "
    "regularizor to reduce variance associated with sample based estimations. We also propose "
    "several practical enhancements to further improve the performance. On challenging "
    "locomotion offline RL benchmarks, BRAC+ matches the state-of-the-art approaches."
)

# A phrase that picks out one seed abstract -> the start of its TL;DR.
TLDR_PINNED = {
    "We propose AlphaDPO": "We propose AlphaDPO, an adaptive preference optimization framework",
    "called Digi-Q": "We develop an approach, called Digi-Q, to train VLM-based action-value",
    "finite-time convergence analysis": "We propose a justification for asymmetric actor",
    "first mechanistic evidence": "We present the first mechanistic evidence that model-free",
    "named ExpoComm": "We endeavor to develop a scalable communication protocol for MARL.",
}


def test_the_tldr_is_the_contribution_not_an_add_on() -> None:
    assert derive(BRAC_PLUS).tldr == (
        "We improve the behavior regularized offline reinforcement learning and propose BRAC+."
    )


def test_an_add_on_is_the_tldr_only_when_nothing_else_states_a_contribution() -> None:
    text = (
        "Robots drop things. In this work, we analyse grasp failures and introduce a "
        "tactile replanning loop. Finally, we propose several practical enhancements."
    )
    assert derive(text).tldr.startswith("We analyse grasp failures and introduce")
    only = "Robots drop things. We also propose several practical enhancements to grasping."
    assert derive(only).tldr.startswith("We also propose several practical enhancements")


@pytest.mark.parametrize(("phrase", "start"), TLDR_PINNED.items())
def test_pinned_seed_tldrs(phrase: str, start: str) -> None:
    assert derive(_abstract_with(phrase)).tldr.startswith(start)
