"""What a command handler gets (`Context`), and the helpers several handlers share."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from config.settings import Settings
from db import channels as channel_store
from db.store import Store
from digests import lookup
from digests.channels import personal_channel
from digests.commands.grammar import COMMAND, ME_FLAG, Command
from digests.digest import channel_schedule, schedule_of
from digests.replies import Reply, error
from digests.schedule import (
    Schedule,
    ScheduleError,
    parse_time,
    parse_timezone,
    parse_when,
    read_natural,
)
from digests.timestamps import stamp
from digests.topics import CUSTOM_PREFIX, Catalog, Topic, custom_slug, custom_topic

log = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 25
MAX_FREE_TEXT = 100
# Words that say nothing a paper could be about: free text made only of them ("the",
# "what is this") would match nearly every paper, so `subscribe` refuses it.
FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905
        "a about above after all also am an and any are as at be been being both but by can "
        "could did do does doing for from had has have he her here his how i if in into is it "
        "its just me more most my no nor not of off on once only or other our out over she so "
        "some such than that the their them then there these they this those through to too "
        "under until up us very was we were what when where which while who whom why will "
        "with would you your"
    ).split()
)


@dataclass(frozen=True)
class Context:
    """Who asks, where, and when; plus what the handlers need to answer."""

    db: Store
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


def plural(count: int, noun: str) -> str:
    """`1 paper`, `3 papers`."""
    return f"1 {noun}" if count == 1 else f"{count} {noun}s"


def paper_or_error(ref: str, ctx: Context) -> dict[str, object] | Reply:
    """The stored paper `ref` names (an id, a prefix, an alias), or the error to reply."""
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


def resolve_topic(command: Command, ctx: Context) -> Topic | Reply:
    """The topic `subscribe` follows: a catalog topic its id or name gives (unquoted, also
    loosely: `Catalog.named_loosely`, which `taken_as` then tells), else a custom topic of
    the free text; or why neither (an unknown id, text too long or wordless)."""
    text = command.args["topic"]
    exact = ctx.catalog.get(text.lower()) if not command.quoted else None
    named = exact or ctx.catalog.by_name(text)
    if named is None and not command.quoted and " " in text:  # one word: an id, mistyped
        named = ctx.catalog.named_loosely(text)
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
    if all(word in FUNCTION_WORDS for word in re.findall(r"[^\W_]+", text.casefold())):
        return error(
            f"`{text[:40]}` has no word a paper could be about; it would match nearly every paper.",
            f'Example: `{COMMAND} subscribe "diffusion policy"`.',
        )
    return custom_topic(text, ctx.catalog)


def taken_as(command: Command, topic: Topic, ctx: Context) -> list[str]:
    """The line saying that unquoted words were taken as a catalog topic they name only
    loosely (`RL from human feedback`: `rlhf`), and how to follow the words instead; []
    when they named it exactly or are followed as typed."""
    text = command.args["topic"]
    if command.quoted or topic.is_custom or ctx.catalog.by_name(text) is not None:
        return []
    flag = f" {ME_FLAG}" if command.me else ""
    shown = text[:60].replace("`", "'")
    return [
        f"I took `{shown}` as the catalog topic `{topic.id}`; to follow the words instead: "
        f"`{COMMAND} unsubscribe{flag} {topic.id}`, then "
        f"`{COMMAND} subscribe{flag} {_in_quotes(shown)}`."
    ]


def _in_quotes(text: str) -> str:
    """Free text in quotes the grammar reads back whole: `"…"`, or `'…'` around a text
    with a `"` (`5"`): `"5""` leaves a quote open and is refused."""
    return f"'{text}'" if '"' in text else f'"{text}"'


def match_subscription(
    text: str, active: list[dict[str, Any]], catalog: Catalog
) -> dict[str, Any] | None:
    """The subscription `unsubscribe` means: its number in `list`, its id or its text."""
    number = text.lstrip("#")
    position = int(number) if re.fullmatch(r"[0-9]{1,12}", number) else 0
    if 1 <= position <= len(active):
        # The number `list` shows: the position in this channel's list, from 1.
        return active[position - 1]
    # A name; also a number past the list's end, which may name a topic ("2048"). The
    # words as typed first: a free text `RL from human feedback` before the `rlhf` they
    # name loosely.
    named = catalog.by_name(text)
    wanted = {text.lower(), custom_slug(text), *([named.id] if named else [])}
    exact = next((row for row in active if row["topic_id"] in wanted), None)
    loose = catalog.named_loosely(text) if exact is None else None
    return exact or next((row for row in active if loose and row["topic_id"] == loose.id), None)


def following(active: list[dict[str, Any]], catalog: Catalog) -> list[str]:
    """What a digest follows, numbered as `list` shows it, for an `unsubscribe` that
    named none of it."""
    lines = [subscription_line(number, row, catalog) for number, row in enumerate(active, 1)]
    return ["It follows:", *lines] if lines else ["It follows no topics yet."]


def topic_label(row: dict[str, object], catalog: Catalog) -> str:
    """A subscription's topic as people know it: `"free text"`, or the catalog's label."""
    if row.get("custom_text"):
        return f'"{row["custom_text"]}"'
    topic = catalog.get(str(row["topic_id"]))
    return topic.label if topic else str(row["topic_id"])


def subscription_line(number: int, row: dict[str, object], catalog: Catalog) -> str:
    """A line of `list`, e.g. "#1 offline-rl Offline RL, by alice on 2026-11-30". `number`
    counts from 1 in the channel's own list (row ids show gaps and other channels' rows)."""
    ident = "" if str(row["topic_id"]).startswith(CUSTOM_PREFIX) else f" `{row['topic_id']}`"
    since = str(row["created_at"])[:10]
    label = topic_label(row, catalog)
    return f"#{number}{ident} {label}, by {row['created_by']} on {since}"


def schedule_line(schedule: Schedule, now: datetime, default: bool = False) -> str:
    """`Digest: <when>; next on <date>.`; `default`: `<when>, the default;`."""
    upcoming = schedule.next_after(now)
    when = schedule.describe() + (", the default" if default else "")
    return f"Digest: {when}; next on {upcoming.strftime('%a %-d %b %Y, %H:%M %Z')}."


def subscribed_schedule_lines(
    row: dict[str, Any], was_following: bool, schedule: Schedule, ctx: Context, me: bool = False
) -> list[str]:
    """What a subscribe says of when the digest comes: its schedule; and on the first topic
    of a digest whose schedule nobody chose (`row`, the channel's), that it is the
    default and how to change it (`me`: with `--me`). Later subscribes do not repeat it."""
    if was_following or row.get("schedule_set_by"):
        return [schedule_line(schedule, ctx.now)]
    flag = f" {ME_FLAG}" if me else ""
    return [
        schedule_line(schedule, ctx.now, default=True),
        f"To change it: `{COMMAND} schedule{flag} daily 08:00 Europe/Berlin` (daily, weekdays "
        "or a weekday; a 24-hour time; a timezone).",
    ]


def peek_channel(ctx: Context) -> tuple[dict[str, object], Schedule]:
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


def schedule_suggestion(words: str, me: bool, ctx: Context) -> str | None:
    """ "Did you mean `/papers schedule daily 08:00 Europe/Berlin`?" for `schedule`'s
    words said in plain English ("daily at 8am berlin": `digests.schedule.read_natural`),
    or None. Only suggested: it is a reading, and a schedule is told to everyone. No day
    said: the digest's own (for `me`, the user's personal digest's)."""
    own = personal_channel(ctx.user_key or "") if me else None
    _, current = peek_channel(dataclasses.replace(ctx, channel=own or ctx.channel))
    reading = read_natural(words, current.day_word)
    if reading is None:
        return None
    flag = f"{ME_FLAG} " if me else ""
    meant = f"{COMMAND} schedule {flag}{reading}"
    return f"Did you mean `{meant}`? (Nothing changed; send that to set it.)"


def store_schedule(command: Command, ctx: Context) -> Schedule | Reply:
    """`schedule`'s arguments stored for `ctx.channel` (the channel's or, for `--me`, the
    user's own): the schedule it now has, or the error (nothing stored, not even a new
    channel's row: the arguments are checked before it is made). No timezone given: the
    current one stays. A day or time it cannot read, said in plain English (`at 8pm`),
    gets the command it likely means (`schedule_suggestion`)."""
    try:
        cadence, weekday = parse_when(command.args["weekday"])
        clock = parse_time(command.args["time"])
    except ScheduleError as exc:
        words = " ".join(
            command.args[name] for name in ("weekday", "time", "timezone") if name in command.args
        )
        return error(schedule_suggestion(words, command.me, ctx) or str(exc))
    try:
        given = command.args.get("timezone")
        zone = parse_timezone(given) if given is not None else None
    except ScheduleError as exc:  # its message names the zone meant, if any
        return error(str(exc))
    current = channel_schedule(ctx.db, ctx.channel, ctx.settings, ctx.now)
    timezone = zone if zone is not None else current.timezone
    channel_store.set_schedule(
        ctx.db, ctx.channel, weekday, clock, timezone, ctx.user, ctx.stamp, cadence=cadence
    )
    return Schedule(weekday or current.weekday, clock, timezone, cadence)
