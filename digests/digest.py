"""The digest: which papers a channel gets this period, picked once and recorded.

`build_digest(db, channel, now)` is a plain function of the database and the clock; the
rules are in docs/explanation/guarantees.md ("A digest holds what is new")."""

from __future__ import annotations

import heapq
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Any

from config.settings import Settings
from db import candidates as candidate_store
from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from db.connection import database_file
from db.papers import decode, get_paper, rows_with_ids
from db.store import Store
from digests.channels import parse_channel
from digests.learning import learn
from digests.matching import Matcher, PaperText, Term, score
from digests.schedule import Schedule, parse_cadence, period_label, week_start
from digests.timestamps import stamp
from digests.topics import Catalog, Topic, stored_custom_topic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DigestItem:
    paper: dict[str, Any]
    topics: tuple[Topic, ...]
    score: float
    from_archive: bool = False  # an older paper, picked by the backlog


@dataclass(frozen=True)
class Digest:
    channel: str
    week: str  # the period key: 2026-W49 (weekly) or 2026-11-30 (daily, weekdays)
    topics: tuple[Topic, ...]
    items: tuple[DigestItem, ...]
    built_at: str
    recorded: bool  # False for a preview that was never stored
    digest_id: int | None = None
    notes: tuple[str, ...] = field(default=())
    since: str | None = None  # papers first seen after this moment were new

    @property
    def empty(self) -> bool:
        return not self.items

    @property
    def week_start(self) -> date:
        """The Monday of a weekly digest's week; a daily digest's date."""
        return week_start(self.week)

    @property
    def period_label(self) -> str:
        """`week of 30 Nov 2026`, or `Mon 30 Nov 2026` for a daily digest."""
        return period_label(self.week)


def channel_schedule(db: Store, channel: str, settings: Settings, now: datetime) -> Schedule:
    """The channel's schedule, creating the channel with the default one if new."""
    return schedule_of(ensure_channel(db, channel, settings, now))


def schedule_of(row: dict[str, Any]) -> Schedule:
    """A stored channel row's schedule."""
    return Schedule(
        str(row["weekday"]),
        str(row["time"]),
        str(row["timezone"]),
        parse_cadence(row.get("cadence")),
    )


def ensure_channel(db: Store, channel: str, settings: Settings, now: datetime) -> dict[str, Any]:
    ref = parse_channel(channel)
    defaults = {
        "weekday": settings.default_weekday,
        "time": settings.default_time,
        "timezone": settings.default_timezone,
    }
    return channel_store.ensure_channel(db, str(ref), ref.platform, defaults, stamp(now))


def subscribed_topics(db: Store, channel: str, catalog: Catalog) -> list[Topic]:
    """The channel's topics, catalog and custom, in subscription order."""
    topics = []
    for row in channel_store.active_subscriptions(db, channel):
        if row["custom_text"]:
            topics.append(stored_custom_topic(row["custom_text"]))
        elif (topic := catalog.get(row["topic_id"])) is not None:
            topics.append(topic)
        else:
            log.warning(
                "channel %s follows %s, which the catalog no longer has", channel, row["topic_id"]
            )
    return topics


def select_items(
    papers: list[dict[str, Any]],
    topics: list[Topic],
    *,
    threshold: float,
    per_topic: int,
    archive: list[dict[str, Any]] | None = None,
) -> list[DigestItem]:
    """Top `per_topic` papers per topic at or above `threshold`, merged, best first.
    `archive` papers only fill the slots of a topic that `papers` leave empty; they come
    after the new ones, marked `from_archive`."""
    old = {str(paper["id"]) for paper in archive or []}
    by_id = {str(paper["id"]): paper for paper in [*(archive or []), *papers]}
    scores = _score_all(by_id.values(), topics, threshold)
    return _pick(scores, by_id, old, topics, per_topic)


def _score_all(
    papers: Iterable[Mapping[str, Any]], topics: Sequence[Topic], threshold: float
) -> dict[str, dict[str, float]]:
    """{topic id: {paper id: score}} for the scores at or above `threshold`."""
    papers = list(papers)
    if not papers:
        return {}
    matcher = Matcher({topic.id: topic.terms for topic in topics})
    scores: dict[str, dict[str, float]] = {}
    for paper in papers:
        for topic_id, value in matcher.scores(PaperText.of(paper)).items():
            if value >= threshold:
                scores.setdefault(topic_id, {})[str(paper["id"])] = value
    return scores


