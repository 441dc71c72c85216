"""The topic catalog, matching, and the calibrated relevance of digest selection."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from db.papers import decode, get_paper
from db.store import Store
from digests.matching import PaperText, Term, normalise, score
from digests.relevance import calibrate, load_labels, measure, score_table
from digests.topics import Catalog, CatalogError, custom_topic, load_catalog
from tests.conftest import ROOT, seed_paper_id

LABELS = ROOT / "tests" / "data" / "seed_labels.toml"
REQUIRED = {
    "offline-rl", "rlhf", "multi-agent-rl", "diffusion-models", "llm-reasoning-agents",
    "rl-theory", "robotics", "continual-learning", "model-based-rl", "safety-robustness",
    "exploration", "imitation-learning", "quantum-ml", "optimization", "evaluation-benchmarks",
    "federated-learning", "graph-neural-networks", "meta-learning", "self-supervised-learning",
    "adversarial-robustness",
}  # fmt: skip


def test_catalog_has_the_required_topics(catalog: Catalog) -> None:
    assert len(catalog.topics) >= 20
    assert set(catalog.ids) >= REQUIRED
    for topic in catalog.topics:
        assert topic.label and topic.description and topic.terms
        assert all(term.weight > 0 for term in topic.terms)


def test_names_and_aliases_find_catalog_topics(catalog: Catalog) -> None:
    assert catalog.by_name("offline reinforcement learning").id == "offline-rl"  # type: ignore[union-attr]
    assert catalog.by_name("RLHF").id == "rlhf"  # type: ignore[union-attr]
    assert catalog.by_name("Offline RL").id == "offline-rl"  # type: ignore[union-attr]
    assert catalog.by_name("diffusion policy") is None  # free text, not a topic's name
    assert catalog.by_name("cooking") is None
    assert catalog.suggest("ofline-rl")[0] == "offline-rl"
    assert "multi-agent-rl" in catalog.suggest("multiagent-rl")


def test_bad_catalogs_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "topics.toml"
    bad.write_text(
        '[[topics]]\nid = "Bad Id"\nlabel = "x"\ndescription = "y"\n[topics.terms]\n"a" = 1\n'
    )
    with pytest.raises(CatalogError, match="lowercase slug"):
        load_catalog(bad)
    bad.write_text(
        '[[topics]]\nid = "a"\nlabel = "x"\ndescription = "y"\n[topics.terms]\n"a" = -1\n'
    )
    with pytest.raises(CatalogError, match="positive weight"):
        load_catalog(bad)
    bad.write_text("this is = not toml [")
    with pytest.raises(CatalogError):
        load_catalog(bad)


def test_normalise_folds_case_plurals_and_hyphens() -> None:
    assert (
        normalise("Offline Reinforcement-Learning Policies!")
        == " offline reinforcement learning policy "
    )
    assert normalise("analysis gas") == " analysis gas "


def test_score_counts_terms_with_diminishing_returns() -> None:
    paper = PaperText(
        title=normalise("Robots"),
        keywords=normalise(""),
        abstract=normalise("robot robot robot arm"),
    )
    once = score(
        PaperText(title=" ", keywords=" ", abstract=normalise("robot")), (Term.of("robot", 2.0),)
    )
    assert once == 2.0
    thrice = score(paper, (Term.of("robot", 2.0),))
    assert thrice == round(
        2.0 * (1 + math.log(3)) + 2.0, 3
    )  # three in the abstract, one in the title


def test_custom_topics_use_telling_words(seeded_db: Store, catalog: Catalog) -> None:
    topic = custom_topic("diffusion policy")
    assert topic.is_custom and topic.id == "custom:diffusion-policy"
    maxent = PaperText.of(get_paper(seeded_db, seed_paper_id(seeded_db, "named MaxEnt RL")))  # type: ignore[arg-type]
    assert topic.score(maxent) >= catalog.threshold
    # "learning" alone says nothing: a paper that only says "learning" scores nothing.
    assert (
        custom_topic("deep learning").score(
            PaperText(title=" ", keywords=" ", abstract=normalise("we study learning"))
        )
        == 0
    )


@pytest.fixture
def table(seeded_db: Store, catalog: Catalog):  # type: ignore[no-untyped-def]
    papers = [decode(row) for row in seeded_db.query("select * from papers")]
    return score_table(load_labels(LABELS, papers), catalog)


def test_labels_cover_all_38_seed_papers(seeded_db: Store) -> None:
    papers = [decode(row) for row in seeded_db.query("select * from papers")]
    labelled = load_labels(LABELS, papers)
    assert len(labelled) == 38
    assert len({item.key for item in labelled}) == 38


def test_selection_meets_the_precision_and_recall_goal(table, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    result = measure(table, catalog.threshold)
    assert result.precision >= 0.9, result
    assert result.recall >= 0.8, result


def test_threshold_is_the_calibrated_one(seeded_db: Store) -> None:
    # Edit the terms, and this fails until config/topics.toml's threshold is re-calibrated
    # (python3 tasks.py relevance prints the new value). The catalog's threshold is the
    # hand terms' line, calibrated on the seeds; topics with a learned model have their
    # own line (config/topic_models.toml, bench/train_topics.py), scaled onto this one.
    catalog = load_catalog(learned=False)
    papers = [decode(row) for row in seeded_db.query("select * from papers")]
    table = score_table(load_labels(LABELS, papers), catalog)
    best = calibrate(table, min_precision=0.9)
    assert measure(table, catalog.threshold) == measure(table, best.threshold)
    assert abs(catalog.threshold - best.threshold) < 0.3


def test_calibrate_picks_the_best_f1_at_target_precision_between_scores() -> None:
    rows = [
        ("a", "t", 5.0, True),
        ("b", "t", 4.0, False),
        ("c", "t", 3.0, True),
        ("d", "t", 1.0, False),
    ]
    assert calibrate(rows, min_precision=1.0).threshold == 4.5
    assert calibrate(rows, min_precision=0.6).threshold == 2.0


def test_adversarial_robustness_names_the_word_forms_the_stemmer_keeps_apart() -> None:
    """The matcher folds plurals only (Snowball stemming measured worse), so the
    catalog names the adverb and participle forms: "adversarially trained" and
    "certifiably robust" papers are adversarial robustness papers. (The hand terms, at
    their line: with the learned model the topic's line asks for more than these
    one-sentence abstracts.)"""
    catalog = load_catalog(learned=False)
    topic = catalog.get("adversarial-robustness")
    assert topic is not None
    for title, abstract in [
        ("Adversarially trained networks", "We show adversarially trained networks overfit."),
        ("Certifiably robust classifiers", "Certifiably robust models by randomized smoothing."),
        (
            "Attacking image classifiers",
            "We study attacking deployed, adversarially robust models.",
        ),
    ]:
        paper = PaperText(title=normalise(title), keywords=" ", abstract=normalise(abstract))
        assert topic.score(paper) >= catalog.threshold, title


def test_channels_following_one_text_share_one_topic_made_once(
    seeded_db: Store, catalog: Catalog
) -> None:
    """A batch reads every channel's free-text subscriptions: a text is made into a
    topic once (`stored_custom_topic`), the same topic `custom_topic` makes."""
    from db.channels import add_subscription
    from digests.digest import subscribed_topics
    from digests.topics import custom_slug

    text = "diffusion policy for robot arms"
    for channel in ("local:a", "local:b"):
        seeded_db.sqlite["channels"].insert(
            {"id": channel, "platform": "local", "created_at": "2026-01-01T00:00:00+00:00"},
            alter=False,
        )
        add_subscription(seeded_db, channel, custom_slug(text), text, "tester", "2026-01-01")
    [first] = subscribed_topics(seeded_db, "local:a", catalog)
    [second] = subscribed_topics(seeded_db, "local:b", catalog)
    assert first is second
    assert first == custom_topic(text)
