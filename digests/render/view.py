"""What every renderer shows of a digest, already escaped for its platform.

Templates receive only these views: every piece of paper text in them has been
through the platform's escape function, so a template cannot forget to escape.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_environment
from jinja2.filters import do_wordwrap

from digests.digest import Digest, DigestItem
from digests.lookup import PAGE_KEYS, paper_link, paper_links, short_authors, shown_venue
from digests.schedule import is_week_key
from digests.text import shorten
from digests.topics import Topic

log = logging.getLogger(__name__)

Escape = Callable[[str], str]
TITLE_MAX = 200
TLDR_MAX = 300
COMMAND = "/papers"
ARCHIVE_MARK = "from the archive"


WRAP_CACHE_SIZE = 8192


@lru_cache(maxsize=WRAP_CACHE_SIZE)
def _wrapped(
    environment: Environment,
    text: str,
    width: int,
    break_long_words: bool,
    wrapstring: str | None,
    break_on_hyphens: bool,
) -> str:
    return do_wordwrap(environment, text, width, break_long_words, wrapstring, break_on_hyphens)


@pass_environment
def cached_wordwrap(
    environment: Environment,
    s: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    """Jinja's `wordwrap`, remembered by its arguments: a pure function of the text, so a
    remembered answer is never stale. The same TLDR is wrapped in many channels' digests of
    one batch (10,000 digests share ~3,000 papers), and wrapping is costly."""
    if type(s) is not str:  # Markup or anything else: wrap afresh (the cache keys by value)
        return do_wordwrap(environment, s, width, break_long_words, wrapstring, break_on_hyphens)
    return _wrapped(environment, s, width, break_long_words, wrapstring, break_on_hyphens)


@cache
def environment() -> Environment:
    """Jinja2 templates from `digests/templates/`. Autoescape is off: views are pre-escaped."""
    env = Environment(
        loader=PackageLoader("digests", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
        # The templates ship with the package: checking each one's file for changes would
        # cost a stat() per render.
        auto_reload=False,
    )
    env.filters["wordwrap"] = cached_wordwrap
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context).strip()


@dataclass(frozen=True)
class PaperView:
    """One paper, escaped. `url` is a checked http(s) URL (`digests.safe_url`) or None;
    each platform wraps it in its own link syntax."""

    id: str
    title: str
    venue: str  # "ICLR 2025", "arXiv", or "" when unknown
    tldr: str
    topics: list[str]
    url: str | None
    raw_title: str
    section: str | None = None  # set on the first paper of each topic group
    authors: str = ""  # the first three, then "et al."
    links: tuple[tuple[str, str], ...] = ()  # (label, checked URL): paper page, PDF, code
    from_archive: bool = False  # an older paper the backlog picked

    @property
    def meta(self) -> list[str]:
        """The venue, the topics and the archive mark, those there are (each escaped)."""
        parts = [self.venue] if self.venue else []
        if self.topics:
            parts.append(", ".join(self.topics))
        if self.from_archive:
            parts.append(ARCHIVE_MARK)
        return parts


def topic_label(topic: Topic) -> str:
    return topic.label


def venue_of(paper: dict[str, Any]) -> str:
    return shown_venue(paper)


# Every field of a paper that `_shown` reads. `_shown` is given only these (a paper
# reduced to them), so a field it starts reading without being listed here is missing
# from what it sees, and the renderers' tests fail, rather than the cache serving text
# computed from a field it does not key by.
SHOWN_FIELDS = (
    "id",
    "title",
    "tldr",
    "authors",
    "authors_line",
    "venue",
    "year",
    "published_at",
    *PAGE_KEYS,
    "pdf_url",
    "code_url",
)
SHOWN_CACHE_SIZE = 20_000  # entries (~1 KB each); a batch of 10,000 digests shows ~3,000 papers


@dataclass(frozen=True)
class _Shown:
    """The part of a paper's view that depends on the paper and the platform only."""

    id: str
    title: str
    venue: str
    tldr: str
    url: str | None
    raw_title: str
    authors: str
    links: tuple[tuple[str, str], ...]


def _shown(paper: dict[str, Any], escape: Escape) -> _Shown:
    title = shorten(str(paper["title"]), TITLE_MAX)
    return _Shown(
        id=str(paper["id"]),
        title=escape(title),
        venue=escape(shown_venue(paper)),
        tldr=escape(shorten(str(paper.get("tldr") or ""), TLDR_MAX)),
        url=paper_link(paper),
        raw_title=title,
        authors=escape(paper.get("authors_line") or short_authors(paper.get("authors"))),
        links=tuple(paper_links(paper)),
    )


def _frozen(value: Any) -> Any:
    if type(value) is str:  # most fields: itself (no other key part equals a str)
        return value
    if isinstance(value, list | tuple):
        return (type(value), tuple(_frozen(item) for item in value))
    hash(value)  # TypeError: not cacheable
    return (type(value), value)