def _pick(
    scores: Mapping[str, Mapping[str, float]],
    papers: Mapping[str, Mapping[str, Any]],
    old: Container[str],
    topics: Sequence[Topic],
    per_topic: int,
    reached: Callable[[str, Topic], bool] | None = None,
) -> list[DigestItem]:
    """The items: each topic's top `per_topic` of `scores` by (new before archive, score,
    first stored, id), merged, each paper once with all the subscribed topics it reached
    (`reached`, when `scores` holds only each topic's contenders: by default, in `scores`)."""
    picked: dict[str, float] = {}
    for topic in topics:
        ranked = heapq.nsmallest(  # = sorted(...)[:per_topic], without sorting them all
            per_topic,
            scores.get(topic.id, {}).items(),
            key=lambda pair: (
                pair[0] in old,
                -pair[1],
                str(papers[pair[0]].get("added_at") or ""),
                pair[0],
            ),
        )
        for paper_id, value in ranked:
            picked[paper_id] = max(value, picked.get(paper_id, 0.0))
    items = [
        DigestItem(
            paper=dict(papers[paper_id]),
            topics=tuple(
                topic
                for topic in topics
                if (reached(paper_id, topic) if reached else paper_id in scores.get(topic.id, {}))
            ),
            score=best,
            from_archive=paper_id in old,
        )
        for paper_id, best in picked.items()
    ]
    items.sort(key=lambda item: (item.from_archive, -item.score, str(item.paper["id"])))
    return items


def _recorded(
    db: Store,
    row: dict[str, Any],
    topics: list[Topic],
    catalog: Catalog,
    papers: Mapping[str, dict[str, Any]] | None = None,
) -> Digest:
    """The digest as recorded. `papers`: rows read for building it (a window's, read by
    this build or checked unchanged since: same ids, stamps and `updated_at`, which every
    change of what a digest shows sets), not read again."""
    known = {topic.id: topic for topic in [*topics, *catalog.topics]}
    items = []
    for item in row["items"]:
        paper = (papers or {}).get(str(item["paper_id"]))
        if paper is None:
            paper = get_paper(db, item["paper_id"])
            if paper is None:
                continue
        item_topics = tuple(known[t] for t in item["topics"] if t in known)
        items.append(
            DigestItem(
                paper,
                item_topics,
                float(item["score"]),
                from_archive=bool(item.get("from_archive")),
            )
        )
    digest_topics = tuple(known[t] for t in row["topics"] if t in known)
    return Digest(
        channel=str(row["channel"]),
        week=str(row["week"]),
        topics=digest_topics,
        items=tuple(items),
        built_at=str(row["built_at"]),
        recorded=True,
        digest_id=int(row["id"]),
        since=row.get("since"),
    )


def new_since(db: Store, channel: str, now: datetime, settings: Settings) -> tuple[str, str]:
    """(since, stale): papers first seen after `since` are new, unless published before
    `stale`. `since` is when the channel's previous digest was built (one that reached
    the channel, or is on its way), or the first-digest lookback."""
    lookback = timedelta(days=settings.first_digest_days)
    previous = digest_store.last_received_digest(db, channel, stamp(now))
    since = datetime.fromisoformat(str(previous["built_at"])) if previous else now - lookback
    return stamp(since), stamp(since - lookback)


# The backlog looks for archive papers among the best this many full-text matches of a
# topic's terms (bm25), not in the whole store: its cost stays bounded as the store grows.
ARCHIVE_LIMIT = 500
# ... and reads the next ones, ARCHIVE_LIMIT at a time, while slots stay empty, down to
# ARCHIVE_PAGES * ARCHIVE_LIMIT matches.
ARCHIVE_PAGES = 4


