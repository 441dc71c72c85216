"""Free-text topics: the phrase keeps its weight, and text that names a catalog topic
inside a longer phrase follows that topic's terms."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import Settings
from db.papers import decode
from db.store import Store
from digests.commands import Context, handle
from digests.matching import PaperText, normalise
from digests.topics import Catalog, custom_topic
from tests.conftest import NOW

# Catalog topics' names inside longer free text (Set A's queries among them).
NAMING = {
    "continual learning and catastrophic forgetting": "continual-learning",
    "meta-learning for few-shot learning": "meta-learning",
    "self-supervised contrastive learning": "self-supervised-learning",
    "Offline RL with batch reinforcement learning": "offline-rl",
}


def paper(title: str, abstract: str) -> PaperText:
    return PaperText(title=normalise(title), keywords=" ", abstract=normalise(abstract))


def test_two_word_free_text_keeps_its_phrase_weight(catalog: Catalog) -> None:
    topic = custom_topic("diffusion policy", catalog)
    weights = {term.phrase: term.weight for term in topic.terms}
    assert weights[normalise("diffusion policy")] >= 3.0  # not the word pair's 1.0
    # One mention of the phrase clears the line; a generic diffusion paper, however
    # often it says "diffusion", neither clears it nor ranks above.
    policy = paper(
        "Learning manipulation from demonstrations",
        "We train a diffusion policy for robot manipulation from a few demonstrations.",
    )
    ddpm = paper(
        "Denoising diffusion probabilistic models",
        "Diffusion models learn to reverse a diffusion process. Our diffusion sampler "
        "improves diffusion image quality, and diffusion speed.",
    )
    assert topic.score(policy) >= catalog.threshold > topic.score(ddpm)


def test_diffusion_policy_selects_only_the_diffusion_policy_seed(
    seeded_db: Store, catalog: Catalog
) -> None:
    topic = custom_topic("diffusion policy", catalog)
    papers = [decode(row) for row in seeded_db.query("select * from papers")]
    scored = sorted(((topic.score(PaperText.of(p)), p["title"]) for p in papers), reverse=True)
    selected = [title for value, title in scored if value >= catalog.threshold]
    assert selected == ["MaxEntDP: MaxEnt RL with Diffusion Policy"]


@pytest.mark.parametrize(("text", "topic_id"), NAMING.items())
def test_free_text_naming_a_catalog_topic_carries_its_terms(
    text: str, topic_id: str, seeded_db: Store, catalog: Catalog
) -> None:
    topic = custom_topic(text, catalog)
    named = catalog.get(topic_id)
    assert named is not None and topic.based_on == (topic_id,)
    assert topic.id.startswith("custom:") and topic.label == f'"{text}"'
    weights = {term.phrase: term.weight for term in topic.terms}
    assert all(weights.get(term.phrase, 0) >= term.weight for term in named.terms)
    assert weights[normalise(text)] >= 3.0  # the phrase itself on top
    # Every seed the catalog topic selects, the free text selects too.
    for row in seeded_db.query("select * from papers"):
        text_of = PaperText.of(decode(row))
        if named.score(text_of) >= catalog.threshold:
            assert topic.score(text_of) >= catalog.threshold, row["title"]


@pytest.mark.parametrize(
    "text",
    [
        "diffusion policy",  # a catalog alias ("diffusion") narrowed by another word
        "diffusion models for robotics",  # two catalog topics: their union is not it
        "learning from human preferences and feedback",  # no catalog name inside
    ],
)
def test_other_free_text_stays_its_own(text: str, catalog: Catalog) -> None:
    topic = custom_topic(text, catalog)
    assert topic.based_on == ()
    assert len(topic.terms) <= len(text.split()) * 2 + 1  # no catalog terms


def test_subscribe_says_which_catalog_topic_free_text_follows(
    seeded_db: Store, settings: Settings, catalog: Catalog
) -> None:
    ctx = Context(seeded_db, "slack:T0001/C0001", "alice", NOW, settings, catalog)
    reply = handle('subscribe "continual learning and catastrophic forgetting"', ctx)
    assert reply.changed and not reply.error
    assert (
        'subscribed this channel to "continual learning and catastrophic forgetting" '
        "(the catalog topic Continual learning (`continual-learning`) plus the phrase)"
    ) in reply.text
    plain = handle('subscribe "diffusion policy"', ctx)
    assert plain.changed and "catalog topic" not in plain.text


# Report-half AP of the Set A texts that name no catalog topic, as bench.freetext_eval
# measures them with the shipped catalog. Raise a figure when the text
# gets better; lowering one is a regression to explain in docs/dev/relevance.md.
UNNAMED_AP = {
    "learning from human preferences and feedback": 0.261,
    "reinforcement learning": 0.765,
    "neural architecture search": 0.905,
}


def test_free_text_comes_within_005_of_the_catalog_on_iclr2021(
    iclr2021: Path, catalog: Catalog
) -> None:
    """Set A as free text: MAP within 0.05 of the catalog topics' (the goal, as
    `tasks.py relevance` measures it), within 0.05 per topic where the text names
    its catalog topic, and at the threshold, recall no worse than the catalog topic's
    there. (Where it names none, "learning from human preferences and feedback", the
    catalog topic may know more than the text says: `rlhf` counts inverse RL, 0.37 AP
    above the text; docs/dev/relevance.md "Final push".)"""
    from bench import freetext_eval

    # The held-out half, as `tasks.py relevance` reports it (1,349 of the 2,613 papers
    # with keywords); freetext_eval itself measures the calibrate half unless told.
    papers = freetext_eval.load_papers("report")
    assert len(papers) == 1349
    result = freetext_eval.evaluate(papers, catalog)
    assert result["free_map"] >= result["catalog_map"] - 0.05  # type: ignore[operator]
    checked = 0
    unnamed = set()
    for (_, query, _, _), row in zip(freetext_eval.SET_A, result["topics"], strict=True):  # type: ignore[call-overload]
        if "catalog" in row and (catalog.by_name(query) or custom_topic(query, catalog).based_on):
            assert row["free"]["ap"] >= row["catalog"]["ap"] - 0.05, row
        if not (catalog.by_name(query) or custom_topic(query, catalog).based_on):
            # Text that names no catalog topic: the mean lets its AP fall by up to ~0.16
            # unseen (RLHF), and "any RL" and NAS have no catalog topic to be near, so
            # each keeps within 0.05 of what it scored when the catalog was last changed.
            assert row["free"]["ap"] >= UNNAMED_AP[query] - 0.05, row
            unnamed.add(query)
        if custom_topic(query, catalog).based_on and not catalog.by_name(query):
            assert row["free"]["recall"] >= row["catalog"]["recall"] - 0.02, row
            checked += 1
    assert checked == 3  # continual, meta-learning, self-supervised
    assert unnamed == set(UNNAMED_AP)


@pytest.mark.parametrize(
    "text",
    ["diffusion policy", "robot robot", "reinforcement learning", "a a", "x", "in-context RL"],
)
def test_the_phrase_is_the_heaviest_term_of_its_own_text(text: str, catalog: Catalog) -> None:
    topic = custom_topic(text, catalog)
    weights = {term.phrase: term.weight for term in topic.terms}
    assert weights[normalise(text)] == max(weights.values()) >= 3.0
    assert len(weights) == len(topic.terms)  # one term per phrase


# --- hostile free text -------------------------------------------------------------------

CHANNEL = "slack:T0001/C0001"


@pytest.mark.parametrize("text", ["the", "and", "we", "what is this", "😀 the", "It Is"])
def test_subscribe_refuses_text_of_function_words_only(
    text: str, seeded_db: Store, settings: Settings, catalog: Catalog
) -> None:
    """Such text matched nearly every paper ("the" selected 36 of the 38 seeds): refused
    with one line, nothing stored."""
    from db.channels import active_subscriptions

    ctx = Context(seeded_db, CHANNEL, "alice", NOW, settings, catalog)
    reply = handle(f'subscribe "{text}"', ctx)
    assert reply.error and not reply.changed
    assert "no word a paper could be about" in reply.text
    assert active_subscriptions(seeded_db, CHANNEL) == []


def test_a_function_word_subscription_stored_earlier_still_lists_and_unsubscribes(
    seeded_db: Store, settings: Settings, catalog: Catalog
) -> None:
    """Data stored before the check: `list` shows it and `unsubscribe` removes it."""
    from db.channels import active_subscriptions, add_subscription
    from digests.digest import ensure_channel

    ensure_channel(seeded_db, CHANNEL, settings, NOW)
    add_subscription(seeded_db, CHANNEL, custom_topic("the", catalog).id, "the", "bob", "2026")
    ctx = Context(seeded_db, CHANNEL, "alice", NOW, settings, catalog)
    assert '#1 "the"' in handle("list", ctx).lines[0]
    reply = handle('unsubscribe "the"', ctx)
    assert reply.changed and not reply.error
    assert active_subscriptions(seeded_db, CHANNEL) == []


@pytest.mark.parametrize(
    "text",
    [
        "Continual Learning and Catastrophic Forgetting",  # another case
        "continual-learning and catastrophic-forgetting",  # hyphens
        "continual learning, continual learning",  # one topic named twice
        "the continual learning",  # glue around it
        "ｃｏｎｔｉｎｕａｌ learning and catastrophic forgetting",  # fullwidth (NFKC)
    ],
)
def test_variants_of_a_catalog_topic_s_names_follow_it(text: str, catalog: Catalog) -> None:
    assert custom_topic(text, catalog).based_on == ("continual-learning",)


@pytest.mark.parametrize(
    "text",
    [
        "сontinual learning and catastrophic forgetting",  # Cyrillic "с": not the name
        "not continual learning",  # a word that is not glue changes the meaning
        "continual learning and diffusion models",  # two topics
    ],
)
def test_lookalikes_and_changed_meanings_stay_their_own(text: str, catalog: Catalog) -> None:
    assert custom_topic(text, catalog).based_on == ()


def test_freetext_eval_measures_the_calibrate_half_unless_told() -> None:
    """It is a tool to tune with: by default it must not see the half the harness
    reports on (before, it scored all 2,613 papers and terms were chosen with it)."""
    from bench import freetext_eval

    assert freetext_eval.parse_args([]).half == "calibrate"
    assert freetext_eval.parse_args(["--half", "all"]).half == "all"
    with pytest.raises(ValueError, match="calibrate, report or all"):
        freetext_eval.load_papers("both")
