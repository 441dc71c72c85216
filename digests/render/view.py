"""What every renderer shows of a digest, already escaped for its platform.

Templates receive only these views: every piece of paper text in them has been
through the platform's escape function, so a template cannot forget to escape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from digests.digest import Digest, DigestItem
from digests.enrich.text import shorten
from digests.lookup import paper_link, paper_links, short_authors, shown_venue
from digests.schedule import is_week_key
from digests.topics import Topic

log = logging.getLogger(__name__)

Escape = Callable[[str], str]
TITLE_MAX = 200
TLDR_MAX = 300
COMMAND = "/papers"
ARCHIVE_MARK = "from the archive"


@cache
def environment() -> Environment:
    """Jinja2 templates from `digests/templates/`. Autoescape is off: views are pre-escaped."""
    return Environment(
        loader=PackageLoader("digests", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


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


def paper_view(
    paper: dict[str, Any], topics: tuple[Topic, ...], escape: Escape, from_archive: bool = False
) -> PaperView:
    title = shorten(str(paper["title"]), TITLE_MAX)
    return PaperView(
        id=str(paper["id"]),
        title=escape(title),
        venue=escape(shown_venue(paper)),
        tldr=escape(shorten(str(paper.get("tldr") or ""), TLDR_MAX)),
        topics=[escape(topic_label(topic)) for topic in topics],
        url=paper_link(paper),
        raw_title=title,
        authors=escape(short_authors(paper.get("authors"))),
        links=tuple(paper_links(paper)),
        from_archive=from_archive,
    )


def item_view(item: DigestItem, escape: Escape) -> PaperView:
    return paper_view(item.paper, item.topics, escape, from_archive=item.from_archive)


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


def grouped(digest: Digest) -> list[tuple[Topic | None, DigestItem]]:
    """Items grouped under their first subscribed topic, topics in subscription order,
    best first within a group. Each paper still appears once, listing all its topics."""
    order = {topic.id: index for index, topic in enumerate(digest.topics)}

    def home(item: DigestItem) -> int:
        return min((order.get(topic.id, len(order)) for topic in item.topics), default=len(order))

    items = sorted(digest.items, key=lambda item: (home(item), item.from_archive, -item.score))
    result: list[tuple[Topic | None, DigestItem]] = []
    for item in items:
        index = home(item)
        topic = digest.topics[index] if index < len(digest.topics) else None
        result.append((topic, item))
    return result


def digest_view(digest: Digest, escape: Escape) -> DigestView:
    papers = []
    previous: Topic | None = None
    for number, (topic, item) in enumerate(grouped(digest)):
        view = item_view(item, escape)
        if topic is not None and (number == 0 or topic != previous):
            view = replace(view, section=escape(topic_label(topic)))
        previous = topic
        papers.append(view)
    return DigestView(
        channel=escape(digest.channel),
        week_label=digest.period_label,
        topics=[escape(topic_label(topic)) for topic in digest.topics],
        items=papers,
        count=len(digest.items),
        weekly=is_week_key(digest.week),
    )
