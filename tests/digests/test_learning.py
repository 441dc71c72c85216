"""Feedback feeds the next digest: 👍/👎 on a topic's items refine that topic for
the channel; 👎'd papers never come back; channels without feedback are unchanged."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from config.settings import Settings
from db import channels as store
from db import outbox
from db.store import Store
from digests import learning
from digests.actions import VOTE_DOWN, VOTE_UP, apply_action, item_ref
from digests.digest import Digest, build_digest, build_digests, ensure_channel
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.learning import NEXT, NEXT_WEEK, RECOMMENDERS, ROBOTS, TOPIC, ingest

CHANNEL = "slack:T1/C1"
QUIET = "slack:T1/C2"  # follows the same topic, gives no feedback


@pytest.fixture
def big(settings: Settings) -> Settings:
    return replace(settings, digest_size=10)


def first_week(db: Store, tmp_path: Path, catalog: Catalog, settings: Settings) -> Digest:
    """Both channels follow offline-rl and get this week's ten papers."""
    for channel in (CHANNEL, QUIET):
        ensure_channel(db, channel, settings, NOW)
        store.add_subscription(db, channel, TOPIC, None, "U9", NOW.isoformat())
    papers = {f"robots-{n}": t for n, t in enumerate(ROBOTS)}
    papers.update({f"recsys-{n}": t for n, t in enumerate(RECOMMENDERS)})
    ingest(db, tmp_path, papers, NOW - timedelta(days=1))
    digests = {
        d.channel: d
        for d in build_digests(db, [CHANNEL, QUIET], NOW, catalog=catalog, settings=settings)
    }
    assert len(digests[CHANNEL].items) == 10
    return digests[CHANNEL]


def deliver(db: Store, digest: Digest) -> None:
    assert digest.digest_id is not None
    ids = [str(item.paper["id"]) for item in digest.items]
    outbox.enqueue(db, digest.channel, digest.digest_id, [({"text": "x"}, ids)], NOW.isoformat())


def vote_all(db: Store, digest: Digest) -> tuple[set[str], set[str]]:
    """👍 the robot papers, 👎 the recommender ones, through the buttons' path."""
    assert digest.digest_id is not None
    liked, disliked = set(), set()
    for item in digest.items:
        paper_id = str(item.paper["id"])
        robot = "robot" in item.paper["abstract"]
        result = apply_action(
            db,
            channel=CHANNEL,
            user="U1",
            user_key="slack:T1/U0AAA1",
            action=VOTE_UP if robot else VOTE_DOWN,
            value=item_ref(digest.digest_id, paper_id),
            now=NOW + timedelta(hours=1),
        )
        assert not result.error, result.text
        (liked if robot else disliked).add(paper_id)
    assert len(liked) == len(disliked) == 5
    return liked, disliked


def order(digest: Digest, ids: dict[str, str]) -> list[str]:
    keys = {paper_id: key for key, paper_id in ids.items()}
    return [keys[str(i.paper["id"])] for i in digest.items if str(i.paper["id"]) in keys]


def test_feedback_reranks_the_next_digest(
    fresh_db: Store, tmp_path: Path, catalog: Catalog, big: Settings
) -> None:
    digest = first_week(fresh_db, tmp_path, catalog, big)
    deliver(fresh_db, digest)
    vote_all(fresh_db, digest)
    ids = ingest(fresh_db, tmp_path, NEXT, NOW + timedelta(days=3))

    built = {
        d.channel: d
        for d in build_digests(fresh_db, [CHANNEL, QUIET], NEXT_WEEK, catalog=catalog, settings=big)
    }
    ranked = order(built[CHANNEL], ids)
    assert "robot-only" not in ranked
    # Every paper like the 👍 ones above every paper like the 👎 ones.
    assert set(ranked[:2]) == {"robot-a", "robot-b"}, ranked
    # The channel without feedback ranks them by the topic as it is: recommenders first
    # (so the order above is the feedback's doing, not the papers').
    assert set(order(built[QUIET], ids)[:2]) == {"recsys-a", "recsys-b"}
    # Never the same paper twice: nothing of last week's digest comes back.
    first = {str(i.paper["id"]) for i in digest.items}
    assert not first & {str(i.paper["id"]) for i in built[CHANNEL].items}
    # The refined topic keeps its id (the recorded digest names it as before).
    assert all(t.id == TOPIC for i in built[CHANNEL].items for t in i.topics)


def test_a_disliked_paper_never_comes_back_even_if_its_digest_never_arrived(
    fresh_db: Store, tmp_path: Path, catalog: Catalog, big: Settings
) -> None:
    """A digest that reached no channel leaves its papers new for the next one (nothing
    picked is lost), except those the channel voted 👎."""
    digest = first_week(fresh_db, tmp_path, catalog, big)  # recorded, never queued
    liked, disliked = vote_all(fresh_db, digest)
    # One robot paper 👎 too: like the 👍 ones, so the refined topic still scores it well.
    assert digest.digest_id is not None
    odd = sorted(liked)[0]
    result = apply_action(
        fresh_db,
        channel=CHANNEL,
        user="U1",
        user_key="slack:T1/U0AAA1",
        action=VOTE_DOWN,
        value=item_ref(digest.digest_id, odd),
        now=NOW + timedelta(hours=2),
    )
    assert result.changed
    liked, disliked = liked - {odd}, disliked | {odd}
    again = build_digest(fresh_db, CHANNEL, NEXT_WEEK, catalog=catalog, settings=big)
    picked = {str(i.paper["id"]) for i in again.items}
    assert liked <= picked
    assert not picked & disliked


