"""The commands about a channel's digest: `topics`, `subscribe`, `unsubscribe`, `list`,
`schedule`, `backlog`, `digest` (a preview), `status` and `resume`. On a personal
reference they act on, and are worded for, the user's own digest (`digests.wording`)."""

from __future__ import annotations

import logging
from datetime import datetime

from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from db.papers import count_papers, last_ingest
from digests.channels import parse_channel
from digests.commands.context import (
    MAX_SUBSCRIPTIONS,
    Context,
    following,
    match_subscription,
    peek_channel,
    plural,
    resolve_topic,
    schedule_line,
    store_schedule,
    subscribed_schedule_lines,
    subscription_line,
    taken_as,
    topic_label,
)
from digests.commands.grammar import COMMAND, ME_FLAG, Command
from digests.commands.registry import handler_for
from digests.digest import (
    build_digest,
    channel_schedule,
    ensure_channel,
    schedule_of,
    subscribed_topics,
)
from digests.ingest.progress import arrivals, unfinished_note
from digests.replies import Reply, error, info
from digests.schedule import Schedule, is_week_key
from digests.wording import here

log = logging.getLogger(__name__)


@handler_for("topics")
def _topics(command: Command, ctx: Context) -> Reply:
    followed = {topic.id for topic in subscribed_topics(ctx.db, ctx.channel, ctx.catalog)}
    lines = [
        f"{'✓ ' if topic.id in followed else ''}`{topic.id}` {topic.label}: {topic.description}"
        for topic in ctx.catalog.topics
    ]
    custom = [
        topic for topic in subscribed_topics(ctx.db, ctx.channel, ctx.catalog) if topic.is_custom
    ]
    if custom:
        lines.append(f"{here(ctx.channel).owner} own topics:")
        lines += [f"✓ {topic.label}" for topic in custom]
    lines.append(
        f"Follow one with `{COMMAND} subscribe offline-rl`, "
        f'or any text: `{COMMAND} subscribe "diffusion policy"`.'
    )
    where = here(ctx.channel, ctx.user)
    return info(
        f"{len(ctx.catalog.topics)} topics (✓ = {where.subject.lower()} follows it):", *lines
    )


def _changed(text: str, schedule: Schedule, now: datetime) -> Reply:
    """A change, told to the whole channel, with when its next digest comes."""
    return info(text, schedule_line(schedule, now), ephemeral=False, changed=True)


@handler_for("subscribe")
def _subscribe(command: Command, ctx: Context) -> Reply:
    topic = resolve_topic(command, ctx)
    if isinstance(topic, Reply):
        return topic
    row = ensure_channel(ctx.db, ctx.channel, ctx.settings, ctx.now)
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    # Worded for a personal reference too: `paperboy chat --channel slack:T/@U` (an
    # operator acting on someone's own digest) runs these, not the `--me` ones.
    where = here(ctx.channel, ctx.user)
    if any(row["topic_id"] == topic.id for row in active):
        return info(f"{where.subject} already follows {topic.label}.")
    if len(active) >= MAX_SUBSCRIPTIONS:
        return error(
            f"{where.subject} follows {len(active)} topics, the most it can. "
            "Unsubscribe from one first."
        )
    channel_store.add_subscription(
        ctx.db, ctx.channel, topic.id, topic.custom_text, ctx.user, ctx.stamp
    )
    schedule = schedule_of(row)
    what = topic.label if topic.is_custom else f"{topic.label} (`{topic.id}`)"
    named = [t for t in map(ctx.catalog.get, topic.based_on) if t is not None]
    if named:  # free text that names a catalog topic follows its terms and the phrase
        what += " (the catalog topic " + ", ".join(f"{t.label} (`{t.id}`)" for t in named)
        what += " plus the phrase)"
    return info(
        f"{where.actor} subscribed {where.target} to {what}.",
        *taken_as(command, topic, ctx),
        *subscribed_schedule_lines(row, bool(active), schedule, ctx),
        ephemeral=False,
        changed=True,
    )