_shown_cache: dict[tuple[Any, ...], _Shown] = {}
_shown_lock = threading.Lock()


def shown_cache_clear() -> None:
    """Forget every remembered paper view (tests; memory)."""
    with _shown_lock:
        _shown_cache.clear()
        _item_cache.clear()


def _shown_cached(paper: dict[str, Any], escape: Escape) -> _Shown:
    """`_shown`, remembered by the escape function and the VALUES of every field it reads
    (id, title, TLDR, authors, venue, year, links...), never by a stamp such as
    updated_at (two merges in one ingest share one): a paper whose shown text changed is
    a different key, so no stale text can be rendered. The many channels of one batch
    show the same papers: each is escaped, shortened and its links checked once. Bounded:
    emptied when full."""
    key: tuple[Any, ...] | None
    try:  # the key is built from the row (only a miss builds the reduced paper)
        key = (escape, *((name, _frozen(paper[name])) for name in SHOWN_FIELDS if name in paper))
        with _shown_lock:
            found = _shown_cache.get(key)
    except TypeError:  # a field of an unexpected, unhashable type: no caching
        key, found = None, None
    if found is not None:
        return found
    shown = _shown({name: paper[name] for name in SHOWN_FIELDS if name in paper}, escape)
    if key is None:
        return shown
    with _shown_lock:
        if len(_shown_cache) >= SHOWN_CACHE_SIZE:
            _shown_cache.clear()
        _shown_cache[key] = shown
    return shown


def paper_view(
    paper: dict[str, Any], topics: tuple[Topic, ...], escape: Escape, from_archive: bool = False
) -> PaperView:
    shown = _shown_cached(paper, escape)
    return PaperView(
        id=shown.id,
        title=shown.title,
        venue=shown.venue,
        tldr=shown.tldr,
        topics=[escape(topic_label(topic)) for topic in topics],
        url=shown.url,
        raw_title=shown.raw_title,
        authors=shown.authors,
        links=shown.links,
        from_archive=from_archive,
    )


ITEM_CACHE_SIZE = 20_000  # entries (a Slack section or a Discord embed: ~1-2 KB each)
_item_cache: dict[tuple[Any, ...], Any] = {}


def encoded(value: Any) -> str:
    """A payload's JSON text as the outbox stores it (`db.outbox.enqueue`): the Slack and
    Discord renderers join their messages' JSON from pieces made by this."""
    return json.dumps(value, ensure_ascii=False)


def fresh(value: Any) -> Any:
    """A copy of nested dicts and lists (the rest is immutable), for a caller to change."""
    if type(value) is dict:
        return {key: fresh(item) for key, item in value.items()}
    if type(value) is list:
        return [fresh(item) for item in value]
    return value


def per_paper(kind: str, paper: PaperView, make: Callable[[PaperView], Any]) -> Any:
    """`make(paper)`, remembered by `kind` and the value of every field of the view (a
    platform's item: `make` must read nothing else), and returned as a fresh copy that
    the caller may change. The channels of a batch show the same papers, mostly under
    the same topics, and a platform's item (its template, links checked) is costly.
    Bounded: emptied when full.
    Only dicts and lists are copied: a tuple (or NamedTuple) of parts is returned as it
    is remembered, and its caller copies what it hands out to be changed.

    Inside `batch()`, remembered by the view object itself: the batch's views are shared
    (`item_view`), so its key is one id, not every field's value."""
    scope = _scope.get()
    if scope is not None:
        made = scope.items.get((kind, id(paper)))
        if made is None:
            if len(scope.items) >= BATCH_KEPT:
                scope.items.clear()
            made = scope.items[(kind, id(paper))] = (paper, _per_paper(kind, paper, make))
        return fresh(made[1])
    return fresh(_per_paper(kind, paper, make))


def _per_paper(kind: str, paper: PaperView, make: Callable[[PaperView], Any]) -> Any:
    key = (kind, *(tuple(v) if type(v) is list else v for v in vars(paper).values()))
    try:
        hash(key)
    except TypeError:  # a field of an unexpected, unhashable type: no caching
        return make(paper)
    with _shown_lock:
        found = _item_cache.get(key, _item_cache)
    if found is _item_cache:
        found = make(paper)
        with _shown_lock:
            if len(_item_cache) >= ITEM_CACHE_SIZE:
                _item_cache.clear()
            _item_cache[key] = found
    return found


# Entries of each kind (item views; platform pieces) one `batch()` remembers, then it
# starts again: a 10,000-channel batch at 100k papers makes ~6,400 of each (its digests
# share ~1,800 rows). Rows that are not shared (digests rebuilt one at a time after a
# batch failed, recorded ones read again, carried papers) make one entry per item, and
# each entry keeps its row alive, for nothing found again.
BATCH_KEPT = 20_000


