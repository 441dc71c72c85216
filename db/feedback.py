"""👍/👎 feedback on digest items: one row per (channel, topic, paper, user), so a repeated
click counts once and a 👎 after a 👍 replaces it (`vote` +1 or -1). Callers validate
what they store (`digests.actions.apply_action`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from db.outbox import json_values
from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]


def record_vote(
    db: Store,
    channel: str,
    topic_id: str,
    paper_id: str,
    user: str,
    vote: int,
    digest_id: int | None,
    at: str,
) -> bool:
    """Store `user`'s vote (+1 or -1) on a paper for a channel's topic; True if it changed
    anything (False: the same vote was already there)."""
    if vote not in (1, -1):
        raise ValueError(f"a vote is +1 or -1, not {vote!r}")
    with db.write():
        cursor = db.execute(
            'insert into feedback (channel, topic_id, paper_id, "user", vote, digest_id, '
            "created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?) "
            'on conflict (channel, topic_id, paper_id, "user") do update set '
            "vote = excluded.vote, digest_id = excluded.digest_id, "
            "updated_at = excluded.updated_at where feedback.vote != excluded.vote",
            [channel, topic_id, paper_id, user, vote, digest_id, at, at],
        )
        changed = cursor.rowcount > 0
    return changed


def counts(db: Store, channel: str, paper_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
    """{paper id: (users who voted 👍, users who voted 👎)} in the channel, over all its
    topics, for each of `paper_ids` ((0, 0) for a paper without votes). A user who voted
    on one paper under two topics is counted once per side."""
    wanted = list(dict.fromkeys(paper_ids))
    found: dict[str, tuple[int, int]] = {paper_id: (0, 0) for paper_id in wanted}
    if not wanted:
        return found
    rows = db.query(
        'select paper_id, count(distinct case when vote > 0 then "user" end) as up, '
        'count(distinct case when vote < 0 then "user" end) as down from feedback '
        f"where channel = ? and paper_id in (select j.value from {json_values(db, '?', 'j')}) "
        "group by paper_id",
        [channel, json.dumps(wanted)],
    )
    for row in rows:
        found[str(row["paper_id"])] = (int(row["up"]), int(row["down"]))
    return found


def channel_feedback(db: Store, channel: str, topic_id: str | None = None) -> list[Row]:
    """The channel's feedback rows (of one topic, when given), by topic then most recent
    first, each with the paper's `title` (None if the paper is gone)."""
    bound = "and f.topic_id = ? " if topic_id is not None else ""
    return list(
        db.query(
            "select f.*, p.title as title from feedback f left join papers p on p.id = f.paper_id "
            f"where f.channel = ? {bound}order by f.topic_id, coalesce(f.updated_at, "
            "f.created_at) desc, f.id desc",
            [channel, *([topic_id] if topic_id is not None else [])],
        )
    )


def net_votes(db: Store, channel: str) -> dict[str, dict[str, int]]:
    """{topic id: {paper id: sum of votes}} for the channel: > 0 a positive example of
    the topic, < 0 a negative one; papers whose votes cancel out are left out."""
    return net_votes_of(db, [channel]).get(channel, {})


def net_votes_of(db: Store, channels: Sequence[str]) -> dict[str, dict[str, dict[str, int]]]:
    """`net_votes` of many channels in one query (the digest batch reads them all at once):
    {channel: {topic id: {paper id: net}}}, channels without feedback left out."""
    found: dict[str, dict[str, dict[str, int]]] = {}
    if not channels:
        return found
    rows = db.execute(
        "select channel, topic_id, paper_id, sum(vote) from feedback "
        f"where channel in (select j.value from {json_values(db, '?', 'j')}) "
        "group by channel, topic_id, paper_id having sum(vote) != 0",
        [json.dumps(list(channels))],
    )
    for channel, topic_id, paper_id, net in rows:
        found.setdefault(channel, {}).setdefault(topic_id, {})[paper_id] = int(net)
    return found


def reset(db: Store, channel: str, topic_id: str) -> int:
    """Clear the channel's feedback on a topic; returns the number of rows cleared."""
    with db.write():
        cursor = db.execute(
            "delete from feedback where channel = ? and topic_id = ?", [channel, topic_id]
        )
        cleared = cursor.rowcount
    log.info("feedback of %s on %s reset: %d votes cleared", channel, topic_id, cleared)
    return int(cleared)
