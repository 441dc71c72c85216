"""A channel's 👍/👎 feedback, turned into its topics for the next digest: each topic with
feedback is refined (`digests.topic_model.refine`); docs/explanation/architecture.md,
"Feedback", has the rules."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from db import feedback
from db.papers import decode, text_rows
from db.store import Store
from digests.matching import PaperText, Term
from digests.topic_model import features, refine
from digests.topics import Topic

log = logging.getLogger(__name__)

# Labelled papers whose features a batch keeps (`learn`).
FEATURES_KEPT = 512


@dataclass(frozen=True)
class Learned:
    """`topics`: {channel: its topics with feedback refined}, for the channels where
    some topic changed; `disliked`: {channel: papers with net 👎 there}; `origin`: {a
    refined topic's terms: the topic it was refined from}, for the digest, which lets a
    refined topic re-rank only the papers its original reaches."""

    topics: dict[str, list[Topic]]
    disliked: dict[str, frozenset[str]]
    origin: dict[tuple[Term, ...], Topic]


def learn(db: Store, topics_by_channel: Mapping[str, Sequence[Topic]]) -> Learned:
    """The channels' topics refined by their feedback, in two queries for the batch (its
    channels' votes, the labelled papers' texts). A topic with feedback in a channel is
    replaced by `refine(topic, positives, negatives)` (papers whose net votes there are
    above 0, below 0): the same id, new terms. Every topic without feedback stays the very
    same object, shared by the channels that follow it. A paper with net 👎 in a channel
    is in its `disliked`."""
    votes = feedback.net_votes_of(db, list(topics_by_channel))
    if not votes:
        return Learned({}, {}, {})
    wanted = {
        paper_id
        for channel, by_topic in votes.items()
        for topic in topics_by_channel[channel]
        for paper_id in by_topic.get(topic.id, {})
    }
    texts = paper_texts(db, wanted)
    # Each labelled paper's features once per batch (channels vote on the same digests'
    # papers; computing them is much of refining), the latest FEATURES_KEPT only: a
    # paper's are ~300 phrases, ~40 KB.
    featurize = functools.lru_cache(maxsize=FEATURES_KEPT)(features)

    refined: dict[str, list[Topic]] = {}
    disliked: dict[str, frozenset[str]] = {}
    origin: dict[tuple[Term, ...], Topic] = {}
    for channel, by_topic in votes.items():
        against = frozenset(p for nets in by_topic.values() for p, net in nets.items() if net < 0)
        if against:
            disliked[channel] = against
        topics = list(topics_by_channel[channel])
        changed = False
        for index, topic in enumerate(topics):
            nets = by_topic.get(topic.id)
            if not nets:
                continue
            positives = [texts[p] for p, net in sorted(nets.items()) if net > 0 and p in texts]
            negatives = [texts[p] for p, net in sorted(nets.items()) if net < 0 and p in texts]
            if positives or negatives:
                # The backlog searches as for the original topic: feedback re-ranks the
                # topic's papers, it does not look for others (nor run a search of its own).
                refined_topic = replace(
                    refine(topic, positives, negatives, featurize=featurize),
                    searched=topic.search_phrases,
                )
                if refined_topic.terms != topic.terms:
                    origin[refined_topic.terms] = topic
                topics[index] = refined_topic
                changed = True
        if changed:
            refined[channel] = topics
    log.debug(
        "feedback: %d of %d channels have some, %d with topics refined",
        len(votes),
        len(topics_by_channel),
        len(refined),
    )
    return Learned(refined, disliked, origin)


def refined_topic(db: Store, channel: str, topic: Topic) -> Topic:
    """One topic as the channel's next digest scores it (the topic itself when the
    channel gave it no feedback): for explaining a pick."""
    return learn(db, {channel: [topic]}).topics.get(channel, [topic])[0]


def paper_texts(db: Store, paper_ids: set[str]) -> dict[str, PaperText]:
    """{paper id: normalised text} of the stored papers among `paper_ids`, in one query."""
    if not paper_ids:
        return {}
    rows = text_rows(db, sorted(paper_ids))
    return {str(row["id"]): PaperText.of(decode(row)) for row in rows}
