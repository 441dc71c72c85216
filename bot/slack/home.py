"""Paperboy's Home tab in Slack: what a user follows, the channels they manage, their
saved papers and last personal digest, with buttons to unsubscribe and unsave; published
when the user opens it, after their clicks, and kept current in the background."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import Executor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.models.blocks import (
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.slack.client import error_code
from bot.slack.lanes import run_in
from bot.slack.poster import SlackPoster
from db import home as home_store
from db.channels import active_subscriptions, get_channel, remove_subscription
from db.saved import unsave as unsave_paper
from db.store import Store
from digests.actions import user_key
from digests.channels import ChannelRef
from digests.digest import schedule_of
from digests.render import limits
from digests.render.escape import slack_escape, slack_link
from digests.render.packing import clamp
from digests.render.view import paper_view
from digests.timestamps import stamp
from digests.topics import Catalog

log = logging.getLogger(__name__)

HOME_PREFIX = "paperboy_home_"
HOME_UNSUBSCRIBE = "paperboy_home_unsubscribe"
HOME_UNSAVE = "paperboy_home_unsave"

MAX_BLOCKS = 100  # Slack's limit for a Home view (50 for a message)
# How many of each list the Home shows; the rest is one "…and N more" line. Together, with
# the headers, they stay under MAX_BLOCKS whatever the lists hold (checked in build_home).
SHOWN_TOPICS = 20
SHOWN_CHANNELS = 15
SHOWN_SAVED = 30
SHOWN_DIGEST_ITEMS = 10
MAX_BUTTON_TEXT = 75
MAX_CONFIRM_TEXT = 300  # Slack's limit for a confirm dialog's text

_USER = re.compile(r"[UW][A-Z0-9]{2,32}")
_TEAM = re.compile(r"[A-Z0-9]{2,32}")
_SUBSCRIPTION_VALUE = re.compile(r"[0-9]{1,12}")
_PAPER_VALUE = re.compile(r"p[0-9a-f]{6,32}")
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}(?=…$)")  # `&amp;` `&lt;` `&gt;` cut short

EMPTY_TOPICS = (
    "You follow no topics yourself. `/papers subscribe --me offline-rl` (any topic of "
    "`/papers topics`) sends you your own digest as a direct message."
)
EMPTY_CHANNELS = (
    "You manage no channels yet. In a channel, `/papers subscribe <topic>` starts its digest; "
    "channels whose topics or schedule you change show here."
)
EMPTY_SAVED = "Nothing saved yet. 🔖 *Save* on a digest item keeps the paper here."
EMPTY_DIGEST = "No personal digest yet: it comes on its schedule once you follow a topic."
NOT_YOURS = "That button is not for your Home (or is out of date): nothing changed."


@dataclass(frozen=True)
class Outcome:
    """What a Home button did: the line shown at the top of the re-published Home."""

    text: str
    changed: bool


def personal_channel_of(team: str, user_id: str) -> str:
    """The reference of a Slack user's personal digest (`digests.channels`)."""
    return f"slack:{team}/@{user_id}"


def _clamp(text: str, limit: int) -> str:
    """mrkdwn `text` cut to `limit` characters (`clamp`), never inside an entity."""
    cut = clamp(text, limit)
    return _PARTIAL_ENTITY.sub("", cut) if cut != text else cut


def _section(text: str, accessory: ButtonElement | None = None) -> SectionBlock:
    return SectionBlock(
        text=MarkdownTextObject(text=_clamp(text, limits.SLACK_SECTION_TEXT)), accessory=accessory
    )


def _context(text: str) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=_clamp(text, limits.SLACK_SECTION_TEXT))])


def _header(text: str) -> HeaderBlock:
    return HeaderBlock(text=PlainTextObject(text=clamp(text, limits.SLACK_HEADER_TEXT)))


def _lines(
    lines: list[str], limit: int = limits.SLACK_SECTION_TEXT, hidden: int = 0, sep: str = "\n"
) -> str:
    """Whole lines (or list items, joined by `sep`), as many as fit in `limit` characters
    (a link is never cut in two), then "…and N more": the lines left out and `hidden`,
    items the caller did not pass (beyond what the Home shows of a list)."""
    total = len(lines) + hidden
    kept: list[str] = []
    size = 0
    for index, line in enumerate(lines):
        after = total - index - 1  # items after this one: room for their "…and N more"
        tail = len(f"{sep}…and {after} more") if after else 0
        if size + (len(sep) if kept else 0) + len(line) + tail > limit:
            kept.append(f"…and {total - index} more")
            break
        size += (len(sep) if kept else 0) + len(line)
        kept.append(line)
    else:
        if hidden:
            kept.append(f"…and {hidden} more")
    return sep.join(kept)


