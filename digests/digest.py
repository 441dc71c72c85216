"""The digest: which papers a channel gets this period, picked once and recorded.

`build_digest(db, channel, now)` is a plain function of the database and the clock,
so tests call it with a fixed `now` and the scheduler only decides when to call it.

- A digest is keyed by its period in the channel's timezone: the ISO week for a weekly
  channel (`2026-W49`), the date for a daily or weekdays one (`2026-11-30`). A period
  gets one digest: building it again returns the same one, and so does building it
  after a change of cadence or timezone when the channel's latest digest (built at or
  before `now`) already falls in the period, under the new schedule.
- **What is new.** Let `since` be when the channel's previous digest was built: the
  latest one, built at or before `now`, that reached the channel or is on its way (some
  message queued, sent, or held while paused); for its first digest, `now` minus
  `PAPERBOY_FIRST_DIGEST_DAYS` days. A paper stored by `now` is new when it was first
  stored after `since` (`added_at >= since`: stamps are to the second), or first published
  after `since` (`published_at > since`, set for arXiv and OpenReview papers: a preprint
  merged into a paper loaded from a list earlier). One exception: a paper published more
  than `PAPERBOY_FIRST_DIGEST_DAYS` days before `since` is not new however late it was
  stored (a backfill such as `paperboy fetch --since 2021-01-01` is archive, not news).
  So "new" is the later of the two moments, with a floor on how old a publication may be.
  A paper stored before the previous digest that did not match then is not new now:
  it is archive. A paper an earlier digest picked that never reached the channel (only
  printed, or its message given up) counts as new again, so nothing picked is lost.
- For each subscribed topic, the top N new papers (N from the settings) whose score
  reaches the calibrated threshold, best first. With the channel's backlog on, archive
  papers (stored by `now`, not new) fill the slots new papers leave empty, and are marked
  `from_archive`.
- Never a paper twice in a channel: papers delivered to the channel, or queued to be
  (`db.outbox.claimed_paper_ids`), are never picked again.
- A paper picked for several topics appears once, with all its subscribed topics.
- A preview is computed the same way, never recorded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlite_utils import Database

from config.settings import Settings
from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from db.papers import decode
from digests.channels import parse_channel
from digests.matching import PaperText
from digests.schedule import Schedule, parse_cadence, period_label, week_start
from digests.timestamps import stamp
from digests.topics import Catalog, Topic, custom_topic

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


def channel_schedule(db: Database, channel: str, settings: Settings, now: datetime) -> Schedule:
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


def ensure_channel(db: Database, channel: str, settings: Settings, now: datetime) -> dict[str, Any]:
    ref = parse_channel(channel)
    defaults = {
        "weekday": settings.default_weekday,
        "time": settings.default_time,
        "timezone": settings.default_timezone,
    }
    return channel_store.ensure_channel(db, str(ref), ref.platform, defaults, stamp(now))


def subscribed_topics(db: Database, channel: str, catalog: Catalog) -> list[Topic]:
    """The channel's topics, catalog and custom, in subscription order."""
    topics = []
    for row in channel_store.active_subscriptions(db, channel):
        if row["custom_text"]:
            topics.append(custom_topic(row["custom_text"]))
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
    scores: dict[str, dict[str, float]] = {}
    old = {str(paper["id"]) for paper in archive or []}
    by_id = {str(paper["id"]): paper for paper in [*(archive or []), *papers]}
    for paper in by_id.values():
        text = PaperText.of(paper)
        for topic in topics:
            value = topic.score(text)
            if value >= threshold:
                scores.setdefault(topic.id, {})[str(paper["id"])] = value
    picked: dict[str, float] = {}
    for topic in topics:
        ranked = sorted(
            scores.get(topic.id, {}).items(),
            key=lambda pair: (
                pair[0] in old,
                -pair[1],
                str(by_id[pair[0]].get("added_at") or ""),
                pair[0],
            ),
        )
        for paper_id, value in ranked[:per_topic]:
            picked[paper_id] = max(value, picked.get(paper_id, 0.0))
    items = [
        DigestItem(
            paper=by_id[paper_id],
            topics=tuple(topic for topic in topics if paper_id in scores.get(topic.id, {})),
            score=best,
            from_archive=paper_id in old,
        )
        for paper_id, best in picked.items()
    ]
    items.sort(key=lambda item: (item.from_archive, -item.score, str(item.paper["id"])))
    return items