@dataclass
class _Window:
    """The papers new in one window (since, stale, now), read and scored once for all the
    channels that share it: `hits[terms]` lists (paper id, score) at or above the
    threshold, for each distinct topic (by its terms) scored so far, and `ranked[terms]`
    the same best first, as a digest ranks new papers. `fingerprint` is
    what the window's query returned (ids and versions): a cached window is used again
    only while the store still returns exactly that."""

    built_at: str
    threshold: float
    fingerprint: tuple[tuple[Any, ...], ...]
    papers: dict[str, dict[str, Any]]
    texts: dict[str, PaperText]
    hits: dict[tuple[Term, ...], dict[str, float]] = field(default_factory=dict)
    ranked: dict[tuple[Term, ...], list[tuple[str, float]]] = field(default_factory=dict)
    words: dict[str, list[str]] | None = None  # word -> the papers having it (`_having`)

    def _having(self, topics: Iterable[tuple[Term, ...]]) -> Iterable[str]:
        """The papers that have the first word of some term of `topics`: the others score
        0 for them. Channels built one at a time bring a few topics not scored yet each;
        scoring only these papers keeps that cheap."""
        firsts = set()
        for terms in topics:
            for term in terms:
                words = term.phrase.split()
                if not words or self.threshold <= 0:  # a term of no words: check them all
                    return list(self.texts)
                firsts.add(words[0])
        if self.words is None:
            self.words = {}
            for paper_id, text in self.texts.items():
                for word in {*text.title.split(), *text.keywords.split(), *text.abstract.split()}:
                    self.words.setdefault(word, []).append(paper_id)
        having = {paper_id for word in firsts for paper_id in self.words.get(word, ())}
        return [paper_id for paper_id in self.texts if paper_id in having]

    @classmethod
    def read(
        cls,
        db: Store,
        now: datetime,
        since: str,
        stale: str,
        threshold: float,
        fingerprint: tuple[tuple[Any, ...], ...],
    ) -> _Window:
        # Only what ranking needs is kept of each row (id, added_at), with its normalised
        # text: full rows are several KB a paper, and a window can hold 100,000 papers (a
        # first digest after a list of papers was stored). A digest reads its items' rows
        # (`_select`).
        papers: dict[str, dict[str, Any]] = {}
        texts: dict[str, PaperText] = {}
        for row in candidate_store.new_papers(db, since, stale, stamp(now)):
            paper = decode(row)
            paper_id = str(paper["id"])
            papers[paper_id] = {"id": paper["id"], "added_at": paper.get("added_at")}
            texts[paper_id] = PaperText.of(paper)
        return cls(stamp(now), threshold, fingerprint, papers, texts)

    def score(
        self, topics: Iterable[Topic], origin: Mapping[tuple[Term, ...], Topic] | None = None
    ) -> None:
        """Score the window's papers for the topics (by their terms) not scored yet.
        `origin`: {a topic refined by feedback's terms: the topic it was refined from}
        (`digests.learning`). A refined topic re-ranks its original's papers: it scores
        only the papers the original reaches the threshold for, so feedback never makes a
        topic take a paper its own terms do not (and costs a few hundred papers' scoring
        per refined topic, not the window's: refined terms hold common words)."""
        # Each membership test hashes a tuple of ~60 terms (a Python call per term, not
        # cached): each distinct topic object is tested once (30,000 topics a batch, a
        # few hundred objects and one per refined topic), and `origin` not at all when
        # there is no feedback.
        plain: list[Topic] = list({id(topic): topic for topic in topics}.values())
        refined: dict[tuple[Term, ...], Topic] = {}
        if origin:
            kept = []
            for topic in plain:
                if topic.terms not in origin:
                    kept.append(topic)
                elif topic.terms not in self.hits:
                    refined[topic.terms] = topic
            plain = kept + [origin[terms] for terms in refined]
        self._score_plain({t.terms: t for t in plain if t.terms not in self.hits})
        origin = origin or {}
        # Refined topics of one original score the same papers: each paper's words are
        # split once per original, and not kept (~13 KB a paper).
        by_origin: dict[tuple[Term, ...], list[tuple[Term, ...]]] = {}
        for terms in refined:
            by_origin.setdefault(origin[terms].terms, []).append(terms)
        for original, group in by_origin.items():
            for terms, pairs in self._score_some(group, self.hits[original]).items():
                self._keep(terms, pairs)

    def _score_some(
        self, topics: list[tuple[Term, ...]], paper_ids: Iterable[str]
    ) -> dict[tuple[Term, ...], list[tuple[str, float]]]:
        """{terms: (paper id, score) of the papers reaching the threshold}, for a few
        topics' terms, exactly `score`'s values: each paper is scored on only the terms
        whose first word it has (a term whose first word a paper lacks adds nothing to
        `score`'s sum, so the sum of the others, in the same order, is the same float).
        A refined topic has ~60 terms and a paper the first word of a few."""
        plan: list[tuple[tuple[Term, ...], dict[str, list[int]] | None, frozenset[str]]] = []
        for terms in topics:
            by_first: dict[str, list[int]] = {}
            for index, term in enumerate(terms):
                first = term.phrase.split()[:1]
                # A padded phrase found in a text has its first word there between
                # spaces (so in the text's split); a term of no words, or not padded
                # (made by hand), can match elsewhere: `score` on all the terms.
                if not first or not (term.phrase[0].isspace() and term.phrase[-1].isspace()):
                    plan.append((terms, None, frozenset()))
                    break
                by_first.setdefault(first[0], []).append(index)
            else:
                plan.append((terms, by_first, frozenset(by_first)))
        # Found pairs by the plan's position, not keyed by the terms: a key hashes
        # every term (~60), for each paper and topic.
        found: list[list[tuple[str, float]]] = [[] for _ in plan]
        for paper_id in paper_ids:
            text = self.texts[paper_id]
            having = frozenset(
                (*text.title.split(), *text.keywords.split(), *text.abstract.split())
            )
            for (terms, lead, firsts), pairs in zip(plan, found, strict=True):
                if lead is None:
                    value = score(text, terms)
                else:
                    indices = sorted(i for word in firsts & having for i in lead[word])
                    value = score(text, tuple(terms[i] for i in indices))
                if value >= self.threshold:
                    pairs.append((paper_id, value))
        result: dict[tuple[Term, ...], list[tuple[str, float]]] = {terms: [] for terms in topics}
        for (terms, _, _), pairs in zip(plan, found, strict=True):
            result[terms].extend(pairs)
        return result

    def _score_plain(self, missing: dict[tuple[Term, ...], Topic]) -> None:
        if not missing:
            return
        keys = {f"t{index}": terms for index, terms in enumerate(missing)}
        found: dict[tuple[Term, ...], list[tuple[str, float]]] = {terms: [] for terms in missing}
        if len(missing) <= FEW_TOPICS:
            # A channel's own new topics: `score`'s few str.find per term beat walking
            # every word of each paper, which is what pays off for thousands of topics.
            for paper_id in self._having(missing):
                for terms in missing:
                    if (value := score(self.texts[paper_id], terms)) >= self.threshold:
                        found[terms].append((paper_id, value))
        else:
            matcher = Matcher(keys)
            for paper_id in self._having(missing):
                for key, value in matcher.scores(self.texts[paper_id]).items():
                    if value >= self.threshold:
                        found[keys[key]].append((paper_id, value))
        for terms, pairs in found.items():
            self._keep(terms, pairs)

    def _keep(self, terms: tuple[Term, ...], pairs: list[tuple[str, float]]) -> None:
        self.hits[terms] = dict(pairs)
        self.ranked[terms] = sorted(
            pairs, key=lambda pair: (-pair[1], str(self.papers[pair[0]]["added_at"]), pair[0])
        )


