"""Catalog terms chosen for issue 12's topic definitions (docs/relevance.md, "Final push")."""

from __future__ import annotations

from digests.matching import PaperText
from digests.topics import load_catalog

# Two report-half ICLR 2021 papers the rlhf topic scored 0 before, paraphrased: inverse RL
# and reward learning, which issue 12 counts as "RLHF / preference / IRL".
IRL = PaperText.of(
    {
        "title": "Scalable Bayesian Inverse Reinforcement Learning",
        "abstract": "We infer the expert's reward from demonstrations with a variational "
        "auto-encoder, scaling Bayesian inverse reinforcement learning to images.",
    }
)
REWARD = PaperText.of(
    {
        "title": "How irrational demonstrators change what we infer",
        "abstract": "Reward learning from human behaviour assumes the demonstrator is "
        "rational. We study IRL under several kinds of irrationality.",
    }
)


def test_rlhf_covers_inverse_rl_and_reward_learning() -> None:
    catalog = load_catalog()
    rlhf = catalog.get("rlhf")
    assert rlhf is not None
    for paper in (IRL, REWARD):
        assert rlhf.score(paper) >= catalog.threshold
    # Still imitation learning too: the terms were added, not moved.
    imitation = catalog.get("imitation-learning")
    assert imitation is not None and imitation.score(IRL) > 0


def test_rl_theory_needs_rl_not_just_theory_words() -> None:
    catalog = load_catalog()
    theory = catalog.get("rl-theory")
    assert theory is not None
    minimax = PaperText.of(
        {
            "title": "Gradient descent ascent for min-max problems on Riemannian manifolds",
            "abstract": "We give a provably convergent method for minimax problems on "
            "manifolds, with its convergence rate.",
        }
    )
    rl = PaperText.of(
        {
            "title": "Regret of optimistic exploration in linear MDPs",
            "abstract": "We prove a regret bound for reinforcement learning with linear "
            "function approximation.",
        }
    )
    assert theory.score(minimax) < catalog.threshold  # optimisation theory, not RL
    assert theory.score(rl) >= catalog.threshold