def _more(count: int, what: str) -> ContextBlock:
    return _context(f"…and {count} more {what}")


def _topic_label(row: dict[str, Any], catalog: Catalog) -> str:
    """A subscription's label, escaped: a free-text topic in quotes, else the catalog's."""
    if row.get("custom_text"):
        return f"“{slack_escape(str(row['custom_text']))}”"
    topic = catalog.get(str(row["topic_id"]))
    return slack_escape(topic.label if topic else str(row["topic_id"]))


def _schedule(row: dict[str, Any] | None) -> str:
    if not row or not row.get("time"):
        return ""
    try:
        return schedule_of(row).describe()
    except (ValueError, KeyError):  # a row written by a newer Paperboy: say nothing
        return ""


def _topic_blocks(db: Store, channel: str, catalog: Catalog) -> list[Block]:
    rows = active_subscriptions(db, channel)
    if not rows:
        return [_section(EMPTY_TOPICS)]
    row = get_channel(db, channel)
    when = _schedule(row)
    paused = " It is paused." if row and row.get("paused") else ""
    intro = f"Your personal digest comes as a direct message, {when}.{paused}" if when else ""
    blocks: list[Block] = [_context(intro)] if intro else []
    for sub in rows[:SHOWN_TOPICS]:
        label = _topic_label(sub, catalog)
        ident = "" if sub.get("custom_text") else f" `{slack_escape(str(sub['topic_id']))}`"
        since = slack_escape(str(sub.get("created_at") or "")[:10])
        button = ButtonElement(
            text="Unsubscribe",
            action_id=HOME_UNSUBSCRIBE,
            value=str(sub["id"]),
            confirm=ConfirmObject(
                title="Unsubscribe?",
                text=_clamp(f"Stop {label} in your personal digest?", MAX_CONFIRM_TEXT),
                confirm="Unsubscribe",
                deny="Keep it",
            ),
        )
        blocks.append(_section(f"*{label}*{ident}\nsince {since}", button))
    if len(rows) > SHOWN_TOPICS:
        blocks.append(
            _more(len(rows) - SHOWN_TOPICS, "topics: `/papers list --me` lists them all.")
        )
    return blocks


def _channel_blocks(channels: list[dict[str, Any]], catalog: Catalog) -> list[Block]:
    if not channels:
        return [_section(EMPTY_CHANNELS)]
    blocks: list[Block] = []
    for row in channels[:SHOWN_CHANNELS]:
        name = str(row["id"]).rsplit("/", 1)[-1]
        # A Slack channel id becomes a channel link; anything else stored under the prefix
        # (the database is not checked) is shown as escaped text, never as mrkdwn.
        parts = [f"<#{name}>" if _TEAM.fullmatch(name) else f"`{slack_escape(name)}`"]
        when = _schedule(row)
        if when:
            parts.append(slack_escape(when))
        if row.get("paused"):
            parts.append("paused")
        first = " · ".join(parts)
        topics = [_topic_label(sub, catalog) for sub in row["subscriptions"]]
        # The topics are cut, not the line: 25 long free-text topics, escaped, may not fit.
        room = limits.SLACK_SECTION_TEXT - len(first) - len("\nFollows: ")
        follows = _lines(topics, room, sep=", ") if topics else "no topics"
        blocks.append(_section(f"{first}\nFollows: {follows}"))
    if len(channels) > SHOWN_CHANNELS:
        blocks.append(_more(len(channels) - SHOWN_CHANNELS, "channels."))
    return blocks


def _paper_line(paper: dict[str, Any]) -> str:
    view = paper_view(paper, (), slack_escape)
    title = slack_link(view.url, view.raw_title) if view.url else view.title
    details = [part for part in (view.venue, view.authors) if part]
    return f"*{title}*" + (f"\n{' · '.join(details)}" if details else "")