# Up to this many topics are scored with `score` directly, more with a `Matcher` (same scores).
FEW_TOPICS = 3


class _Windows:
    """Windows read and scored lately, for the next digests with the same window: the
    scheduler builds channels one at a time, and ten thousand channels due on Monday at
    09:00 all share last Monday's window. A window is used again only if the store still
    returns the same papers in the same versions for it (one indexed query of ids and
    stamps, no text), so a paper stored, merged or restamped meanwhile is never missed;
    a database in memory (tests) is never cached."""

    SIZE = 2
    # A window of more papers is used for its build and not kept: a kept window holds
    # about 2 KB a paper (id, date, normalised text) plus its hits, and windows grow
    # with the time since a channel's last digest (a first digest after a bulk load, a
    # channel back after months: 100,000 papers, ~200 MB). A week of arXiv cs is ~3,000.
    KEEP_PAPERS = 20_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: OrderedDict[tuple[str, ...], _Window] = OrderedDict()

    def get(
        self,
        db: Store,
        now: datetime,
        since: str,
        stale: str,
        topics: Iterable[Topic],
        threshold: float,
        origin: Mapping[tuple[Term, ...], Topic] | None = None,
    ) -> _Window:
        # A merge that changes no stamp nor length goes unseen by a kept window until its
        # next change (`db.candidates.WINDOW_KEYS`); `PaperText.of` still compares the text.
        fingerprint = candidate_store.window_keys(db, since, stale, stamp(now))
        path = database_file(db) or ""
        key = (path, stamp(now), since, stale, str(threshold))
        with self._lock:
            window = self._cached.get(key) if path else None
            if window is None or window.fingerprint != fingerprint:
                window = _Window.read(db, now, since, stale, threshold, fingerprint)
                self._cached.pop(key, None)
                if path and len(window.papers) <= self.KEEP_PAPERS:
                    self._cached[key] = window
                    while len(self._cached) > self.SIZE:
                        self._cached.popitem(last=False)
            if key in self._cached:
                self._cached.move_to_end(key)
            window.score(topics, origin)
        return window

    def clear(self) -> None:
        with self._lock:
            self._cached.clear()


