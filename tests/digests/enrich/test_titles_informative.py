"""Derived titles and TL;DRs that say what a paper does: a method or subject with what it
is about, never a bare generic phrase, and TL;DRs that never point back at a problem they
do not name ("to cope with these issues")."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlite_utils import Database

from db.channels import add_subscription
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


def test_the_demo_digest_tldrs_never_point_back(seeded_db: Database, settings: Any) -> None:
    ensure_channel(seeded_db, "local:demo", settings, NOW)
    for topic in DEMO_TOPICS:
        add_subscription(seeded_db, "local:demo", topic, None, "demo", NOW.isoformat())
    digest = build_digest(
        seeded_db, "local:demo", NOW, catalog=load_catalog(), settings=settings, preview=True
    )
    tldrs = [item.paper["tldr"] for item in digest.items]
    assert len(tldrs) == 12
    assert [tldr for tldr in tldrs if POINTS_BACK.search(tldr)] == []
    titles = [item.paper["title"] for item in digest.items]
    assert [title for title in titles if len(_content_words(title)) < 3] == []