@dataclass
class _Batch:
    """What one `batch()` remembers, each entry holding the object whose id keys it (so
    no other object can take that id while the batch lasts). At most BATCH_KEPT entries
    of each kind: emptied when full (an emptied entry's object may be freed and its id
    taken again, but no entry keyed by that id is left to be found)."""

    views: dict[tuple[Any, ...], tuple[dict[str, Any], PaperView]] = field(default_factory=dict)
    items: dict[tuple[str, int], tuple[PaperView, Any]] = field(default_factory=dict)


_scope: ContextVar[_Batch | None] = ContextVar("render_batch", default=None)


@contextmanager
def batch() -> Iterator[None]:
    """Render a batch of digests, in this thread or task, taking every paper row the
    digests carry (`DigestItem.paper`) as unchanging while it lasts: the digests built
    together share their rows (`build_digests`), so each item's view, and each
    platform's piece made from it (`per_paper`), is made once per paper, topics and
    place, and found again by the row's identity, not by comparing every field's value
    (that comparison would be costly). Changing a row inside the
    scope would show its old text: the scheduler renders rows it just read and leaves
    alone. Bounded (BATCH_KEPT entries of each kind), forgotten when the scope ends."""
    token = _scope.set(_Batch())
    try:
        yield
    finally:
        _scope.reset(token)


def item_view(item: DigestItem, escape: Escape, section: str | None = None) -> PaperView:
    """The item's view, `section` (escaped) heading its topic group when it is the first;
    inside `batch()`, one view object per paper, topics, archive mark and section."""
    scope = _scope.get()
    if scope is None:
        return _item_view(item, escape, section)
    key = (
        escape,
        id(item.paper),
        item.from_archive,
        section,
        *(topic_label(topic) for topic in item.topics),
    )
    found = scope.views.get(key)
    if found is None:
        if len(scope.views) >= BATCH_KEPT:
            scope.views.clear()
        found = scope.views[key] = (item.paper, _item_view(item, escape, section))
    return found[1]


def _item_view(item: DigestItem, escape: Escape, section: str | None) -> PaperView:
    view = paper_view(item.paper, item.topics, escape, from_archive=item.from_archive)
    return view if section is None else replace(view, section=section)


@dataclass(frozen=True)
class DigestView:
    channel: str
    week_label: str
    topics: list[str]
    items: list[PaperView]
    count: int
    command: str = COMMAND
    weekly: bool = True

    @property
    def topic_list(self) -> str:
        return ", ".join(self.topics) if self.topics else "no topics yet"

    @property
    def new_count(self) -> int:
        return sum(not item.from_archive for item in self.items)

    @property
    def archive_count(self) -> int:
        return sum(item.from_archive for item in self.items)

    @property
    def counts(self) -> str:
        """`3 new papers`, `3 new papers and 2 from the archive`, `2 papers from the archive`."""
        new, old = self.new_count, self.archive_count
        if not new:
            return f"{old} paper{'s' if old != 1 else ''} {ARCHIVE_MARK}"
        text = f"{new} new paper{'s' if new != 1 else ''}"
        return f"{text} and {old} {ARCHIVE_MARK}" if old else text

    @property
    def nothing_new(self) -> str:
        """The one line of an empty digest."""
        when = "this week" if self.weekly else "today"
        return f"Nothing new for your topics {when} ({self.topic_list})."


def shown_key(
    order: Mapping[str, int], topic_ids: Iterable[str], from_archive: bool, score: float
) -> tuple[int, bool, float]:
    """The key `grouped` sorts a digest's items by (stably, from their recorded order):
    the item's first topic in `order` ({topic id: its place among the digest's topics}),
    new papers before archive ones, best first. `/papers why` numbers an item with it."""
    home = min((order.get(topic_id, len(order)) for topic_id in topic_ids), default=len(order))
    return home, from_archive, -score


def grouped(digest: Digest) -> list[tuple[Topic | None, DigestItem]]:
    """Items grouped under their first subscribed topic, topics in subscription order,
    best first within a group. Each paper still appears once, listing all its topics."""
    order = {topic.id: index for index, topic in enumerate(digest.topics)}

    keyed = sorted(
        (
            (shown_key(order, (t.id for t in item.topics), item.from_archive, item.score), n)
            for n, item in enumerate(digest.items)
        )
    )  # by key, then recorded order: a stable sort of the items
    topics = digest.topics
    return [(topics[key[0]] if key[0] < len(topics) else None, digest.items[n]) for key, n in keyed]


def digest_view(digest: Digest, escape: Escape) -> DigestView:
    papers = []
    previous: Topic | None = None
    for number, (topic, item) in enumerate(grouped(digest)):
        first = topic is not None and (number == 0 or topic != previous)
        section = escape(topic_label(topic)) if first and topic is not None else None
        previous = topic
        papers.append(item_view(item, escape, section))
    return DigestView(
        channel=escape(digest.channel),
        week_label=digest.period_label,
        topics=[escape(topic_label(topic)) for topic in digest.topics],
        items=papers,
        count=len(digest.items),
        weekly=is_week_key(digest.week),
    )