WINDOWS = _Windows()


@dataclass
class _Archive:
    """Archive candidates of each distinct topic, sought once per build (for all the
    channels with the backlog on that follow it), a page at a time: page k is the
    full-text matches of its terms ranked k*ARCHIVE_LIMIT to (k+1)*ARCHIVE_LIMIT by bm25,
    and of those, the ones stored by `built_at` scoring at or above the threshold, as
    (paper id, score, added_at). The search looks for the topic's `search_phrases`
    (a learned topic: not its weaker learned terms; a paper matching none of them seldom
    reaches the line); bm25 is not the topic's score, so the best scores of the matches
    past the pages read can be missed (docs/explanation/architecture.md, "Digests at
    scale", says how often)."""

    built_at: str
    threshold: float
    found: dict[tuple[tuple[Term, ...], int], tuple[list[tuple[str, float, str]], bool]] = field(
        default_factory=dict
    )
    ranked: dict[str, list[int]] = field(default_factory=dict)  # see `_search`
    # {a topic refined by feedback's terms: its original} (`digests.learning`): a
    # refined topic's candidates must reach the line for its original too.
    origin: Mapping[tuple[Term, ...], Topic] = field(default_factory=dict)

    def hits(
        self, db: Store, topic: Topic, page: int = 0
    ) -> tuple[list[tuple[str, float, str]], bool]:
        """(the page's candidates, whether the full-text search has more pages)."""
        key = (topic.terms, page)
        if key not in self.found:
            self.found[key] = self._search(db, topic, page)
        return self.found[key]

    def _search(
        self, db: Store, topic: Topic, page: int
    ) -> tuple[list[tuple[str, float, str]], bool]:
        # `search_phrases`: a learned topic's hand phrases and its strongest learned terms,
        # not all of them (words common enough to match much of a store made this several
        # times dearer; docs/dev/relevance.md "Learned topic models").
        phrases = dict.fromkeys(p.strip() for p in topic.search_phrases if p.strip())
        if not phrases:
            return [], False
        expression = " OR ".join(f'"{phrase}"' for phrase in phrases)
        # Every page's rowids in one query, on the first page's turn: ranking (bm25 of
        # every match) is most of its cost whatever the limit, and a query per page would
        # rank them all again.
        # Keyed by the search, not the terms: a topic refined by feedback searches as its
        # original does (`digests.learning`), and shares its ranking.
        if expression not in self.ranked:
            self.ranked[expression] = candidate_store.ranked_matches(
                db, expression, ARCHIVE_LIMIT * ARCHIVE_PAGES
            )
        rowids = self.ranked[expression][page * ARCHIVE_LIMIT : (page + 1) * ARCHIVE_LIMIT]
        if not rowids:
            return [], False
        found = []
        for row in candidate_store.archive_rows(db, rowids, self.built_at):
            value = _gated_score(topic, PaperText.of(decode(row)), self.threshold, self.origin)
            if value >= self.threshold:
                found.append((str(row["id"]), value, str(row["added_at"] or "")))
        return found, len(rowids) == ARCHIVE_LIMIT


def _gated_score(
    topic: Topic, text: PaperText, threshold: float, origin: Mapping[tuple[Term, ...], Topic]
) -> float:
    """The paper's score for `topic`, or 0 for a topic refined by feedback (in `origin`)
    whose original does not reach `threshold` for it: feedback re-ranks and filters a
    topic's papers, it never adds one the topic's own terms do not reach (as
    `_Window.score` does for new papers; this is the rule for the backlog, papers carried
    from an undelivered digest, and the topics an archive item is shown under)."""
    value = topic.score(text)
    original = origin.get(topic.terms) if origin and value >= threshold else None
    if original is not None and original.score(text) < threshold:
        return 0.0
    return value