def _saved_blocks(db: Store, key: str) -> tuple[int, list[Block]]:
    total = home_store.count_saved(db, key)
    if not total:
        return 0, [_section(EMPTY_SAVED)]
    blocks: list[Block] = []
    for paper in home_store.saved_page(db, key, SHOWN_SAVED):
        saved = slack_escape(str(paper.get("saved_at") or "")[:10])
        button = ButtonElement(text="Unsave", action_id=HOME_UNSAVE, value=str(paper["id"]))
        blocks.append(_section(f"{_paper_line(paper)}\nsaved {saved}", button))
    if total > SHOWN_SAVED:
        blocks.append(
            _more(
                total - SHOWN_SAVED,
                # `/papers saved` lists the newest 20 (interactive.SAVED_SHOWN), not all.
                "saved papers: `/papers saved export` gives them all, as BibTeX.",
            )
        )
    return total, blocks


def _digest_blocks(db: Store, channel: str) -> list[Block]:
    digest = home_store.last_digest(db, channel)
    if digest is None:
        return [_section(EMPTY_DIGEST)]
    built = slack_escape(str(digest["built_at"])[:10])
    heading = f"*{slack_escape(str(digest['week']))}*, built {built}"
    items = digest["items"]
    if not items:
        return [_section(f"{heading}: no new papers for your topics that time.")]
    shown = items[:SHOWN_DIGEST_ITEMS]
    lines = [f"{index}. {_paper_line(paper)}" for index, paper in enumerate(shown, start=1)]
    # The items past SHOWN_DIGEST_ITEMS and those long lines leave out make one count.
    room = limits.SLACK_SECTION_TEXT - len(heading) - 2
    return [_section(f"{heading}:\n{_lines(lines, room, hidden=len(items) - len(shown))}")]


def build_home(
    db: Store,
    team: str,
    user_id: str,
    *,
    catalog: Catalog,
    legacy_names: Iterable[str] = (),
    notice: str | None = None,
) -> dict[str, Any]:
    """The Home view (`views.publish`'s `view`) of a Slack user in workspace `team`,
    built with `slack_sdk.models` (validated), within Slack's limits (`MAX_BLOCKS`,
    "…and N more" for long lists), every user's or paper's text escaped.

    Reads only. `legacy_names` are the display names the user's older channel changes may
    be stored under (`db.home.managed_channels`); `notice` is a line shown first (what a
    button just did). Raises ValueError for a team or user id that is not Slack's form."""
    if not _TEAM.fullmatch(team) or not _USER.fullmatch(user_id):
        raise ValueError(f"not a Slack team and user: {team[:40]!r} {user_id[:40]!r}")
    key = user_key("slack", team, user_id)
    personal = personal_channel_of(team, user_id)
    channels = home_store.managed_channels(db, key, f"slack:{team}/", legacy_names)
    total_saved, saved = _saved_blocks(db, key)
    blocks: list[Block] = [
        _header("📰 Paperboy"),
        _context(
            f"Hello <@{user_id}>: the topics you follow, the channels you manage and your "
            "reading list. `/papers help` in any channel for the rest."
        ),
    ]
    if notice:
        blocks.append(_section(slack_escape(notice)))
    blocks += [DividerBlock(), _header("Your topics"), *_topic_blocks(db, personal, catalog)]
    blocks += [DividerBlock(), _header("Channels you manage"), *_channel_blocks(channels, catalog)]
    saved_title = f"Saved papers ({total_saved})" if total_saved else "Saved papers"
    blocks += [DividerBlock(), _header(saved_title), *saved]
    blocks += [DividerBlock(), _header("Your last personal digest")]
    blocks += _digest_blocks(db, personal)
    # By construction at most 3 + 4 * 2 + (SHOWN_* + 1 each) + 1 = 81 blocks.
    assert len(blocks) <= MAX_BLOCKS, len(blocks)
    return View(type="home", blocks=blocks).to_dict()  # to_dict validates every block


async def legacy_names(client: AsyncWebClient, user_id: str) -> list[str]:
    """The names older records may name this user by: "@name" as a slash command's
    `user_name` gave it (users.info's `name`), and the bare id (stored when Slack sent no
    name). Only the id when users.info fails."""
    names = [user_id]
    try:
        user = (await client.users_info(user=user_id)).get("user")
    except SlackApiError as exc:
        log.warning("users.info for the Home of %s failed: %s", user_id, error_code(exc))
        return names
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
        # Slack not reached: the Home is still published, found by the id alone.
        log.warning("users.info for the Home of %s failed: %s", user_id, type(exc).__name__)
        return names
    if isinstance(user, dict) and isinstance(user.get("name"), str) and user["name"]:
        names.append(f"@{user['name']}")
    return names


