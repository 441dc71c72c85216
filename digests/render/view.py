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
from digests.lookup import paper_link
from digests.topics import Topic

log = logging.getLogger(__name__)

Escape = Callable[[str], str]
TITLE_MAX = 200
TLDR_MAX = 300
COMMAND = "/papers"


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
    venue: str
    tldr: str
    topics: list[str]
    url: str | None
    raw_title: str
    section: str | None = None  # set on the first paper of each topic group


def topic_label(topic: Topic) -> str:
    return topic.label


def venue_of(paper: dict[str, Any]) -> str:
    return " ".join(str(part) for part in (paper.get("venue"), paper.get("year")) if part)


def paper_view(paper: dict[str, Any], topics: tuple[Topic, ...], escape: Escape) -> PaperView:
    title = shorten(str(paper["title"]), TITLE_MAX)
    return PaperView(
        id=str(paper["id"]),
        title=escape(title),
        venue=escape(venue_of(paper) or "venue unknown"),
        tldr=escape(shorten(str(paper.get("tldr") or ""), TLDR_MAX)),
        topics=[escape(topic_label(topic)) for topic in topics],
        url=paper_link(paper),
        raw_title=title,
    )


def item_view(item: DigestItem, escape: Escape) -> PaperView:
    return paper_view(item.paper, item.topics, escape)


@dataclass(frozen=True)
class DigestView:
    channel: str
    week_label: str
    topics: list[str]
    items: list[PaperView]
    count: int
    command: str = COMMAND

    @property
    def topic_list(self) -> str:
        return ", ".join(self.topics) if self.topics else "no topics yet"


def grouped(digest: Digest) -> list[tuple[Topic | None, DigestItem]]:
    """Items grouped under their first subscribed topic, topics in subscription order,
    best first within a group. Each paper still appears once, listing all its topics."""
    order = {topic.id: index for index, topic in enumerate(digest.topics)}

    def home(item: DigestItem) -> int:
        return min((order.get(topic.id, len(order)) for topic in item.topics), default=len(order))

    items = sorted(digest.items, key=lambda item: (home(item), -item.score))
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
        week_label=f"week of {digest.week_start.strftime('%-d %b %Y')}",
        topics=[escape(topic_label(topic)) for topic in digest.topics],
        items=papers,
        count=len(digest.items),
    )