def test_topics_without_feedback_stay_the_same_objects(
    fresh_db: Store, tmp_path: Path, catalog: Catalog, big: Settings
) -> None:
    digest = first_week(fresh_db, tmp_path, catalog, big)
    topic = catalog.get(TOPIC)
    other = catalog.get("exploration")
    assert topic is not None and other is not None
    nothing = learning.learn(fresh_db, {CHANNEL: [topic, other], QUIET: [topic]})
    assert nothing == learning.Learned({}, {}, {})
    vote_all(fresh_db, digest)
    learned = learning.learn(fresh_db, {CHANNEL: [topic, other], QUIET: [topic]})
    assert set(learned.topics) == {CHANNEL}
    refined, same = learned.topics[CHANNEL]
    assert same is other and refined.id == TOPIC and refined.terms != topic.terms
    assert learned.disliked[CHANNEL] and set(learned.disliked) == {CHANNEL}
    assert learning.refined_topic(fresh_db, CHANNEL, topic) == refined
    assert learning.refined_topic(fresh_db, QUIET, topic) is topic


def test_a_refined_topic_searches_the_backlog_as_its_original(
    fresh_db: Store, tmp_path: Path, catalog: Catalog, big: Settings
) -> None:
    from db import feedback
    from digests.topics import custom_topic

    digest = first_week(fresh_db, tmp_path, catalog, big)
    topic = custom_topic("offline reinforcement learning for control")
    assert not topic.searched
    for item in digest.items:
        vote = 1 if "robot" in item.paper["abstract"] else -1
        feedback.record_vote(
            fresh_db, CHANNEL, topic.id, str(item.paper["id"]), "U1", vote, None, "2026-12-01"
        )
    refined = learning.learn(fresh_db, {CHANNEL: [topic]}).topics[CHANNEL][0]
    assert any(t.weight < 0 for t in refined.terms)
    assert refined.search_phrases == topic.search_phrases
    assert learning.learn(fresh_db, {CHANNEL: [topic]}).origin == {refined.terms: topic}


def test_feedback_never_makes_the_backlog_pick_a_paper_below_the_topics_own_line(
    fresh_db: Store, tmp_path: Path, catalog: Catalog, big: Settings
) -> None:
    """The backlog is gated as the window is: an archive paper like the 👍 ones that the
    full-text search finds (it says "offline") but that the topic's own terms score far
    below the line is not picked because of feedback."""
    robot = ingest(
        fresh_db,
        tmp_path,
        {
            "archive-robot": "Offline, a robot gripper learns grasping of tabletop objects for "
            "manipulation from logged robot trajectories with a robot arm."
        },
        NOW - timedelta(days=2),
    )["archive-robot"]
    digest = first_week(fresh_db, tmp_path, catalog, big)
    assert robot not in {str(i.paper["id"]) for i in digest.items}  # below the line
    deliver(fresh_db, digest)
    vote_all(fresh_db, digest)
    store.set_backlog(fresh_db, CHANNEL, True)
    topic = catalog.get(TOPIC)
    assert topic is not None
    text = learning.paper_texts(fresh_db, {robot})[robot]
    refined = learning.refined_topic(fresh_db, CHANNEL, topic)
    # The premise: the refined terms alone would take it, the topic's own would not.
    assert refined.score(text) >= catalog.threshold > topic.score(text)
    again = build_digest(fresh_db, CHANNEL, NEXT_WEEK, catalog=catalog, settings=big)
    assert robot not in {str(i.paper["id"]) for i in again.items}


def test_feedback_never_lists_a_carried_paper_under_a_topic_that_does_not_reach_it(
    fresh_db: Store, tmp_path: Path, catalog: Catalog, big: Settings
) -> None:
    """Papers an undelivered digest picked come back as new; a refined topic takes one
    only if its original reaches it (here: a robot paper picked for robotics, like the
    👍 papers, is not listed under offline-rl)."""
    ensure_channel(fresh_db, CHANNEL, big, NOW)
    for topic_id in (TOPIC, "robotics"):
        store.add_subscription(fresh_db, CHANNEL, topic_id, None, "U9", NOW.isoformat())
    papers = {f"robots-{n}": t for n, t in enumerate(ROBOTS)}
    papers.update({f"recsys-{n}": t for n, t in enumerate(RECOMMENDERS)})
    papers["robot-only"] = NEXT["robot-only"]
    ids = ingest(fresh_db, tmp_path, papers, NOW - timedelta(days=1))
    digest = build_digest(fresh_db, CHANNEL, NOW, catalog=catalog, settings=big)
    assert digest.digest_id is not None  # recorded, never delivered: its papers are carried
    assert ids["robot-only"] in {str(i.paper["id"]) for i in digest.items}
    for key, paper_id in ids.items():
        if key != "robot-only":
            result = apply_action(
                fresh_db,
                channel=CHANNEL,
                user="U1",
                user_key="slack:T1/U0AAA1",
                action=VOTE_UP if key.startswith("robots") else VOTE_DOWN,
                value=item_ref(digest.digest_id, paper_id),
                now=NOW + timedelta(hours=1),
            )
            assert not result.error, result.text
    topic = catalog.get(TOPIC)
    assert topic is not None
    text = learning.paper_texts(fresh_db, {ids["robot-only"]})[ids["robot-only"]]
    refined = learning.refined_topic(fresh_db, CHANNEL, topic)
    assert refined.score(text) >= catalog.threshold > topic.score(text)  # the premise
    again = build_digest(fresh_db, CHANNEL, NEXT_WEEK, catalog=catalog, settings=big)
    item = next(i for i in again.items if str(i.paper["id"]) == ids["robot-only"])
    assert [t.id for t in item.topics] == ["robotics"]