def _select(
    db: Store,
    channel: str,
    topics: list[Topic],
    window: _Window,
    archive: _Archive | None,
    *,
    threshold: float,
    per_topic: int,
    shown: dict[str, dict[str, Any]],
    disliked: frozenset[str] = frozenset(),
    origin: Mapping[tuple[Term, ...], Topic] | None = None,
) -> list[DigestItem]:
    """The channel's items from its window: the new papers it never claimed, papers an
    earlier digest picked that never reached it (new again), and with the backlog
    (`archive`), archive papers (stored by the build, not new) to fill empty slots.
    `shown`: the rows of the papers picked so far in this build, by id (read once per
    build, filled here), so a batch shows a paper as it was first read in that batch.
    `disliked`: papers the channel voted 👎, never picked (`digests.learning`).
    `origin`: {a refined topic's terms: its original}, a refined topic takes only papers
    its original reaches (`_gated_score`).
    """
    origin = origin or {}
    already = outbox.claimed_paper_ids(db, channel) | disliked
    built_at = window.built_at
    # Each topic's contenders: its best `per_topic` new papers the channel never had (a
    # paper further down the window's ranking cannot make the top), then the others below.
    scores: dict[str, dict[str, float]] = {}
    for topic in topics:
        contenders = scores.setdefault(topic.id, {})
        for paper_id, value in window.ranked.get(topic.terms, []):
            if len(contenders) == per_topic:
                break
            if paper_id not in already:
                contenders[paper_id] = value
    carried = {
        paper_id
        for paper_id in digest_store.picked_paper_ids(db, channel, built_at) - already
        if paper_id not in window.papers
    }
    extra: dict[str, dict[str, Any]] = {}
    for paper_id in sorted(carried):
        rows = candidate_store.stored_by(db, paper_id, built_at)
        extra.update((str(row["id"]), decode(row)) for row in rows)
    carried_scores = _score_all(extra.values(), topics, threshold)
    for topic in topics if origin and carried_scores else ():
        if (original := origin.get(topic.terms)) is not None and topic.id in carried_scores:
            # Feedback never adds a paper: only those the original topic reaches.
            carried_scores[topic.id] = {
                paper_id: value
                for paper_id, value in carried_scores[topic.id].items()
                if original.score(PaperText.of(extra[paper_id])) >= threshold
            }
    for topic_id, found in carried_scores.items():
        scores.setdefault(topic_id, {}).update(found)
    old: dict[str, dict[str, Any]] = {}  # archive papers: id and added_at, for ranking
    # Archive papers only fill the slots new papers leave empty: a topic with enough new
    # papers never picks one, so its archive is not sought.
    short = [topic for topic in topics if len(scores.get(topic.id, {})) < per_topic]
    for topic in short if archive is not None else ():
        assert archive is not None
        # The next page only while this one leaves the topic's slots empty: a channel
        # that already had the first pages' papers (claimed) is not left without any.
        # At most ARCHIVE_PAGES: a topic whose archive ran dry would read all its matches
        # every build.
        contenders = scores.setdefault(topic.id, {})
        empty, page, more = per_topic - len(contenders), 0, True
        while more and empty > 0 and page < ARCHIVE_PAGES:
            candidates, more = archive.hits(db, topic, page)
            page += 1
            for paper_id, value, added_at in candidates:
                if paper_id in already or paper_id in window.papers or paper_id in extra:
                    continue
                empty -= paper_id not in contenders
                contenders[paper_id] = value
                old[paper_id] = {"id": paper_id, "added_at": added_at}

    new_hits = {topic.id: window.hits.get(topic.terms, {}) for topic in topics}

    def reached(paper_id: str, topic: Topic) -> bool:
        return paper_id in new_hits[topic.id] or paper_id in scores[topic.id]

    papers = _Union(_Union(extra, old), window.papers)
    items = _pick(scores, papers, old, topics, per_topic, reached)
    # A window keeps only the id and date of its papers: the items' rows, read now, once
    # per build (`shown`): the channels of a batch share the week's papers, and reading
    # and decoding each one's rows again was a fifth of building 10,000 digests at 1M.
    wanted = [str(i.paper["id"]) for i in items if str(i.paper["id"]) not in extra]
    shown.update(_rows(db, [paper_id for paper_id in wanted if paper_id not in shown]))
    full_rows = {paper_id: shown[paper_id] for paper_id in wanted if paper_id in shown}
    full_rows.update(extra)
    # (a paper gone since the window was read is left out: stores never delete one)
    items = [item for item in items if str(item.paper["id"]) in full_rows]
    for index, item in enumerate(items):
        full = full_rows[str(item.paper["id"])]
        if not item.from_archive:
            items[index] = replace(item, paper=full)
        else:
            # Only its id and date were read, and its score for the topics it was sought
            # for: now its row, and every subscribed topic it reaches, as for a new paper.
            text = PaperText.of(full)
            its_topics = tuple(
                topic
                for topic in topics
                if reached(item.paper["id"], topic)
                or _gated_score(topic, text, threshold, origin) >= threshold
            )
            items[index] = replace(item, paper=full, topics=its_topics)
    return items