async def publish_home(
    services: Services,
    client: AsyncWebClient,
    team: str,
    user_id: str,
    notice: str | None = None,
) -> bool:
    """Build the user's Home and publish it (`views.publish`). True if Slack took it.
    Never raises: a failure is one log line (the user sees the previous Home).

    One user's Homes are built and published one at a time, in the order asked: else a
    Home built before a click's change (the tab opened just before the click) could be
    published after the click's fresh one, and the unsaved paper would come back."""
    return await _publish_in_order(services, client, team, user_id, notice) is None


async def _publish_in_order(
    services: Services, client: AsyncWebClient, team: str, user_id: str, notice: str | None
) -> str | None:
    """`_publish` after the user's publishes asked before (`publish_home`)."""
    lock = _publishing.setdefault((team, user_id), asyncio.Lock())
    async with lock:
        return await _publish(services, client, team, user_id, notice)


async def home_tab_opened(
    services: Services,
    client: AsyncWebClient,
    team: str,
    user_id: str,
    executor: Executor | None = None,
) -> bool:
    """`app_home_opened` on the Home tab: remember that this user has a Home (in
    `executor`, the caller's writer lane; by default a thread of the services), so later
    changes re-publish it (`refresh_home`), then publish it. A failure to remember is one
    log line; the Home is published all the same."""
    try:
        await run_in(services, executor, _remember_opened, services, team, user_id)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the Home is still published
        log.warning("could not remember the Home of %s: %s", user_id[:40], type(exc).__name__)
    return await publish_home(services, client, team, user_id)


def _remember_opened(services: Services, team: str, user_id: str) -> None:
    key = user_key("slack", team, user_id)
    if home_store.record_home_opened(services.db(), key, stamp(services.clock())):
        log.info("%s opened the Home: it is re-published when it changes", key)


REFRESHES_AT_ONCE = 2  # refreshes publishing at once
# Each refresh calls users.info and views.publish, both Tier 4 on Slack ("100+ per minute",
# per method and workspace), which the Homes users open and their Home buttons use too.
REFRESHES_PER_MINUTE = 50.0
# A refresh refused with a 429 the client did not wait out (Retry-After over its 60 s, or
# still refused after its retries) holds the next ones this long: each would be refused
# too, and lost.
RATE_LIMITED_PAUSE = 60.0
# Slack's answers that no later refresh can fare better with: the app's token is gone
# (uninstalled, revoked, expired) or its Home tab is turned off.
STOP_REFRESHING = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "team_access_not_granted",
        "not_enabled",
    }
)


class Ticket:
    """A refresh's place in its pace's queue (`RefreshPace.turn`). `first`: a click asked
    for it, its user is looking at the Home; `notice`, the line the Home shows."""

    def __init__(self, *, first: bool = False, notice: str | None = None) -> None:
        self.first, self.notice = first, notice
        self.wake = asyncio.Event()  # set when it may be this ticket's turn