@handler_for("unsubscribe")
def _unsubscribe(command: Command, ctx: Context) -> Reply:
    text = command.args["topic"].strip()
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    match = match_subscription(text, active, ctx.catalog)
    where = here(ctx.channel, ctx.user)
    if match is None:
        return error(
            f"{where.subject} does not follow `{text[:60]}`.", *following(active, ctx.catalog)
        )
    channel_store.remove_subscription(ctx.db, int(match["id"]), ctx.user, ctx.stamp)
    label = topic_label(match, ctx.catalog)
    return info(
        f"{where.actor} unsubscribed {where.target} from {label}.", ephemeral=False, changed=True
    )


def _backlog_line(row: dict[str, object], me: bool = False) -> str:
    """The backlog's state and the command that turns it over; `me`: a personal digest's,
    whose command has `--me` (shown to `status --me` in a channel, `backlog on` would
    change the channel's)."""
    flag = f" {ME_FLAG}" if me else ""
    if row.get("backlog"):
        return (
            f"Backlog: on (older papers fill empty slots; `{COMMAND} backlog{flag} off` to stop)."
        )
    return f"Backlog: off (only new papers; `{COMMAND} backlog{flag} on` to add older ones)."


@handler_for("list")
def _list(command: Command, ctx: Context) -> Reply:
    channel, schedule = peek_channel(ctx)
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    lines = [
        subscription_line(number, row, ctx.catalog) for number, row in enumerate(active, start=1)
    ] or [f"No topics yet. See `{COMMAND} topics`, then `{COMMAND} subscribe <topic>`."]
    lines.append(schedule_line(schedule, ctx.now))
    lines.append(_backlog_line(channel))
    if channel.get("paused"):
        lines.append(
            f"Paused: {channel.get('paused_reason')}. Fix the cause, then `{COMMAND} resume`."
        )
    return info(f"{here(ctx.channel).subject} follows {plural(len(active), 'topic')}:", *lines)


@handler_for("schedule")
def _schedule(command: Command, ctx: Context) -> Reply:
    schedule = store_schedule(command, ctx)
    if isinstance(schedule, Reply):
        return schedule
    where = here(ctx.channel, ctx.user)
    return _changed(
        f"{where.actor} moved {where.whose} digest to {schedule.describe()}.", schedule, ctx.now
    )


@handler_for("digest")
def _digest(command: Command, ctx: Context) -> Reply:
    if not channel_store.active_subscriptions(ctx.db, ctx.channel):
        where = here(ctx.channel, ctx.user)
        return info(
            f"{where.subject} follows no topics yet, so {where.its} digest would be empty.",
            f"See `{COMMAND} topics`, then `{COMMAND} subscribe <topic>`.",
        )
    digest = build_digest(
        ctx.db, ctx.channel, ctx.now, catalog=ctx.catalog, settings=ctx.settings, preview=True
    )
    state = "already built" if digest.recorded else "a preview; nothing is marked as sent"
    which = (
        "This week's digest"
        if is_week_key(digest.week)
        else f"The digest for {digest.period_label}"
    )
    return info(f"{which} ({state}):", digest=digest)


@handler_for("backlog")
def _backlog(command: Command, ctx: Context) -> Reply:
    on = command.args["state"].lower() == "on"
    # Read, not made: `backlog off` where nothing is stored yet changes nothing.
    channel = channel_store.get_channel(ctx.db, ctx.channel) or {}
    where = here(ctx.channel, ctx.user)
    if bool(channel.get("backlog")) == on:
        return info(f"The backlog is already {'on' if on else 'off'} {where.place}.")
    ensure_channel(ctx.db, ctx.channel, ctx.settings, ctx.now)
    channel_store.set_backlog(ctx.db, ctx.channel, on)
    if on:
        sent = "to you" if parse_channel(ctx.channel).personal else "here"
        text = (
            f"{where.actor} turned the backlog on: older papers never sent {sent} fill the "
            "slots that new papers leave empty, marked “from the archive”."
        )
    else:
        text = f"{where.actor} turned the backlog off: digests hold only papers new since the last."
    schedule = channel_schedule(ctx.db, ctx.channel, ctx.settings, ctx.now)
    return _changed(text, schedule, ctx.now)


