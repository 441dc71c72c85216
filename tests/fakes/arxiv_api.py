"""A fake arXiv export API (`/api/query`) on loopback, shaped like the real one.

It serves a corpus sorted by submission date (or last update: `sortBy`), newest first, with opensearch totals, the
`arxiv:` elements (comment, journal_ref, doi, primary_category, affiliation), http://
links as arXiv writes them, and arXiv's quirks on demand:
- `empty_once`: starts that answer a page with zero entries once (totalResults intact);
- `failures`: the next requests answer these (status, Retry-After) pairs first;
- `malformed`: the next N requests answer a truncated page;
- `error_feed`: answer arXiv's error feed (a bad query) to every request.
Every request is recorded (`requests`: time by `clock`, params, User-Agent).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import quote
from xml.sax.saxutils import escape, quoteattr

from aiohttp import web


@dataclass
class Entry:
    arxiv_id: str
    title: str
    abstract: str
    published: datetime
    version: int = 1
    updated: datetime | None = None
    authors: list[tuple[str, list[str]]] = field(default_factory=lambda: [("Ada Lovelace", [])])
    categories: list[str] = field(default_factory=lambda: ["cs.LG"])
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None


@dataclass
class Seen:
    at: float
    params: dict[str, str]
    user_agent: str


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_xml(e: Entry) -> str:
    vid = f"{e.arxiv_id}v{e.version}"
    authors = "".join(
        "\n    <author>\n      <name>{}</name>{}\n    </author>".format(
            escape(name),
            "".join(
                f'\n      <arxiv:affiliation xmlns:arxiv="http://arxiv.org/schemas/atom">{escape(a)}</arxiv:affiliation>'
                for a in affs
            ),
        )
        for name, affs in e.authors
    )
    extra = ""
    if e.doi:
        extra += f'\n    <arxiv:doi xmlns:arxiv="http://arxiv.org/schemas/atom">{escape(e.doi)}</arxiv:doi>'
        extra += f'\n    <link title="doi" href="http://dx.doi.org/{escape(e.doi)}" rel="related"/>'
    if e.comment:
        extra += f'\n    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">{escape(e.comment)}</arxiv:comment>'
    if e.journal_ref:
        extra += f'\n    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">{escape(e.journal_ref)}</arxiv:journal_ref>'
    cats = "".join(
        f'\n    <category term={quoteattr(c)} scheme="http://arxiv.org/schemas/atom"/>'
        for c in e.categories
    )
    return f"""  <entry>
    <id>http://arxiv.org/abs/{vid}</id>
    <updated>{_stamp(e.updated or e.published)}</updated>
    <published>{_stamp(e.published)}</published>
    <title>{escape(e.title)}</title>
    <summary>  {escape(e.abstract)}
</summary>{authors}{extra}
    <link href="http://arxiv.org/abs/{vid}" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/{vid}" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term={quoteattr(e.categories[0])} scheme="http://arxiv.org/schemas/atom"/>{cats}
  </entry>
"""


def feed_xml(entries: list[Entry], *, query: str, total: int, start: int, per_page: int) -> str:
    body = "".join(entry_xml(e) for e in entries)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3D{quote(query, safe="")}%26id_list%3D%26start%3D{start}%26max_results%3D{per_page}" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query={escape(query)}&amp;id_list=&amp;start={start}&amp;max_results={per_page}</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2026-11-30T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{total}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{start}</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{per_page}</opensearch:itemsPerPage>
{body}</feed>
"""


def error_feed(message: str) -> str:
    slug = message.replace(" ", "_")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3D%26id_list%3D1234.12345" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=&amp;id_list=1234.12345</title>
  <id>http://arxiv.org/api/kvuntZ8c9a4Eq5CF7KY03nMug+Q</id>
  <updated>2026-11-30T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/api/errors#{escape(slug)}</id>
    <title>Error</title>
    <summary>{escape(message)}</summary>
    <updated>2026-11-30T00:00:00-05:00</updated>
    <link href="http://arxiv.org/api/errors#{escape(slug)}" rel="alternate" type="text/html"/>
    <author>
      <name>arXiv api core</name>
    </author>
  </entry>
</feed>
"""


@dataclass
class FakeArxiv:
    entries: list[Entry] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic
    empty_once: set[int] = field(default_factory=set)
    failures: list[tuple[int, str | None]] = field(default_factory=list)
    malformed: int = 0
    error_feed: str | None = None
    requests: list[Seen] = field(default_factory=list)

    def matching(self, query: str) -> list[Entry]:
        def hit(e: Entry) -> bool:
            if query.startswith("cat:"):
                return query[4:] in e.categories
            if query.startswith('all:"'):
                phrase = query[5:-1].lower()
                return phrase in e.title.lower() or phrase in e.abstract.lower()
            return True

        return [e for e in self.entries if hit(e)]

    async def query(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        self.requests.append(Seen(self.clock(), params, request.headers.get("User-Agent", "")))
        if self.failures:
            status, retry_after = self.failures.pop(0)
            headers = {"Retry-After": retry_after} if retry_after else {}
            return web.Response(status=status, text="Service Unavailable", headers=headers)
        if self.error_feed:
            return web.Response(
                text=error_feed(self.error_feed), content_type="application/atom+xml"
            )
        query = params.get("search_query", "")
        start = int(params.get("start", "0"))
        per_page = int(params.get("max_results", "10"))
        if params.get("sortBy") == "lastUpdatedDate":
            key = lambda e: e.updated or e.published  # noqa: E731
        else:
            key = lambda e: e.published  # noqa: E731
        found = sorted(
            self.matching(query), key=key, reverse=params.get("sortOrder") != "ascending"
        )
        page = found[start : start + per_page]
        if start in self.empty_once:
            self.empty_once.discard(start)
            page = []
        text = feed_xml(page, query=query, total=len(found), start=start, per_page=per_page)
        if self.malformed:
            self.malformed -= 1
            text = text[: len(text) // 2]  # a page cut off mid-entry
        return web.Response(text=text, content_type="application/atom+xml")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/query", self.query)
        return app