def _rows(db: Store, paper_ids: list[str]) -> dict[str, dict[str, Any]]:
    """{id: decoded row} of these papers."""
    if not paper_ids:
        return {}
    return {str(row["id"]): decode(row) for row in rows_with_ids(db, paper_ids)}


class _Union(Mapping[str, dict[str, Any]]):
    """Two mappings read as one, without copying either (a window is shared)."""

    def __init__(
        self, first: Mapping[str, dict[str, Any]], second: Mapping[str, dict[str, Any]]
    ) -> None:
        self.first, self.second = first, second

    def __getitem__(self, key: str) -> dict[str, Any]:
        if key in self.first:
            return self.first[key]
        return self.second[key]

    def __contains__(self, key: object) -> bool:
        return key in self.first or key in self.second

    def __iter__(self) -> Iterator[str]:
        yield from self.first
        yield from (key for key in self.second if key not in self.first)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _covering(db: Store, channel: str, schedule: Schedule, now: datetime) -> dict[str, Any] | None:
    """The recorded digest that already covers the period of `now`: the one with its key,
    or the channel's latest digest if it was built within that period (after a change of
    cadence or timezone: a daily digest of Wednesday covers that week for a weekly one)."""
    key = schedule.key(now)
    existing = digest_store.get_digest(db, channel, key)
    if existing is not None:
        return existing
    # Its row first, its items only if it covers (reading them for each of 10,000
    # channels, to find it does not, was most of this check).
    latest = digest_store.last_digest(db, channel, at_or_before=stamp(now), with_items=False)
    if latest is not None and schedule.key(datetime.fromisoformat(latest["built_at"])) == key:
        return digest_store.get_digest(db, channel, str(latest["week"]))
    return None


def build_digest(
    db: Store,
    channel: str,
    now: datetime,
    *,
    catalog: Catalog,
    settings: Settings,
    preview: bool = False,
) -> Digest:
    """This period's digest for `channel` (the period of `now` in the channel's timezone:
    its ISO week, or its date for a daily or weekdays channel), recorded once: building it
    again, also after a change of cadence or timezone whose period the channel's latest
    digest already falls in, returns that one. A preview is built the same way, not
    recorded.

    Per subscribed topic, the top N (settings) new papers whose score reaches the
    threshold, best first; with the channel's backlog on, archive papers (stored by `now`,
    not new) fill the slots left empty, marked `from_archive`. New: stored by `now`, and
    first stored or first published after `since` (`new_since`), unless published more
    than PAPERBOY_FIRST_DIGEST_DAYS days before it. A paper an earlier digest picked that
    never reached the channel is new again; one delivered or queued to the channel, or
    voted 👎 there, is never picked. A paper appears once, with all its subscribed topics;
    a topic with feedback is scored as `digests.learning` refines it."""
    built = build_digests(db, [channel], now, catalog=catalog, settings=settings, preview=preview)
    return next(built)