class RefreshPace:
    """When an event loop's Home refreshes may publish: `at_once` at most, their starts
    `60 / per_minute` seconds apart at least, in the order they came, except that a
    click's (`Ticket.first`) goes before every one that is not. Times on `monotonic`;
    tests pass a fake clock and a sleep that moves it. `stopped` is Slack's answer
    (`STOP_REFRESHING`) after which no refresh but a click's calls Slack any more."""

    def __init__(
        self,
        per_minute: float = REFRESHES_PER_MINUTE,
        at_once: int = REFRESHES_AT_ONCE,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.interval = 60.0 / per_minute
        self.at_once = at_once
        self.monotonic, self.sleep = monotonic, sleep
        self.stopped: str | None = None
        self._running = 0
        self._next = -math.inf
        self._first: deque[Ticket] = deque()
        self._others: deque[Ticket] = deque()

    @property
    def waiting(self) -> int:
        """How many refreshes wait for their turn."""
        return len(self._first) + len(self._others)

    @asynccontextmanager
    async def turn(self, ticket: Ticket) -> AsyncIterator[None]:
        """Wait for `ticket`'s turn, then hold one of the `at_once` places while the block
        runs. Once stopped, a ticket not `first` goes at once, taking no place nor time:
        it is only to give up."""
        (self._first if ticket.first else self._others).append(ticket)
        try:
            while not self._gives_up(ticket):
                if self._head() is ticket and self._running < self.at_once:
                    wait = self._next - self.monotonic()
                    if wait <= 0:
                        break
                    await self.sleep(wait)  # then look again: a click may go first now
                    continue
                ticket.wake.clear()
                await ticket.wake.wait()
        finally:
            (self._first if ticket in self._first else self._others).remove(ticket)
            self._poke()
        if self._gives_up(ticket):
            yield
            return
        self._running += 1
        self._next = max(self.monotonic(), self._next) + self.interval
        try:
            yield
        finally:
            self._running -= 1
            self._poke()

    def promote(self, ticket: Ticket) -> None:
        """A click joined `ticket`, waiting: it goes before the refreshes no one looks at."""
        if not ticket.first:
            ticket.first = True
            if ticket in self._others:
                self._others.remove(ticket)
                self._first.append(ticket)
            self._poke()

    def hold(self, seconds: float) -> None:
        """No refresh starts within `seconds` from now."""
        self._next = max(self._next, self.monotonic() + seconds)

    def _gives_up(self, ticket: Ticket) -> bool:
        return self.stopped is not None and not ticket.first

    def _head(self) -> Ticket | None:
        return self._first[0] if self._first else self._others[0] if self._others else None

    def _poke(self) -> None:
        head = self._head()
        if head is not None:
            head.wake.set()


def refresh_home(
    services: Services, client: AsyncWebClient, team: str, user_id: str
) -> asyncio.Task[bool] | None:
    """Re-publish the user's Home in the background, if they have opened it before
    (`home_tab_opened`); the task (for tests and a caller that wants to wait), or None
    when one for this user is already waiting to start: it reads the database when it
    starts, so it shows this change too. Paced (`RefreshPace`, half of what Slack allows
    `views.publish`); after a `STOP_REFRESHING` answer, none until a restart but a
    click's. Must be called in the event loop. Never raises."""
    task, started = _ask(services, client, team, user_id)
    return task if started else None


def refresh_after_click(
    services: Services, client: AsyncWebClient, team: str, user_id: str, notice: str
) -> asyncio.Task[bool]:
    """Re-publish the Home a user clicked on, with `notice` (what the click did): the
    refresh waiting to start for this user if there is one (it shows this click's
    `notice` instead of an earlier one's, and goes before refreshes no one looks at), else
    a new one, paced as every refresh is (a burst of clicks publishes once at once, then
    once with the final state). No recorded opening is needed: they clicked on their Home.
    The task, True if Slack took the Home. Must be called in the event loop."""
    task, _ = _ask(services, client, team, user_id, notice)
    return task


def _ask(
    services: Services,
    client: AsyncWebClient,
    team: str,
    user_id: str,
    notice: str | None = None,
) -> tuple[asyncio.Task[bool], bool]:
    """(The refresh that will show this change, True if it was started for it.) A
    `notice` is a click's."""
    loop = asyncio.get_running_loop()
    key = (loop, team, user_id)
    waiting = _refreshes.get(key)
    if waiting is not None and not waiting[0].done():
        task, ticket = waiting
        if notice is not None:
            ticket.notice = notice
            _pace(loop).promote(ticket)
        return task, False
    ticket = Ticket(first=notice is not None, notice=notice)
    task = loop.create_task(_refresh(services, client, team, user_id, key, ticket))
    _refreshes[key] = (task, ticket)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task, True


def _pace(loop: asyncio.AbstractEventLoop) -> RefreshPace:
    return _pacing.get(loop) or _pacing.setdefault(loop, RefreshPace())


async def _refresh(
    services: Services,
    client: AsyncWebClient,
    team: str,
    user_id: str,
    key: tuple[asyncio.AbstractEventLoop, str, str],
    ticket: Ticket,
) -> bool:
    try:
        if not ticket.first:
            try:
                opened = await services.in_thread(_opened, services, team, user_id)
            except Exception as exc:  # a refresh is never worth a traceback
                log.warning("could not tell if %s has a Home: %s", user_id[:40], type(exc).__name__)
                opened = False
            if not opened and not ticket.first:  # a click may have joined meanwhile
                return False
        pace = _pace(key[0])
        async with pace.turn(ticket):
            # From here on a change needs a new refresh: this one may have read before it.
            _forget(key)
            if pace.stopped is not None and not ticket.first:
                return False  # said once, when it stopped
            failure = await _publish_in_order(services, client, team, user_id, ticket.notice)
            if failure == "ratelimited":
                pace.hold(RATE_LIMITED_PAUSE)
            if failure in STOP_REFRESHING and pace.stopped is None:
                pace.stopped = failure
                log.warning(
                    "Home refreshes stop until a restart: Slack answered %s (the app's "
                    "token or Home tab); Homes opened or clicked by users are still published",
                    failure,
                )
            return failure is None
    finally:
        _forget(key)


def _forget(key: tuple[asyncio.AbstractEventLoop, str, str]) -> None:
    """The current task no longer waits to start: a later change needs a new refresh."""
    waiting = _refreshes.get(key)
    if waiting is not None and waiting[0] is asyncio.current_task():
        del _refreshes[key]


def _opened(services: Services, team: str, user_id: str) -> bool:
    try:
        key = user_key("slack", team, user_id)
    except ValueError:
        return False
    return home_store.has_opened_home(services.db(), key)


# The refresh waiting to start for each (event loop, team, user), with its ticket; the
# refreshes running (a task needs a reference while it runs); one pace per event loop.
_refreshes: dict[tuple[asyncio.AbstractEventLoop, str, str], tuple[asyncio.Task[bool], Ticket]] = {}
_running: set[asyncio.Task[bool]] = set()
_pacing: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, RefreshPace] = (
    weakref.WeakKeyDictionary()
)