def _recorded(db: Database, row: dict[str, Any], topics: list[Topic], catalog: Catalog) -> Digest:
    known = {topic.id: topic for topic in [*topics, *catalog.topics]}
    items = []
    for item in row["items"]:
        paper_rows = list(db.query("select * from papers where id = ?", [item["paper_id"]]))
        if not paper_rows:
            continue
        item_topics = tuple(known[t] for t in item["topics"] if t in known)
        items.append(
            DigestItem(
                decode(paper_rows[0]),
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


# A paper is new: first stored, or first published, after `since`, and published no earlier
# than `stale` (see the module docstring). Timestamps compare as strings (all ISO UTC).
# `added_at >= since`, not `>`: stamps are to the second, and a paper stored just after the
# previous digest's query, in the second it was built, was not in it. Those of that second
# it did take are claimed, so never repeated.
NEW_PAPERS = (
    "select * from papers where added_at <= :now and ("
    "(added_at >= :since and (published_at is null or published_at > :stale)) "
    "or (published_at > :since and published_at <= :now)) order by added_at"
)


def new_since(db: Database, channel: str, now: datetime, settings: Settings) -> tuple[str, str]:
    """(since, stale): papers first seen after `since` are new, unless published before
    `stale`. `since` is when the channel's previous digest was built (one that reached
    the channel, or is on its way), or the first-digest lookback."""
    lookback = timedelta(days=settings.first_digest_days)
    previous = digest_store.last_received_digest(db, channel, stamp(now))
    since = datetime.fromisoformat(str(previous["built_at"])) if previous else now - lookback
    return stamp(since), stamp(since - lookback)


def candidates(
    db: Database, channel: str, now: datetime, settings: Settings, backlog: bool
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(since, new papers, archive papers): those stored by `now` never claimed by the
    channel; archive papers only with the backlog on. Papers an earlier digest picked that
    never reached the channel (only printed, or given up) count as new again."""
    since, stale = new_since(db, channel, now, settings)
    already = outbox.claimed_paper_ids(db, channel)
    built_at = stamp(now)
    fresh = [
        decode(row)
        for row in db.query(NEW_PAPERS, {"now": built_at, "since": since, "stale": stale})
        if row["id"] not in already
    ]
    fresh_ids = {paper["id"] for paper in fresh}
    carried = digest_store.picked_paper_ids(db, channel, built_at) - already - fresh_ids
    for paper_id in sorted(carried):
        rows = list(
            db.query("select * from papers where id = ? and added_at <= ?", [paper_id, built_at])
        )
        fresh += [decode(row) for row in rows]
    archive: list[dict[str, Any]] = []
    if backlog:
        fresh_ids = {paper["id"] for paper in fresh}
        archive = [
            decode(row)
            for row in db.query(
                "select * from papers where added_at <= ? order by added_at", [built_at]
            )
            if row["id"] not in already and row["id"] not in fresh_ids
        ]
    return since, fresh, archive


def _covering(
    db: Database, channel: str, schedule: Schedule, now: datetime
) -> dict[str, Any] | None:
    """The recorded digest that already covers the period of `now`: the one with its key,
    or the channel's latest digest if it was built within that period (after a change of
    cadence or timezone: a daily digest of Wednesday covers that week for a weekly one)."""
    key = schedule.key(now)
    existing = digest_store.get_digest(db, channel, key)
    if existing is not None:
        return existing
    latest = digest_store.last_digest(db, channel, at_or_before=stamp(now))
    if latest is not None and schedule.key(datetime.fromisoformat(latest["built_at"])) == key:
        return latest
    return None


def build_digest(
    db: Database,
    channel: str,
    now: datetime,
    *,
    catalog: Catalog,
    settings: Settings,
    preview: bool = False,
) -> Digest:
    """This period's digest for `channel` (the period of `now` in the channel's timezone:
    its ISO week, or its date for a daily or weekdays channel)."""
    row = ensure_channel(db, channel, settings, now)
    schedule = schedule_of(row)
    week = schedule.key(now)
    topics = subscribed_topics(db, channel, catalog)
    existing = _covering(db, channel, schedule, now)
    if existing is not None:
        return _recorded(db, existing, topics, catalog)
    built_at = stamp(now)
    since, fresh, archive = candidates(db, channel, now, settings, bool(row.get("backlog")))
    items = select_items(
        fresh, topics, threshold=catalog.threshold, per_topic=settings.digest_size, archive=archive
    )
    if preview:
        return Digest(
            channel, week, tuple(topics), tuple(items), built_at, recorded=False, since=since
        )
    row = digest_store.insert_digest(
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
    return _recorded(db, row, topics, catalog)