def build_digests(
    db: Store,
    channels: Iterable[str],
    now: datetime,
    *,
    catalog: Catalog,
    settings: Settings,
    preview: bool = False,
) -> Iterator[Digest]:
    """Each channel's digest for the period of `now`, exactly as `build_digest` builds it
    alone, as they are built (not in the order given: `Digest.channel` says whose).

    The work channels share is done once: the papers new in a window (channels whose
    previous digests were built together share one) are read and scored once, each
    distinct topic once, however many channels follow it. So the cost grows with the new
    papers and the distinct topics, then a few indexed reads per channel, never with the
    size of the store (the backlog reads at most ARCHIVE_LIMIT full-text matches per
    topic). Digests are recorded CHUNK channels to a transaction and yielded once
    committed; none is kept here, so memory does not grow with the channels. An error
    stops the batch: the digests of the chunk under way are not recorded (those before
    it are), and building the rest again records each channel's once."""
    waiting: dict[tuple[str, str], list[tuple[dict[str, Any], str, list[Topic]]]] = {}
    for channel in channels:
        row = ensure_channel(db, channel, settings, now)
        schedule = schedule_of(row)
        topics = subscribed_topics(db, channel, catalog)
        existing = _covering(db, channel, schedule, now)
        if existing is not None:
            yield _recorded(db, existing, topics, catalog)
            continue
        since, stale = new_since(db, channel, now, settings)
        waiting.setdefault((since, stale), []).append((row, schedule.key(now), topics))
    # Feedback: the topics a channel voted on, refined, for the whole batch in
    # two queries; topics without feedback stay the same objects (shared window scores).
    learned = learn(db, {str(p[0]["id"]): p[2] for plans in waiting.values() for p in plans})
    if learned.topics:
        waiting = {
            key: [
                (row, week, learned.topics.get(str(row["id"]), topics))
                for row, week, topics in plans
            ]
            for key, plans in waiting.items()
        }
    archive = _Archive(stamp(now), catalog.threshold, origin=learned.origin)
    shown: dict[str, dict[str, Any]] = {}  # the picked papers' rows (see `_select`)
    for (since, stale), plans in waiting.items():
        every = [topic for _, _, topics in plans for topic in topics]
        window = WINDOWS.get(db, now, since, stale, every, catalog.threshold, learned.origin)
        for start in range(0, len(plans), CHUNK):
            chosen = [
                (row, week, topics, _select(
                    db,
                    str(row["id"]),
                    topics,
                    window,
                    archive if row.get("backlog") else None,
                    threshold=catalog.threshold,
                    per_topic=settings.digest_size,
                    shown=shown,
                    disliked=learned.disliked.get(str(row["id"]), frozenset()),
                    origin=learned.origin,
                ))
                for row, week, topics in plans[start : start + CHUNK]
            ]  # fmt: skip
            if preview:
                for row, week, topics, items in chosen:
                    yield Digest(
                        str(row["id"]),
                        week,
                        tuple(topics),
                        tuple(items),
                        window.built_at,
                        recorded=False,
                        since=since,
                    )
                continue
            # One transaction per chunk of channels, not one per digest: a commit waits
            # for the disk, and was most of a digest's cost once the scoring was shared.
            # The papers are chosen before it (the write lock is held for the inserts
            # only), and the digests yielded after it (a caller that stops early never
            # rolls one back).
            with db.write():
                recorded = [
                    _record(db, str(row["id"]), week, topics, items, window.built_at, since)
                    for row, week, topics, items in chosen
                ]
            for (_, _, topics, items), stored in zip(chosen, recorded, strict=True):
                yield _recorded(
                    db, stored, topics, catalog, {str(i.paper["id"]): i.paper for i in items}
                )


# Digests recorded per transaction in a batch (see `build_digests`).
CHUNK = 200


def _record(
    db: Store,
    channel: str,
    week: str,
    topics: list[Topic],
    items: list[DigestItem],
    built_at: str,
    since: str,
) -> dict[str, Any]:
    """Record a digest (or take the one another process recorded meanwhile)."""
    recorded = digest_store.insert_digest(
        db,
        channel,
        week,
        built_at,
        [topic.id for topic in topics],
        [
            {
                "paper_id": item.paper["id"],
                "topics": [topic.id for topic in item.topics],
                "score": item.score,
                "from_archive": item.from_archive,
            }
            for item in items
        ],
        since=since,
    )
    log.info(
        "digest %s %s: %d papers (%d from the archive), new since %s",
        channel,
        week,
        len(items),
        sum(item.from_archive for item in items),
        since,
    )
    return recorded