class HomeRefreshingPoster(SlackPoster):
    """The Slack poster (`bot.slack.poster.SlackPoster`, same arguments, and `services`)
    that, once the first message of a personal digest (`slack:T/@U`) is posted,
    re-publishes that user's Home (`refresh_home`: only if they opened it before). A
    channel's digest publishes nothing, for none of its members."""

    def __init__(self, client: AsyncWebClient, *, services: Services, **options: Any) -> None:
        super().__init__(client, **options)
        self.services = services

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        sent = await super().send(channel, payload, thread_of)
        if channel.personal and thread_of is None and channel.team and channel.user:
            # The first part: the Home shows the digest from the database, whole. The
            # message is posted: a failure here must not fail the send (the outbox would
            # post it again).
            try:
                refresh_home(self.services, self.client, channel.team, channel.user)
            except Exception:
                log.exception("could not start the Home refresh of %s", channel)
        return sent


# One lock per user whose Home is being published; gone when no publish holds or waits.
_publishing: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
    weakref.WeakValueDictionary()
)


async def _publish(
    services: Services, client: AsyncWebClient, team: str, user_id: str, notice: str | None
) -> str | None:
    """Build and publish the Home: None when Slack took it, else why not (Slack's error
    code, or the exception's name), logged here."""
    try:
        names = await legacy_names(client, user_id)
        view = await services.in_thread(_build, services, team, user_id, names, notice)
        await client.views_publish(user_id=user_id, view=view)
    except SlackApiError as exc:
        why = error_code(exc)
        log.warning("views.publish for %s failed: %s", user_id, why)
        return why
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:  # not a bug
        log.warning("views.publish for %s failed: %s", user_id, type(exc).__name__)
        return type(exc).__name__
    except Exception as exc:  # a bug: logged with its traceback, never shown to the user
        log.exception("building the Home of %s/%s failed", team[:40], user_id[:40])
        return type(exc).__name__
    return None


def _build(
    services: Services, team: str, user_id: str, names: list[str], notice: str | None
) -> dict[str, Any]:
    return build_home(
        services.db(),
        team,
        user_id,
        catalog=services.catalog,
        legacy_names=names,
        notice=notice,
    )


def unsubscribe(
    db: Store,
    team: str,
    user_id: str,
    value: str,
    now: datetime,
    catalog: Catalog | None = None,
) -> Outcome:
    """A Home "Unsubscribe" click: `value` must name an active subscription of this
    user's own personal digest; anything else (malformed, removed, another user's or a
    channel's subscription) changes nothing."""
    personal = personal_channel_of(team, user_id)
    row = home_store.subscription(db, int(value)) if _SUBSCRIPTION_VALUE.fullmatch(value) else None
    if row is None or row["channel"] != personal or row["removed_at"] is not None:
        log.warning(
            "refused a Home unsubscribe by %s/%s: value %r is not one of their topics",
            team[:40],
            user_id[:40],
            value[:40],
        )
        return Outcome(NOT_YOURS, changed=False)
    remove_subscription(db, int(row["id"]), user_id, stamp(now))
    topic = catalog.get(str(row["topic_id"])) if catalog and not row.get("custom_text") else None
    label = topic.label if topic else str(row.get("custom_text") or row["topic_id"])
    return Outcome(f"Unsubscribed from {label}: your personal digest no longer has it.", True)


