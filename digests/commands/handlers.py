"""One handler per verb of the grammar. `handle(text, ctx)` is all a front end calls.

Handlers return a `Reply` and never raise for bad input: every mistake becomes a
helpful reply (a suggestion, an example) and changes nothing.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlite_utils import Database

from config.settings import Settings
from db import channels as channel_store
from db import digests as digest_store
from db import outbox
from db.papers import count_papers, last_ingest
from db.transactions import write_transaction
from digests import lookup
from digests.channels import ChannelError, parse_channel
from digests.commands.grammar import (
    COMMAND,
    ME_FLAG,
    VERBS,
    VERBS_BY_NAME,
    Command,
    ParseError,
    Verb,
    help_lines,
    parse,
)
from digests.commands.replies import Reply, error, info
from digests.digest import (
    build_digest,
    channel_schedule,
    ensure_channel,
    schedule_of,
    subscribed_topics,
)
from digests.ingest.progress import unfinished_note
from digests.safe_text import has_unsafe, is_text, strip_unsafe
from digests.schedule import (
    Schedule,
    ScheduleError,
    is_week_key,
    parse_time,
    parse_timezone,
    parse_when,
)
from digests.similar import similar_papers
from digests.timestamps import stamp
from digests.topics import CUSTOM_PREFIX, Catalog, Topic, custom_slug, custom_topic
from digests.wording import here

log = logging.getLogger(__name__)

FIND_LIMIT = 5
MAX_SUBSCRIPTIONS = 25
MAX_FREE_TEXT = 100
# Words that say nothing a paper could be about: free text made only of them ("the",
# "what is this") matched nearly every paper, so `subscribe` refuses it.
_FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905
        "a about above after all also am an and any are as at be been being both but by can "
        "could did do does doing for from had has have he her here his how i if in into is it "
        "its just me more most my no nor not of off on once only or other our out over she so "
        "some such than that the their them then there these they this those through to too "
        "under until up us very was we were what when where which while who whom why will "
        "with would you your"
    ).split()
)
UNSAFE_CHANGE = (
    "Topic names and schedules can't contain invisible or control characters "
    "(bidi overrides, zero-width spaces, terminal escapes)."
)


@dataclass(frozen=True)
class Context:
    """Who asks, where, and when; plus what the handlers need to answer."""

    db: Database
    channel: str
    user: str
    now: datetime
    settings: Settings
    catalog: Catalog
    # The asking user's stable key (`digests.actions.user_key`: `slack:T0123/U0456`,
    # `discord:123…`, `local:NAME`), for what belongs to a person (saved papers, `--me`);
    # `user` is only a display name. None when the adapter cannot tell: those commands say so.
    user_key: str | None = None

    @property
    def stamp(self) -> str:
        return stamp(self.now)


def handle(text: str, ctx: Context) -> Reply:
    """Parse and run one command. Bad input of any kind becomes a helpful Reply.

    Invisible and control characters (`digests.safe_text`) are dropped from lookups
    (pasted text often carries zero-width spaces), and refused, with one message, in
    commands that change the channel: those are stored and told to everyone. Every
    answer about a user's own digest (`--me`, or `ctx.channel` a personal reference) is
    `ephemeral`, whatever the handler said: adapters show it to the asker only.
    """
    try:
        parse_channel(ctx.channel)
    except ChannelError as exc:
        return error(str(exc))
    if not is_text(text):
        return error("That command has a character I cannot read; please type it again.")
    personal = parse_channel(ctx.channel).personal
    try:
        command = parse(strip_unsafe(text), personal)
    except ParseError as exc:
        return _parse_error(exc, personal)
    if has_unsafe(text) and command.changes:
        # Told to the whole channel and stored: refuse rather than guess what was meant.
        return error(UNSAFE_CHANGE, "Please type it again without them.")
    log.info("command %s in %s by %s", command.verb.name, ctx.channel, ctx.user)
    handler = HANDLERS[command.verb.name]
    if command.me:  # the user's own digest (imported here: that module imports this one)
        from digests.commands.personal import PERSONAL_HANDLERS

        # `help --me` has none: `_help` words itself for one's own digest.
        handler = PERSONAL_HANDLERS.get(command.verb.name, handler)
    if command.changes:
        # Check-then-write (already subscribed? too many topics?) as one transaction, so two
        # people typing at once cannot both pass the check.
        with write_transaction(ctx.db):
            reply = handler(command, ctx)
    else:
        reply = handler(command, ctx)
    if not reply.ephemeral and (command.me or personal):
        # A user's own digest is theirs alone, and so is every answer about it (a backlog
        # turned on, feedback reset): typed in a Slack DM with someone else, which acts on
        # the user's own digest, a public answer would be posted for the other person too.
        reply = dataclasses.replace(reply, ephemeral=True)
    return reply


def _parse_error(exc: ParseError, personal: bool = False) -> Reply:
    """A command that does not parse; `personal`: typed where commands act on the user's
    own digest (the help it lists is worded for that)."""
    if exc.verb is not None:
        return error(exc.message)
    lines = [f"Did you mean `{COMMAND} {exc.suggestion}`?"] if exc.suggestion else []
    return error(exc.message, *lines, "Here is what I can do:", *help_lines(personal))


# `help` where every command acts on the user's own digest (the Slack DM with the app, or
# any DM: bot.slack.app reads those as the user's personal reference).
PERSONAL_INTRO = (
    "Paperboy finds papers and sends you a personal digest of new ones (weekly, daily or on "
    "weekdays) as a direct message, for the topics you follow. Here every command is about "
    "your own digest, and only you see the answers. Commands:"
)
PERSONAL_HERE = "Here it acts on your personal digest; only you see the answer."


def _help(command: Command, ctx: Context) -> Reply:
    """The commands, or one command in full; worded for the user's own digest where the
    commands act on it (`ctx.channel` a personal reference) or when asked so (`help
    --me`), for the channel elsewhere."""
    name = command.args.get("command", "").lower().removeprefix(COMMAND).strip()
    personal = parse_channel(ctx.channel).personal
    if command.me and not personal:
        # In a channel the commands act on the channel: `help --me` lists the ones that
        # take `--me`, with it, as they act on one's own digest.
        return _help_me(name, command, ctx)
    if not name:
        return info(
            PERSONAL_INTRO
            if personal
            else "Paperboy finds papers and posts a digest of new ones (weekly, daily or on "
            "weekdays) for this channel's topics. Commands:",
            *help_lines(personal),
            f"Start with `{COMMAND} topics`, then `{COMMAND} subscribe offline-rl`.",
        )
    verb = VERBS_BY_NAME.get(name)
    if verb is None:
        close = difflib.get_close_matches(name, list(VERBS_BY_NAME), n=1, cutoff=0.6)
        lines = [f"Did you mean `{COMMAND} help {close[0]}`?"] if close else []
        return error(f"There is no command {name[:40]!r}.", *lines, *help_lines(personal))
    lines = [f"`{verb.usage_for(personal)}`", verb.help_for(personal)]
    lines += [f"  {param.name}: {param.help_for(personal)}" for param in verb.params]
    if personal:
        if verb.example:
            lines.append(f"Example: `{COMMAND} {verb.example}`")
        if verb.changes:
            lines.append(PERSONAL_HERE)
        return info(f"How to use `{verb.name}`:", *lines)
    if verb.personal:
        lines.append(
            f"  {ME_FLAG}: your own digest (it comes as a direct message) instead of the "
            "channel's; anyone may, and only you see the answer."
        )
    if verb.example:
        lines.append(f"Example: `{COMMAND} {verb.example}`")
    marked = [choice for param in verb.params if param.changes for choice in param.choices]
    # A personal verb's --me line says that one is only yours.
    without = f"Without `{ME_FLAG}`, " if verb.personal else ""
    if marked:  # only a sub-word changes the channel (`feedback reset`)
        words = " or ".join(f"`{verb.name} {choice}`" for choice in marked)
        lines.append(f"{without}{words} changes the channel's settings, so the channel sees it.")
    elif verb.changes:
        this = "this" if verb.personal else "This"
        lines.append(f"{without}{this} changes the channel's settings, so the channel sees it.")
    return info(f"How to use `{verb.name}`:", *lines)


ME_INTRO = (
    "Your personal digest comes to you as a direct message, for the topics you follow. In "
    f"a channel, add `{ME_FLAG}` to act on it (anyone may; only you see the answers):"
)


def _me_usage(verb: Verb) -> str:
    """The verb's usage with `--me` given, as typed in a channel for one's own digest."""
    return " ".join([COMMAND, verb.name, ME_FLAG, *(param.usage for param in verb.params)])


def _help_me(name: str, command: Command, ctx: Context) -> Reply:
    """`help --me` typed in a channel: the commands that take `--me` (or one of them), with
    it and worded for one's own digest (`Verb.mine`). Another command is the same for
    everyone: its usual help."""
    if not name:
        return info(
            ME_INTRO,
            *(f"`{_me_usage(verb)}`  {verb.help_for(True)}" for verb in VERBS if verb.personal),
            f"Start with `{COMMAND} topics`, then `{COMMAND} subscribe {ME_FLAG} offline-rl`.",
        )
    verb = VERBS_BY_NAME.get(name)
    if verb is None or not verb.personal:
        return _help(dataclasses.replace(command, me=False), ctx)
    lines = [f"`{_me_usage(verb)}`", verb.help_for(True)]
    lines += [f"  {param.name}: {param.help_for(True)}" for param in verb.params]
    if verb.example:
        verb_name, _, rest = verb.example.partition(" ")
        lines.append(f"Example: `{' '.join([COMMAND, verb_name, ME_FLAG, rest]).strip()}`")
    lines.append(
        f"Only you see the answer; without `{ME_FLAG}` it is about the channel "
        f"(`{COMMAND} help {verb.name}`)."
    )
    return info(f"How to use `{verb.name} {ME_FLAG}`:", *lines)


def _find(command: Command, ctx: Context) -> Reply:
    query = command.args["query"]
    results = lookup.find(ctx.db, query, FIND_LIMIT, ctx.catalog)
    if not results:
        return info(
            f"No papers match “{query}”.",
            f"Try fewer or other words, or a method name such as `{COMMAND} find LoMAP`.",
        )
    return info(f"Top {len(results)} for “{query}”:", papers=tuple(results))


def _paper_or_error(ref: str, ctx: Context) -> dict[str, object] | Reply:
    found = lookup.resolve(ctx.db, ref)
    if found.candidates:
        head, lines = lookup.candidates_text(ref, found.candidates, code="`")
        return error(head, *lines)
    paper = found.paper
    if paper is None:
        return error(
            f"I have no paper with id `{ref[:40]}`.",
            f"Ids look like `p380c62ca5bf30379`; find one with `{COMMAND} find <words>`.",
        )
    return paper


def _show(command: Command, ctx: Context) -> Reply:
    found = _paper_or_error(command.args["id"], ctx)
    if isinstance(found, Reply):
        return found
    result = lookup.full_result(found)
    # The title is the notification text; renderers do not repeat it above the paper.
    return info(str(result["title"]), papers=(result,), detail=str(result["abstract_text"]))


def _similar(command: Command, ctx: Context) -> Reply:
    found = _paper_or_error(command.args["id"], ctx)
    if isinstance(found, Reply):
        return found
    # By content (distinctive words of title and abstract), not by name: digests/similar.py.
    hits = similar_papers(ctx.db, found, FIND_LIMIT)
    if not hits:
        return info(f"I found nothing similar to “{found['title']}”.")
    results = tuple(lookup.as_result(hit.paper, hit.score) for hit in hits[:FIND_LIMIT])
    return info(f"Papers similar to “{found['title']}”:", papers=results)


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


def _resolve_topic(command: Command, ctx: Context) -> Topic | Reply:
    text = command.args["topic"]
    exact = ctx.catalog.get(text.lower()) if not command.quoted else None
    named = exact or ctx.catalog.by_name(text)
    if named is not None:
        return named
    looks_like_id = not command.quoted and " " not in text
    if looks_like_id:
        suggestions = ctx.catalog.suggest(text)
        hint = (
            "Did you mean " + " or ".join(f"`{s}`" for s in suggestions) + "?"
            if suggestions
            else f"See `{COMMAND} topics` for the list."
        )
        return error(
            f"I don't know the topic `{text[:40]}`.",
            hint,
            f"To follow free text instead, put it in quotes: "
            f"`{COMMAND} subscribe {_in_quotes(text[:40])}`.",
        )
    if len(text) > MAX_FREE_TEXT:
        return error(f"That topic is too long ({len(text)} characters; {MAX_FREE_TEXT} at most).")
    if not re.search(r"[^\W_]", text):
        return error(
            "A topic needs at least one word.",
            f'Example: `{COMMAND} subscribe "diffusion policy"`.',
        )
    if all(word in _FUNCTION_WORDS for word in re.findall(r"[^\W_]+", text.casefold())):
        return error(
            f"`{text[:40]}` has no word a paper could be about; it would match nearly every paper.",
            f'Example: `{COMMAND} subscribe "diffusion policy"`.',
        )
    return custom_topic(text, ctx.catalog)


def _in_quotes(text: str) -> str:
    """Free text in quotes the grammar reads back whole: `"…"`, or `'…'` around a text
    with a `"` (`5"`): `"5""` leaves a quote open and is refused."""
    return f"'{text}'" if '"' in text else f'"{text}"'


def _schedule_line(schedule: Schedule, now: datetime) -> str:
    upcoming = schedule.next_after(now)
    return f"Digest: {schedule.describe()}; next on {upcoming.strftime('%a %-d %b %Y, %H:%M %Z')}."


def _changed(text: str, schedule: Schedule, now: datetime) -> Reply:
    """A change, told to the whole channel, with when its next digest comes."""
    return info(text, _schedule_line(schedule, now), ephemeral=False, changed=True)


def _subscribe(command: Command, ctx: Context) -> Reply:
    topic = _resolve_topic(command, ctx)
    if isinstance(topic, Reply):
        return topic
    ensure_channel(ctx.db, ctx.channel, ctx.settings, ctx.now)
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
    schedule = channel_schedule(ctx.db, ctx.channel, ctx.settings, ctx.now)
    what = topic.label if topic.is_custom else f"{topic.label} (`{topic.id}`)"
    named = [t for t in map(ctx.catalog.get, topic.based_on) if t is not None]
    if named:  # free text that names a catalog topic follows its terms and the phrase
        what += " (the catalog topic " + ", ".join(f"{t.label} (`{t.id}`)" for t in named)
        what += " plus the phrase)"
    return _changed(f"{where.actor} subscribed {where.target} to {what}.", schedule, ctx.now)


def _unsubscribe(command: Command, ctx: Context) -> Reply:
    text = command.args["topic"].strip()
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    match = _match_subscription(text, active, ctx.catalog)
    where = here(ctx.channel, ctx.user)
    if match is None:
        return error(
            f"{where.subject} does not follow `{text[:60]}`.", *_following(active, ctx.catalog)
        )
    channel_store.remove_subscription(ctx.db, int(match["id"]), ctx.user, ctx.stamp)
    label = _topic_label(match, ctx.catalog)
    return info(
        f"{where.actor} unsubscribed {where.target} from {label}.", ephemeral=False, changed=True
    )


def _match_subscription(
    text: str, active: list[dict[str, Any]], catalog: Catalog
) -> dict[str, Any] | None:
    """The subscription `unsubscribe` means: its number in `list`, its id or its text."""
    number = text.lstrip("#")
    position = int(number) if re.fullmatch(r"[0-9]{1,12}", number) else 0
    if 1 <= position <= len(active):
        # The number `list` shows: the position in this channel's list, from 1.
        return active[position - 1]
    # A name; also a number past the list's end, which may name a topic ("2048").
    wanted = {text.lower(), custom_slug(text)}
    named = catalog.by_name(text)
    if named is not None:
        wanted.add(named.id)
    return next((row for row in active if row["topic_id"] in wanted), None)


def _following(active: list[dict[str, Any]], catalog: Catalog) -> list[str]:
    """What a digest follows, numbered as `list` shows it, for an `unsubscribe` that
    named none of it."""
    lines = [_subscription_line(number, row, catalog) for number, row in enumerate(active, 1)]
    return ["It follows:", *lines] if lines else ["It follows no topics yet."]


def _topic_label(row: dict[str, object], catalog: Catalog) -> str:
    if row.get("custom_text"):
        return f'"{row["custom_text"]}"'
    topic = catalog.get(str(row["topic_id"]))
    return topic.label if topic else str(row["topic_id"])


def _subscription_line(number: int, row: dict[str, object], catalog: Catalog) -> str:
    """A line of `list`, e.g. "#1 offline-rl Offline RL, by alice on 2026-11-30". `number`
    counts from 1 in the channel's own list (row ids show gaps and other channels' rows)."""
    ident = "" if str(row["topic_id"]).startswith(CUSTOM_PREFIX) else f" `{row['topic_id']}`"
    since = str(row["created_at"])[:10]
    label = _topic_label(row, catalog)
    return f"#{number}{ident} {label}, by {row['created_by']} on {since}"


def _peek_channel(ctx: Context) -> tuple[dict[str, object], Schedule]:
    """The channel's row and schedule, without creating it: lookups never write, so they
    work on a read-only database. A channel not yet stored has the default schedule."""
    row = channel_store.get_channel(ctx.db, ctx.channel) or {}
    schedule = schedule_of(
        {
            "weekday": row.get("weekday") or ctx.settings.default_weekday,
            "time": row.get("time") or ctx.settings.default_time,
            "timezone": row.get("timezone") or ctx.settings.default_timezone,
            "cadence": row.get("cadence"),
        }
    )
    return row, schedule


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


def _list(command: Command, ctx: Context) -> Reply:
    channel, schedule = _peek_channel(ctx)
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    lines = [
        _subscription_line(number, row, ctx.catalog) for number, row in enumerate(active, start=1)
    ] or [f"No topics yet. See `{COMMAND} topics`, then `{COMMAND} subscribe <topic>`."]
    lines.append(_schedule_line(schedule, ctx.now))
    lines.append(_backlog_line(channel))
    if channel.get("paused"):
        lines.append(
            f"Paused: {channel.get('paused_reason')}. Fix the cause, then `{COMMAND} resume`."
        )
    topics = f"{len(active)} topic{'s' if len(active) != 1 else ''}"
    return info(f"{here(ctx.channel).subject} follows {topics}:", *lines)


def _store_schedule(command: Command, ctx: Context) -> Schedule | Reply:
    """`schedule`'s arguments stored for `ctx.channel` (the channel's or, for `--me`, the
    user's own): the schedule it now has, or the error (nothing stored, not even a new
    channel's row: the arguments are checked before it is made). No timezone given: the
    current one stays."""
    try:
        cadence, weekday = parse_when(command.args["weekday"])
        clock = parse_time(command.args["time"])
        given = command.args.get("timezone")
        zone = parse_timezone(given) if given is not None else None
    except ScheduleError as exc:
        return error(str(exc))
    current = channel_schedule(ctx.db, ctx.channel, ctx.settings, ctx.now)
    timezone = zone if zone is not None else current.timezone
    channel_store.set_schedule(
        ctx.db, ctx.channel, weekday, clock, timezone, ctx.user, ctx.stamp, cadence=cadence
    )
    return Schedule(weekday or current.weekday, clock, timezone, cadence)


def _schedule(command: Command, ctx: Context) -> Reply:
    schedule = _store_schedule(command, ctx)
    if isinstance(schedule, Reply):
        return schedule
    where = here(ctx.channel, ctx.user)
    return _changed(
        f"{where.actor} moved {where.whose} digest to {schedule.describe()}.", schedule, ctx.now
    )


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


def _status(command: Command, ctx: Context) -> Reply:
    """The store, and the digest of `ctx.channel` (a channel's, or for `--me` and in a
    Slack DM the user's own, named in words: `digests.wording`)."""
    channel, schedule = _peek_channel(ctx)
    personal = parse_channel(ctx.channel).personal
    ingest = last_ingest(ctx.db)
    lines = [
        f"Papers stored: {count_papers(ctx.db)}"
        + (
            f"; last ingest {str(ingest['started_at'])[:16].replace('T', ' ')} UTC,"
            f" {ingest['added']} added."
            if ingest
            else "; no file ingested yet."
        ),
    ]
    if note := unfinished_note(ingest):  # a chunked ingest that stopped part-way
        lines.append(note)
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    lines.append(
        "Topics: "
        + (", ".join(_topic_label(row, ctx.catalog) for row in active) if active else "none yet")
    )
    lines.append(_schedule_line(schedule, ctx.now))
    lines.append(_backlog_line(channel, me=personal))
    last = digest_store.last_digest(ctx.db, ctx.channel)
    if last:
        lines.append(
            f"Last digest: {last['week']}, {_count(len(last['items']), 'paper')}, "
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


def _count(count: int, noun: str) -> str:
    return f"1 {noun}" if count == 1 else f"{count} {noun}s"


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
        tries = _count(int(last["attempts"]), "attempt")
        return f"Last delivery: gave up after {tries}: {last['last_error']}."
    return f"Last delivery: held while paused ({last['last_error']})."


def _resume(command: Command, ctx: Context) -> Reply:
    channel = channel_store.get_channel(ctx.db, ctx.channel) or {}  # read, not made
    where = here(ctx.channel, ctx.user)
    if not channel.get("paused"):
        return info(f"Delivery to {where.target} is not paused.")
    held = int(
        ctx.db.execute(
            "select count(*) from outbox where channel = ? and state = 'paused'", [ctx.channel]
        ).fetchone()[0]
    )
    channel_store.set_paused(ctx.db, ctx.channel, None, ctx.stamp)
    outbox.resume_channel(ctx.db, ctx.channel)
    return info(
        f"{where.actor} resumed delivery to {where.target} "
        f"(paused for: {channel.get('paused_reason')}).",
        ("1 held message" if held == 1 else f"{held} held messages")
        + " will go out within a minute."
        if held
        else "The next digest will go out as scheduled.",
        ephemeral=False,
        changed=True,
    )


def _sources(command: Command, ctx: Context) -> Reply:
    """The configured sources, read-only (operators add them with `paperboy sources add`)."""
    from db.sources import list_sources
    from digests.sources.listing import describe

    rows = list_sources(ctx.db)
    if not rows:
        return info(
            "No sources yet: papers come only from files. An operator can add one with "
            "`paperboy sources add arxiv:cs.LG`."
        )
    lines = [describe(row, ctx.now, ctx.settings.fetch_cron) for row in rows]
    sources = "1 source" if len(rows) == 1 else f"{len(rows)} sources"
    return info(f"Papers come from {sources}:", *lines)


HANDLERS: dict[str, Callable[[Command, Context], Reply]] = {
    "help": _help,
    "find": _find,
    "show": _show,
    "similar": _similar,
    "topics": _topics,
    "subscribe": _subscribe,
    "unsubscribe": _unsubscribe,
    "list": _list,
    "schedule": _schedule,
    "backlog": _backlog,
    "digest": _digest,
    "status": _status,
    "resume": _resume,
    "sources": _sources,
}
# The issue-13 verbs (why, feedback, saved, bibtex) live in their own module, which imports
# this one's helpers: imported last, once all of them are defined.
from digests.commands.interactive import INTERACTIVE_HANDLERS  # noqa: E402

HANDLERS.update(INTERACTIVE_HANDLERS)
assert set(HANDLERS) == {verb.name for verb in VERBS}, "every verb needs a handler"
