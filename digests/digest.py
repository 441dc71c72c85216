"""The weekly digest: which papers a channel gets this week, picked once and recorded.

`build_digest(db, channel, now)` is a plain function of the database and the clock,
so tests call it with a fixed `now` and the scheduler only decides when to call it.

- For each subscribed topic, the top N papers (N from the settings) whose score
  reaches the calibrated threshold, best first, among papers not yet delivered to this
  channel (nor queued to be: see `db.outbox.claimed_paper_ids`).
- A paper picked for several topics appears once, with all its subscribed topics.
- A real digest for a channel and ISO week is recorded with its items; building it
  again returns the same digest. A preview is computed the same way, never recorded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlite_utils import Database

from config.settings import Settings
from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from db.papers import decode
from digests.channels import parse_channel
from digests.matching import PaperText
from digests.schedule import Schedule, week_key, week_start
from digests.timestamps import stamp
from digests.topics import Catalog, Topic, custom_topic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DigestItem:
    paper: dict[str, Any]
    topics: tuple[Topic, ...]
    score: float


@dataclass(frozen=True)
class Digest:
    channel: str
    week: str
    topics: tuple[Topic, ...]
    items: tuple[DigestItem, ...]
    built_at: str
    recorded: bool  # False for a preview that was never stored
    digest_id: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.items

    @property
    def week_start(self) -> date:
        return week_start(self.week)


def channel_schedule(db: Database, channel: str, settings: Settings, now: datetime) -> Schedule:
    """The channel's schedule, creating the channel with the default one if new."""
    row = ensure_channel(db, channel, settings, now)
    return Schedule(row["weekday"], row["time"], row["timezone"])


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
) -> list[DigestItem]:
    """Top `per_topic` papers per topic at or above `threshold`, merged, best first."""
    scores: dict[str, dict[str, float]] = {}
    by_id = {str(paper["id"]): paper for paper in papers}
    for paper in papers:
        text = PaperText.of(paper)
        for topic in topics:
            value = topic.score(text)
            if value >= threshold:
                scores.setdefault(topic.id, {})[str(paper["id"])] = value
    picked: dict[str, float] = {}
    for topic in topics:
        ranked = sorted(
            scores.get(topic.id, {}).items(),
            key=lambda pair: (-pair[1], str(by_id[pair[0]].get("added_at") or ""), pair[0]),
        )
        for paper_id, value in ranked[:per_topic]:
            picked[paper_id] = max(value, picked.get(paper_id, 0.0))
    items = [
        DigestItem(
            paper=by_id[paper_id],
            topics=tuple(topic for topic in topics if paper_id in scores.get(topic.id, {})),
            score=best,
        )
        for paper_id, best in picked.items()
    ]
    items.sort(key=lambda item: (-item.score, str(item.paper["id"])))
    return items


def _recorded(db: Database, row: dict[str, Any], topics: list[Topic], catalog: Catalog) -> Digest:
    known = {topic.id: topic for topic in [*topics, *catalog.topics]}
    items = []
    for item in row["items"]:
        paper_rows = list(db.query("select * from papers where id = ?", [item["paper_id"]]))
        if not paper_rows:
            continue
        item_topics = tuple(known[t] for t in item["topics"] if t in known)
        items.append(DigestItem(decode(paper_rows[0]), item_topics, float(item["score"])))
    digest_topics = tuple(known[t] for t in row["topics"] if t in known)
    return Digest(
        channel=str(row["channel"]),
        week=str(row["week"]),
        topics=digest_topics,
        items=tuple(items),
        built_at=str(row["built_at"]),
        recorded=True,
        digest_id=int(row["id"]),
    )


def build_digest(
    db: Database,
    channel: str,
    now: datetime,
    *,
    catalog: Catalog,
    settings: Settings,
    preview: bool = False,
) -> Digest:
    """This week's digest for `channel` (the week of `now` in the channel's timezone)."""
    schedule = channel_schedule(db, channel, settings, now)
    week = week_key(now, schedule.timezone)
    topics = subscribed_topics(db, channel, catalog)
    existing = digest_store.get_digest(db, channel, week)
    if existing is not None:
        return _recorded(db, existing, topics, catalog)
    already = outbox.claimed_paper_ids(db, channel)
    built_at = stamp(now)
    papers = [
        decode(row)
        for row in db.query(
            "select * from papers where added_at <= ? order by added_at", [built_at]
        )
        if row["id"] not in already
    ]
    items = select_items(
        papers, topics, threshold=catalog.threshold, per_topic=settings.digest_size
    )
    if preview:
        return Digest(channel, week, tuple(topics), tuple(items), built_at, recorded=False)
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
            }
            for item in items
        ],
    )
    log.info("digest %s %s: %d papers", channel, week, len(items))
    return _recorded(db, row, topics, catalog)