def unsave(db: Store, team: str, user_id: str, value: str) -> Outcome:
    """A Home "Unsave" click: `value` must be a paper id in this user's saved list. Only
    the clicker's own list is ever touched, so a forged value can only miss."""
    key = user_key("slack", team, user_id)
    if not _PAPER_VALUE.fullmatch(value) or not unsave_paper(db, key, value):
        log.warning(
            "refused a Home unsave by %s/%s: %r is not in their saved papers",
            team[:40],
            user_id[:40],
            value[:40],
        )
        return Outcome(NOT_YOURS, changed=False)
    return Outcome("Removed a paper from your saved papers.", changed=True)


def home_opened(body: object) -> tuple[str, str] | None:
    """(team, user id) of an Events API callback (`body`, the whole callback) that asks
    for a Home: `app_home_opened` on the Home tab (Slack sends the same event for the
    Messages tab: nothing to publish there). None for anything else or ids not in Slack's
    form."""
    if not isinstance(body, dict) or body.get("type") != "event_callback":
        return None
    event = body.get("event")
    if not isinstance(event, dict) or event.get("type") != "app_home_opened":
        return None
    team, user_id = body.get("team_id"), event.get("user")
    if event.get("tab") != "home" or not isinstance(team, str) or not isinstance(user_id, str):
        return None
    if not _TEAM.fullmatch(team) or not _USER.fullmatch(user_id):
        log.warning("ignored an app_home_opened without a Slack team and user")
        return None
    return team, user_id


def _clicker(payload: dict[str, Any]) -> tuple[str, str] | None:
    """(team, user id) of a block_actions payload, if both are Slack's form."""
    user = payload.get("user")
    team = payload.get("team")
    user_id = user.get("id") if isinstance(user, dict) else None
    team_id = team.get("id") if isinstance(team, dict) else None
    if team_id is None and isinstance(user, dict):
        team_id = user.get("team_id")
    if not isinstance(user_id, str) or not isinstance(team_id, str):
        return None
    if not _USER.fullmatch(user_id) or not _TEAM.fullmatch(team_id):
        return None
    return team_id, user_id


async def handle_home_action(
    services: Services,
    client: AsyncWebClient,
    payload: dict[str, Any],
    action: dict[str, Any],
    executor: Executor | None = None,
) -> None:
    """One click on a Home button (`action`, an element of the payload's `actions`):
    checked against the clicker, applied in `executor` (the caller's writer lane; by
    default a thread of the services), then the Home is published again with a line
    saying what happened. Never raises, except the cancellation of a click the lane
    refused (the endpoint is stopping: nothing was written)."""
    who = _clicker(payload)
    if who is None:
        log.warning("ignored a Home click without a Slack team and user")
        return
    team, user_id = who
    action_id = str(action.get("action_id") or "")
    value = action.get("value")
    value = value if isinstance(value, str) else ""
    try:
        if action_id == HOME_UNSUBSCRIBE:
            outcome = await run_in(services, executor, _unsubscribe, services, team, user_id, value)
        elif action_id == HOME_UNSAVE:
            outcome = await run_in(services, executor, _unsave, services, team, user_id, value)
        else:
            log.warning("ignored an unknown Home action %r", action_id[:60])
            outcome = Outcome(NOT_YOURS, changed=False)
    except Exception:
        log.exception("Home action %s by %s/%s failed", action_id[:60], team, user_id)
        outcome = Outcome("Sorry, something went wrong on my side; nothing changed.", False)
    if outcome.changed and action_id == HOME_UNSUBSCRIBE:
        services.changed(personal_channel_of(team, user_id))  # the scheduler re-reads it
    # Waited on, so the endpoint's stop gives the publish its grace; shared with the
    # user's other clicks waiting for it.
    await refresh_after_click(services, client, team, user_id, outcome.text)


def _unsubscribe(services: Services, team: str, user_id: str, value: str) -> Outcome:
    db = services.db()
    with db.write():  # the check and the change see the same rows
        return unsubscribe(db, team, user_id, value, services.clock(), services.catalog)


def _unsave(services: Services, team: str, user_id: str, value: str) -> Outcome:
    db = services.db()
    with db.write():
        return unsave(db, team, user_id, value)