@handler_for("status")
def _status(command: Command, ctx: Context) -> Reply:
    """The store, and the digest of `ctx.channel` (a channel's, or for `--me` and in a
    Slack DM the user's own, named in words: `digests.wording`)."""
    channel, schedule = peek_channel(ctx)
    personal = parse_channel(ctx.channel).personal
    ingest = last_ingest(ctx.db)
    lines = [f"Papers stored: {count_papers(ctx.db)}; {arrivals(ctx.db, ingest)}."]
    if note := unfinished_note(ingest):  # a chunked ingest that stopped part-way
        lines.append(note)
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    lines.append(
        "Topics: "
        + (", ".join(topic_label(row, ctx.catalog) for row in active) if active else "none yet")
    )
    lines.append(schedule_line(schedule, ctx.now))
    lines.append(_backlog_line(channel, me=personal))
    last = digest_store.last_digest(ctx.db, ctx.channel)
    if last:
        lines.append(
            f"Last digest: {last['week']}, {plural(len(last['items']), 'paper')}, "
            f"built {_utc(last['built_at'])}."
        )
    else:
        lines.append("Last digest: none yet.")
    lines.append(_delivery_line(ctx))
    if channel.get("paused"):
        lines.append(
            f"Paused since {_utc(channel.get('paused_at'))}: {channel.get('paused_reason')}."
        )
        if personal:
            lines.append(f"Let me send you direct messages, then `{COMMAND} resume {ME_FLAG}`.")
    else:
        lines.append("Delivery: active.")
    return info(f"Status of {here(ctx.channel).name}:", *lines)


def _utc(stamp: object) -> str:
    """A stored ISO stamp (UTC) as the status lines show it: `2026-11-29 23:46 UTC`."""
    return str(stamp)[:16].replace("T", " ") + " UTC"


def _delivery_line(ctx: Context) -> str:
    """The last delivery and its result; or the retry under way."""
    waiting = [row for row in outbox.due(ctx.db, ctx.channel, "9999") if row["last_error"]]
    if waiting:
        row = waiting[0]
        return (
            f"Last delivery: retrying after {row['last_error']} "
            f"(attempt {row['attempts']}, next at {_utc(row['next_attempt_at'])})."
        )
    last = outbox.last_delivery(ctx.db, ctx.channel)
    if last is None:
        return "Last delivery: none yet."
    if last["state"] == "sent":
        return f"Last delivery: sent {_utc(last['sent_at'])} (part {last['part']})."
    if last["state"] == "failed":
        tries = plural(int(last["attempts"]), "attempt")
        return f"Last delivery: gave up after {tries}: {last['last_error']}."
    return f"Last delivery: held while paused ({last['last_error']})."


@handler_for("resume")
def _resume(command: Command, ctx: Context) -> Reply:
    channel = channel_store.get_channel(ctx.db, ctx.channel) or {}  # read, not made
    where = here(ctx.channel, ctx.user)
    if not channel.get("paused"):
        return info(f"Delivery to {where.target} is not paused.")
    held = outbox.count_paused(ctx.db, ctx.channel)
    channel_store.set_paused(ctx.db, ctx.channel, None, ctx.stamp)
    outbox.resume_channel(ctx.db, ctx.channel)
    return info(
        f"{where.actor} resumed delivery to {where.target} "
        f"(paused for: {channel.get('paused_reason')}).",
        f"{plural(held, 'held message')} will go out within a minute."
        if held
        else "The next digest will go out as scheduled.",
        ephemeral=False,
        changed=True,
    )
