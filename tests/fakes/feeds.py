"""A fake feed host on loopback: an RSS 2.0 feed (arXiv's RSS shape), an Atom feed (a
journal's), an HTML page, a PDF, a too-big feed, and conditional GET (ETag and
Last-Modified: a request that sends them back gets 304). Requests are recorded."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:content="http://purl.org/rss/1.0/modules/content/" version="2.0">
  <channel>
    <title>cs.LG updates on arXiv.org</title>
    <link>http://rss.arxiv.org/rss/cs.LG</link>
    <description>cs.LG updates on the arXiv.org e-print archive.</description>
    <atom:link href="http://rss.arxiv.org/rss/cs.LG" rel="self" type="application/rss+xml"/>
    <docs>http://www.rssboard.org/rss-specification</docs>
    <language>en-us</language>
    <lastBuildDate>Mon, 30 Nov 2026 00:30:00 -0500</lastBuildDate>
    <item>
      <title>Conservative Offline Policies Without Pessimism</title>
      <link>https://arxiv.org/abs/2611.01234</link>
      <description>arXiv:2611.01234v1 Announce Type: new
Abstract: We show that &lt;b&gt;offline&lt;/b&gt; reinforcement learning needs no pessimism &amp;amp; still works.&lt;script&gt;alert(1)&lt;/script&gt; Code: https://github.com/example/cop.</description>
      <guid isPermaLink="false">oai:arXiv.org:2611.01234v1</guid>
      <category>cs.LG</category>
      <pubDate>Mon, 30 Nov 2026 00:00:00 -0500</pubDate>
      <arxiv:announce_type>new</arxiv:announce_type>
      <dc:rights>http://creativecommons.org/licenses/by/4.0/</dc:rights>
      <dc:creator>Grace Hopper, Alan Turing and Emmy Noether</dc:creator>
    </item>
    <item>
      <title>A Title-Only Item</title>
      <link>https://example.org/papers/42</link>
      <guid>https://example.org/papers/42</guid>
      <pubDate>Sun, 29 Nov 2026 10:00:00 GMT</pubDate>
    </item>
  </channel>
</rss>
"""

ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:prism="http://prismstandard.org/namespaces/basic/2.0/">
  <title>Journal of Examples: latest articles</title>
  <id>https://journal.example/feed</id>
  <updated>2026-11-28T12:00:00Z</updated>
  <entry>
    <title type="html">Learning &lt;i&gt;to&lt;/i&gt; Plan</title>
    <id>https://journal.example/article/7</id>
    <link rel="alternate" href="https://journal.example/article/7"/>
    <link rel="related" href="https://arxiv.org/abs/2501.01234v2"/>
    <published>2026-11-27T08:00:00+01:00</published>
    <updated>2026-11-28T12:00:00Z</updated>
    <author><name>Ada Lovelace</name></author>
    <author><name>Charles Babbage</name></author>
    <summary type="html">&lt;p&gt;Agents that plan.&lt;/p&gt;&lt;p&gt;Second paragraph.&lt;/p&gt;</summary>
    <prism:doi>10.1234/joe.2026.7</prism:doi>
    <category term="planning"/>
  </entry>
</feed>
"""

HTML = """<!DOCTYPE html>
<html><head><title>Journal home</title></head><body><h1>Welcome</h1><p>No feed here.</p></body></html>
"""


@dataclass
class FakeFeeds:
    etag: str = '"v1"'
    last_modified: str = "Sat, 28 Nov 2026 12:00:00 GMT"
    big_bytes: int = 2 * 1024 * 1024
    requests: list[dict[str, str]] = field(default_factory=list)

    def _record(self, request: web.Request) -> None:
        self.requests.append({"path": request.path, **dict(request.headers)})

    async def rss(self, request: web.Request) -> web.Response:
        self._record(request)
        if request.headers.get("If-None-Match") == self.etag:
            return web.Response(status=304, headers={"ETag": self.etag})
        return web.Response(
            text=RSS,
            content_type="application/rss+xml",
            headers={"ETag": self.etag, "Last-Modified": self.last_modified},
        )

    async def atom(self, request: web.Request) -> web.Response:
        self._record(request)
        if request.headers.get("If-Modified-Since") == self.last_modified:
            return web.Response(status=304)
        # Served as text/html, as some misconfigured hosts do: sniffing decides.
        return web.Response(
            text=ATOM, content_type="text/html", headers={"Last-Modified": self.last_modified}
        )

    async def html(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.Response(text=HTML, content_type="text/html")

    async def pdf(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.Response(body=b"%PDF-1.7\n...", content_type="application/pdf")

    async def big(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse(headers={"Content-Type": "application/rss+xml"})
        await response.prepare(request)  # chunked: no Content-Length to refuse early
        chunk = b"<!-- padding -->" * 4096
        sent = 0
        while sent < self.big_bytes:
            await response.write(chunk)
            sent += len(chunk)
        await response.write_eof()
        return response

    async def missing(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.Response(status=404, text="Not Found")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/cs.LG.rss", self.rss)
        app.router.add_get("/journal.atom", self.atom)
        app.router.add_get("/index.html", self.html)
        app.router.add_get("/paper.pdf", self.pdf)
        app.router.add_get("/big.rss", self.big)
        app.router.add_get("/gone.rss", self.missing)
        return app
