"""Free text that names a catalog topic only loosely: an acronym spelled out, a typo."""

from __future__ import annotations

import pytest

from digests.topics import Catalog


def test_acronyms_come_from_the_catalogs_own_names(catalog: Catalog) -> None:
    """`offline rl` and `offline reinforcement learning` name one topic: `rl` is spelled
    out so; `llm` is never spelled out in the catalog, so it stays as it is."""
    assert catalog.acronyms["rl"] == ("reinforcement", "learning")
    assert catalog.acronyms["gnn"] == ("graph", "neural", "network")
    assert "llm" not in catalog.acronyms


@pytest.mark.parametrize(
    ("text", "topic_id"),
    [
        ("RL from human feedback", "rlhf"),
        ("theory of reinforcement learning", "rl-theory"),  # the alias `theory of rl`
        ("reinforcment learning from human feedback", "rlhf"),  # a typo in a long name
        ("preference optimisation", "rlhf"),
    ],
)
def test_a_loose_name_is_its_topic(catalog: Catalog, text: str, topic_id: str) -> None:
    assert catalog.by_name(text) is None
    found = catalog.named_loosely(text)
    assert found is not None and found.id == topic_id


@pytest.mark.parametrize(
    "text",
    [
        "papers about robot grasping with tactile sensors",
        "diffusion policy",
        "model-based offline RL",  # close to `model based rl`, and a topic of its own
        "offline reinforcement learning theory",
        "human feedback for robots",
        "learning from human feedback",
        "large language models",
    ],
)
def test_ordinary_free_text_names_no_topic(catalog: Catalog, text: str) -> None:
    assert catalog.named_loosely(text) is None
