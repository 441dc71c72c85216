"""Why a paper was picked for a channel (`/papers why <id>`).

For each topic the channel follows: the paper's score as the digest computes it, the terms
that matched and what each gave, and how far the channel's 👍/👎 feedback moved it (as in the
digest, feedback re-ranks a topic's papers, it adds none). Reads only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from db import digests as digest_store
from db import feedback as feedback_store
from db.store import Store
from digests.digest import subscribed_topics
from digests.learning import learn
from digests.matching import PaperText, Term, score
from digests.render.view import shown_key
from digests.topics import Catalog, Topic
from digests.wording import here

log = logging.getLogger(__name__)

TERMS_SHOWN = 6  # matched terms listed per topic, the largest contributions first
TOPICS_SHOWN = 5


@dataclass(frozen=True)
class TermMatch:
    """One term that matched: its (normalised) phrase, weight, where it is, and what it
    added to the score (`base`: without the channel's feedback)."""

    phrase: str
    weight: float
    where: tuple[str, ...]  # "title", "abstract", "keywords"
    contribution: float
    base: float


@dataclass(frozen=True)
class TopicWhy:
    topic: Topic
    score: float  # with the channel's feedback, as its digest scores it
    base_score: float  # the topic's terms alone
    terms: tuple[TermMatch, ...]
    liked: int  # papers of this topic the channel voted up (net)
    disliked: int
    votes: tuple[int, int]  # 👍, 👎 on this paper for this topic in this channel
    picked: bool  # this topic picked the paper in the channel's digest

    def reaches(self, threshold: float) -> bool:
        """Whether the topic's next digest would pick this new paper: its score reaches
        the threshold, and, when feedback refined the topic, so does its score on the
        topic's own terms (feedback re-ranks a topic's papers, it never adds others)."""
        return self.score >= threshold and self.base_score >= threshold


@dataclass(frozen=True)
class Explanation:
    paper: dict[str, Any]
    channel: str
    threshold: float
    topics: tuple[TopicWhy, ...]  # the topics that picked it first, then by score
    digest: dict[str, Any] | None  # the latest digest item of the channel with it
    followed: int  # how many topics the channel follows
    voted_down: bool  # net 👎 here: the channel's digests never pick it again


def last_item(db: Store, channel: str, paper_id: str) -> dict[str, Any] | None:
    """The channel's latest digest item for the paper, with its digest's period, and
    `shown` and `of`: its number in the digest as posted, of how many."""
    digest = digest_store.last_digest_with(db, channel, paper_id)
    if digest is None:
        return None
    shown = shown_items(digest)
    number, item = next((n, i) for n, i in enumerate(shown, start=1) if i["paper_id"] == paper_id)
    return {**item, "week": digest["week"], "shown": number, "of": len(shown)}


def shown_items(digest: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded digest's items in the order it shows them, the number people quote
    (`#3`) counting from 1: `rank` is the order picked (best score first, across topics),
    and the digest groups its items under their topics."""
    order = {topic: index for index, topic in enumerate(digest["topics"])}
    return sorted(
        digest["items"],
        key=lambda item: shown_key(
            order, item["topics"], bool(item["from_archive"]), float(item["score"] or 0.0)
        ),
    )


def feedback_topics(
    db: Store, channel: str, topics: list[Topic]
) -> tuple[dict[str, Topic], dict[str, tuple[int, int]], frozenset[str]]:
    """({topic id: the topic as the channel's next digest scores it}, {topic id: (papers
    liked, papers disliked)}, the papers the channel voted down), from the digest's own
    `digests.learning.learn`: positives are papers with net votes > 0, negatives < 0."""
    learned = learn(db, {channel: topics})
    refined = {topic.id: topic for topic in learned.topics.get(channel, [])}
    net = feedback_store.net_votes(db, channel)
    sizes = {
        topic_id: (sum(v > 0 for v in votes.values()), sum(v < 0 for v in votes.values()))
        for topic_id, votes in net.items()
    }
    return refined, sizes, learned.disliked.get(channel, frozenset())


def term_matches(
    text: PaperText, terms: tuple[Term, ...], base: tuple[Term, ...]
) -> list[TermMatch]:
    """The terms of `terms` (and of `base`, the topic before feedback) that match, with
    each one's contribution under both; the largest change to the score first."""
    now = {term.phrase: term for term in terms}
    before = {term.phrase: term for term in base}
    found = []
    for phrase in dict.fromkeys([*now, *before]):
        term = now.get(phrase) or before[phrase]
        where = tuple(
            name
            for name, part in (
                ("title", text.title),
                ("abstract", text.abstract),
                ("keywords", text.keywords),
            )
            if phrase in part
        )
        if not where:
            continue
        value = score(text, (now[phrase],)) if phrase in now else 0.0
        old = score(text, (before[phrase],)) if phrase in before else 0.0
        found.append(TermMatch(phrase.strip(), term.weight, where, value, old))
    found.sort(key=lambda match: (-abs(match.contribution), match.phrase))
    return found


def explain(db: Store, channel: str, paper: dict[str, Any], catalog: Catalog) -> Explanation:
    """Why `paper` is (or is not) in `channel`'s digests; see the module doc."""
    topics = subscribed_topics(db, channel, catalog)
    text = PaperText.of(paper)
    item = last_item(db, channel, str(paper["id"]))
    picked_by = set(item["topics"]) if item else set()
    refined, sizes, disliked = feedback_topics(db, channel, topics)
    votes = _votes(db, channel, str(paper["id"]))
    found = []
    for topic in topics:
        used = refined.get(topic.id, topic)
        found.append(
            TopicWhy(
                topic=topic,
                score=score(text, used.terms),
                base_score=score(text, topic.terms),
                terms=tuple(term_matches(text, used.terms, topic.terms)),
                liked=sizes.get(topic.id, (0, 0))[0],
                disliked=sizes.get(topic.id, (0, 0))[1],
                votes=votes.get(topic.id, (0, 0)),
                picked=topic.id in picked_by,
            )
        )
    found.sort(key=lambda why: (not why.picked, -why.score))
    return Explanation(
        paper,
        channel,
        catalog.threshold,
        tuple(found),
        item,
        len(topics),
        str(paper["id"]) in disliked,
    )


def _votes(db: Store, channel: str, paper_id: str) -> dict[str, tuple[int, int]]:
    """{topic id: (👍, 👎)} of the channel's users on this paper."""
    found: dict[str, tuple[int, int]] = {}
    for row in feedback_store.channel_feedback(db, channel):
        if row["paper_id"] != paper_id:
            continue
        up, down = found.get(str(row["topic_id"]), (0, 0))
        found[str(row["topic_id"])] = (up + 1, down) if int(row["vote"]) > 0 else (up, down + 1)
    return found


def _label(topic: Topic) -> str:
    return topic.label if topic.is_custom else f"{topic.label} (`{topic.id}`)"


def explanation_lines(why: Explanation) -> tuple[str, list[str]]:
    """A heading and lines for a reply; `backticks` mark ids. A personal digest's answer
    says "your", not "this channel's" (`digests.wording`)."""
    where = here(why.channel)
    paper = why.paper
    head = f"Why “{paper['title']}” (`{paper['id']}`):"
    lines: list[str] = []
    item = why.digest
    if item is not None:
        picked = [t for t in why.topics if t.picked]
        names = ", ".join(_label(t.topic) for t in picked) or ", ".join(item["topics"])
        archive = ", from the archive" if item["from_archive"] else ""
        lines.append(
            f"It was in {where.whose} digest for {item['week']} (#{item['shown']} of {item['of']}"
            f"{archive}), picked for {names} with a score of {float(item['score']):.2f}."
        )
    else:
        lines.append(f"It has not been in {where.whose} digests.")
    if why.voted_down:
        lines.append(
            f"{where.who} voted it down (net 👎), so {where.its} digests never pick it again."
        )
    if not why.followed:
        lines.append(f"{where.subject} follows no topics, so nothing is picked for it.")
        return head, lines
    lines.append(f"A topic picks a paper that scores {why.threshold:g} or more.")
    shown = [t for t in why.topics if t.score or t.base_score or t.picked][:TOPICS_SHOWN]
    if not shown:
        lines.append(f"It matches none of the terms of {where.whose} topics.")
    for topic in shown:
        lines.extend(_topic_lines(topic, why.threshold))
    return head, lines


def _topic_lines(why: TopicWhy, threshold: float) -> list[str]:
    if why.reaches(threshold):
        reaches = "reaches the line"
    elif why.score >= threshold:
        # The digest scores a refined topic only on the papers its own terms reach
        # (`digests.learning`): "reaches the line" here would promise a pick never made.
        reaches = (
            f"below the line: {why.base_score:.2f} on the topic's own terms, and feedback "
            "only re-ranks the papers those reach"
        )
    else:
        reaches = "below the line"
    lines = [f"{_label(why.topic)}: scores {why.score:.2f} now ({reaches})."]
    terms = [t for t in why.terms if t.contribution or t.base][:TERMS_SHOWN]
    if terms:
        lines.append("  Terms: " + "; ".join(_term_text(t) for t in terms) + ".")
    if why.liked or why.disliked:
        moved = why.score - why.base_score
        effect = (
            f"moved this paper's score by {moved:+.2f} (from {why.base_score:.2f})"
            if abs(moved) >= 0.005
            else "did not change this paper's score"
        )
        if abs(moved) < 0.005 and max(why.liked, why.disliked) < 2:
            # `digests.topic_model.refine` moves only words that two papers voted alike
            # share: one vote each way changes nothing, and people wonder why.
            effect += " yet: a word counts once two papers voted the same way have it"
        lines.append(
            f"  Feedback: 👍 on {why.liked} and 👎 on {why.disliked} of this topic's papers "
            f"here {effect}."
        )
    else:
        lines.append("  Feedback: none on this topic here yet.")
    if any(why.votes):
        lines.append(f"  This paper: 👍 {why.votes[0]} 👎 {why.votes[1]}.")
    return lines


def _term_text(match: TermMatch) -> str:
    where = ", ".join(match.where)
    text = f"“{match.phrase}” {match.contribution:+.2f} ({where})"
    if abs(match.contribution - match.base) < 0.005:
        return text
    if not match.base:
        return text[:-1] + ", from feedback)"
    return text[:-1] + f", {match.base:+.2f} before feedback)"


__all__ = [
    "Explanation",
    "TermMatch",
    "TopicWhy",
    "explain",
    "explanation_lines",
    "shown_items",
]
