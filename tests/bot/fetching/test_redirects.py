"""A source's redirects are followed only to public http(s) addresses: a hop to loopback,
a private network, link-local (cloud metadata) or any non-public address is refused,
checked on the address actually connected to, unless the operator allows it."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from bot.fetching import FetchConfig, FetchError, collect, open_fetch, open_session
from bot.fetching.client import PoliteClient
from bot.fetching.guard import is_literal, literal_refusal, refusal
from db import open_db
from digests.sources.spec import parse_source
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.feeds import FakeFeeds
from tests.fakes.fetch_time import FakeTime
from tests.fakes.named_hosts import NamedHosts
from tests.fakes.openreview_api import FakeOpenReview, note
from tests.fakes.server import ServedInThread, serve

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
OPT_OUT = "PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS"


HITS = web.AppKey("hits", list[str])


def redirecting(location: Callable[[web.Request], str], status: int = 302) -> web.Application:
    """An app whose every GET answers `status` to `location(request)`; `app[HITS]` holds
    the requests it answered."""
    app = web.Application()
    app[HITS] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        app[HITS].append(request.path_qs)
        return web.Response(status=status, headers={"Location": location(request)})

    app.router.add_get("/{tail:.*}", handler)
    return app


@dataclass
class Servers:
    feed: str  # the feed's URL, which redirects
    hits: list[str]  # the redirects it answered
    internal: FakeFeeds  # where it redirects to: its RSS holds two papers
    port: int  # the internal host's


@contextmanager
def feed_servers(location: Callable[[int], str]) -> Iterator[Servers]:
    """A feed host redirecting to `location(port of the internal host)`, and that
    internal host, each served in a thread of its own."""
    internal = FakeFeeds()
    with ServedInThread(internal.app()) as inside:
        app = redirecting(lambda request: location(inside.port))
        with ServedInThread(app) as outside:
            feed = f"http://127.0.0.1:{outside.port}/feed.rss"
            yield Servers(feed, app[HITS], internal, inside.port)


async def fetch_feed(url: str, **config: object) -> int:
    """Papers read from `feed:url` through `open_session` and the feed fetch."""
    cfg = FetchConfig(backoff=0, **config)  # type: ignore[arg-type]
    time_ = FakeTime()
    async with open_session(cfg) as session:
        fetch = open_fetch(
            parse_source(f"feed:{url}"), session, cfg, now=NOW, sleep=time_.sleep, clock=time_.clock
        )
        papers, _ = await collect(fetch)
    return len(papers)


def test_the_classifier() -> None:
    refused = {
        "127.0.0.1": "a loopback address",
        "127.255.255.254": "a loopback address",
        "0.0.0.0": "the unspecified address",
        "10.1.2.3": "a private address",
        "172.16.0.1": "a private address",
        "172.31.255.255": "a private address",
        "192.168.1.1": "a private address",
        "169.254.169.254": "a link-local address",
        "224.0.0.1": "a multicast address",
        "224.0.1.1": "a multicast address",  # Python counts this one global
        "255.255.255.255": "a reserved address",
        "240.0.0.1": "a reserved address",
        "100.64.0.1": "not a public address",  # carrier-grade NAT
        "192.0.2.1": "not a public address",  # documentation
        "198.18.0.1": "not a public address",  # benchmarking
        "::1": "a loopback address",
        "::": "the unspecified address",
        "fe80::1": "a link-local address",
        "fe80::1%eth0": "a link-local address",
        "fd12:3456::1": "a private address",
        "fec0::1": "a reserved address",  # site-local, which Python counts global
        "ff02::1": "a multicast address",
        "ff0e::1": "a multicast address",
        "2001:db8::1": "not a public address",
        "::7f00:1": "a reserved address",  # IPv4-compatible, deprecated
        "::ffff:127.0.0.1": "an IPv4-mapped 127.0.0.1, a loopback address",
        "::ffff:169.254.169.254": "an IPv4-mapped 169.254.169.254, a link-local address",
        "::ffff:10.0.0.1": "an IPv4-mapped 10.0.0.1, a private address",
        "64:ff9b::7f00:1": "a NAT64 127.0.0.1, a loopback address",
        "64:ff9b::a9fe:a9fe": "a NAT64 169.254.169.254, a link-local address",
        "2002:7f00:1::": "a 6to4 127.0.0.1, a loopback address",
        "2002:c0a8:101::1": "a 6to4 192.168.1.1, a private address",
        "2002:808:808::1": "a 6to4 tunnel address",  # Python 3.11.2 and 3.11.7 disagree on it
        "2001:0:4136:e378:8000:63bf:3fff:fdd2": "a Teredo tunnel address",
        "127.1": "not a canonical IP address",
        "2130706433": "not a canonical IP address",
        "127.0.0.1.": "not a canonical IP address",
    }
    for address, why in refused.items():
        assert refusal(address) == why, address
    public = ["8.8.8.8", "93.184.215.14", "1.1.1.1", "172.32.0.1", "192.0.0.9", "223.255.255.1",
              "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8",
              "64:ff9b::808:808"]  # fmt: skip
    for address in public:
        assert refusal(address) is None, address
    # What aiohttp connects to without its resolver is checked as a literal; the rest
    # are names, which the resolver checks.
    assert literal_refusal("127.1") == "not a canonical IP address"
    assert literal_refusal("::ffff:7f00:1") == "an IPv4-mapped 127.0.0.1, a loopback address"
    assert literal_refusal("feeds.example.org") is None and not is_literal("0x7f.0.0.1")
    assert is_literal("10.0.0.1") and is_literal("::1") and not is_literal(None)


def test_a_feed_redirecting_to_another_loopback_port_is_refused(  # type: ignore[no-untyped-def]
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `paperboy sources add` and `paperboy fetch`: one line naming the hop and its
    address, not retried, nothing stored; PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS=1 lets it
    through (the page is then stored)."""
    monkeypatch.delenv(OPT_OUT, raising=False)
    with feed_servers(lambda port: f"http://127.0.0.1:{port}/cs.LG.rss?key=s3cr3t") as servers:
        feed, hop = servers.feed, f"http://127.0.0.1:{servers.port}/cs.LG.rss?…"
        refused = (
            f"refused a redirect to {hop} (127.0.0.1 is a loopback address; {OPT_OUT}=1 allows it)"
        )
        added = run("sources", "add", f"feed:{feed}")
        assert added.exit_code == 2
        assert added.output == (
            f"error: feed:{feed}: {refused}; nothing added (--no-check adds it unread)\n"
        )
        assert len(servers.hits) == 1 and servers.internal.requests == []  # not retried
        assert not (tmp_path / "db" / "paperboy.db").exists()

        assert run("sources", "add", f"feed:{feed}", "--no-check").exit_code == 0
        fetched = run("fetch")
        assert fetched.exit_code == 1
        assert fetched.output == f"feed:{feed}: 0 papers read; 1 error ({refused})\n"
        assert "s3cr3t" not in added.output + fetched.output
        assert len(servers.hits) == 2 and servers.internal.requests == []
        db = open_db(tmp_path / "db" / "paperboy.db")
        assert db.sqlite["papers"].count == 0
        assert db.execute("select last_error from sources").fetchone()[0] == refused

        allowed = run("fetch", **{OPT_OUT: "1"})
        assert allowed.exit_code == 0, allowed.output
        assert allowed.output.startswith(f"feed:{feed}: 2 papers read: 2 added"), allowed.output
        assert [r["path"] for r in servers.internal.requests] == ["/cs.LG.rss"]
        assert db.sqlite["papers"].count == 2


async def test_a_name_that_resolves_to_a_private_address_is_refused() -> None:
    """A hop by name is checked on the addresses the name resolves to, by the resolver the
    connector connects with."""
    names = NamedHosts({"intranet.example": ["127.0.0.1"], "feeds.example": ["127.0.0.1"]})
    with feed_servers(lambda port: f"http://intranet.example:{port}/cs.LG.rss") as servers:
        # The feed's own URL may be a name resolving to loopback: the operator named it.
        feed = servers.feed.replace("127.0.0.1", "feeds.example")
        with pytest.raises(FetchError) as caught:
            await fetch_feed(feed, resolver=names, attempts=3)
    assert str(caught.value) == (
        f"feed:{feed}: refused a redirect to http://intranet.example:{servers.port}/cs.LG.rss "
        f"(127.0.0.1 is a loopback address; {OPT_OUT}=1 allows it)"
    )
    assert names.lookups == ["feeds.example", "intranet.example"]  # once each: not retried
    assert len(servers.hits) == 1 and servers.internal.requests == []


async def test_a_hop_back_to_the_feeds_own_name_is_checked_too() -> None:
    """The feed's name resolves to loopback (allowed: the operator named it); a redirect
    to the same name and port is a hop like any other. A DNS cache or a pooled connection
    would reuse the feed's unchecked lookup for it."""
    names = NamedHosts({"feeds.example": ["127.0.0.1"]})
    app = redirecting(lambda request: "/elsewhere.rss")
    runner, port = await serve(app)
    feed = f"http://feeds.example:{port}/feed.rss"
    try:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(feed, resolver=names)
    finally:
        await runner.cleanup()
    assert str(caught.value) == (
        f"feed:{feed}: refused a redirect to http://feeds.example:{port}/elsewhere.rss "
        f"(127.0.0.1 is a loopback address; {OPT_OUT}=1 allows it)"
    )
    assert names.lookups == ["feeds.example", "feeds.example"] and app[HITS] == ["/feed.rss"]


async def test_a_session_whose_resolver_does_not_check_refuses_every_hop_by_name() -> None:
    """A session not made by `open_session` cannot check a hop's address: the hop fails
    before it is sent (the internal host never sees the request)."""
    internal = FakeFeeds()
    inside, port = await serve(internal.app())
    app = redirecting(lambda request: f"http://localhost:{port}/cs.LG.rss")
    outside, feed_port = await serve(app)
    cfg = FetchConfig(attempts=1)
    try:
        async with aiohttp.ClientSession() as session:
            client = PoliteClient(session, cfg, source="feed:test", delay=0)
            with pytest.raises(FetchError) as caught:
                await client.request(f"http://127.0.0.1:{feed_port}/feed.rss", lambda a: a)
    finally:
        await outside.cleanup()
        await inside.cleanup()
    assert str(caught.value) == (
        f"feed:test: refused a redirect to http://localhost:{port}/cs.LG.rss: its address was "
        "not checked"
    )
    assert len(app[HITS]) == 1 and internal.requests == []


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (
            "http://169.254.169.254/latest/meta-data/",
            "refused a redirect to http://169.254.169.254/latest/meta-data/ (169.254.169.254 "
            f"is a link-local address; {OPT_OUT}=1 allows it)",
        ),
        (
            "//169.254.169.254/latest/meta-data/",  # the scheme of the page redirecting
            "refused a redirect to http://169.254.169.254/latest/meta-data/ (169.254.169.254 "
            f"is a link-local address; {OPT_OUT}=1 allows it)",
        ),
        (
            "http://[::ffff:127.0.0.1]:{port}/cs.LG.rss",
            "refused a redirect to http://[::ffff:7f00:1]:{port}/cs.LG.rss (::ffff:7f00:1 is an "
            f"IPv4-mapped 127.0.0.1, a loopback address; {OPT_OUT}=1 allows it)",
        ),
        (
            "http://127.1:{port}/cs.LG.rss",
            "refused a redirect to http://127.1:{port}/cs.LG.rss (127.1 is not a canonical IP "
            f"address; {OPT_OUT}=1 allows it)",
        ),
        (
            "http://0.0.0.0:{port}/cs.LG.rss",
            "refused a redirect to http://0.0.0.0:{port}/cs.LG.rss (0.0.0.0 is the unspecified "
            f"address; {OPT_OUT}=1 allows it)",
        ),
        # Names the system resolver turns into loopback: checked after resolution.
        (
            "http://localhost:{port}/cs.LG.rss",
            "refused a redirect to http://localhost:{port}/cs.LG.rss (",
        ),
        (
            "http://0x7f.0.0.1:{port}/cs.LG.rss",
            "refused a redirect to http://0x7f.0.0.1:{port}/cs.LG.rss (127.0.0.1 is a loopback",
        ),
        (
            "file:///etc/passwd",
            "refused a redirect from 127.0.0.1:{feed_port} to a file: URL (only http and https "
            "are followed)",
        ),
        (
            "ftp://127.0.0.1:{port}/cs.LG.rss",
            "refused a redirect from 127.0.0.1:{feed_port} to a ftp: URL (only http and https "
            "are followed)",
        ),
    ],
)
async def test_redirects_that_are_refused(location: str, message: str) -> None:
    internal = FakeFeeds()
    inside, port = await serve(internal.app())
    app = redirecting(lambda request: location.format(port=port))
    outside, feed_port = await serve(app)
    feed = f"http://127.0.0.1:{feed_port}/feed.rss"
    try:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(feed, attempts=3)
    finally:
        await outside.cleanup()
        await inside.cleanup()
    text = str(caught.value)
    assert text.startswith(f"feed:{feed}: " + message.format(port=port, feed_port=feed_port))
    assert "\n" not in text
    assert len(app[HITS]) == 1 and internal.requests == []


async def test_an_arxiv_redirect_to_loopback_is_refused() -> None:
    time_ = FakeTime()
    inside_fake = FakeArxiv([Entry("2511.00001", "An internal page", "Internal.", NOW)])
    inside, port = await serve(inside_fake.app())
    app = redirecting(lambda request: f"http://127.0.0.1:{port}{request.path_qs}", status=301)
    outside, api_port = await serve(app)
    cfg = FetchConfig(arxiv_url=f"http://127.0.0.1:{api_port}/api", arxiv_delay=0, backoff=0)
    try:
        async with open_session(cfg) as session:
            fetch = open_fetch(
                parse_source("arxiv:cs.LG"), session, cfg, now=NOW, sleep=time_.sleep,
                clock=time_.clock,
            )  # fmt: skip
            with pytest.raises(
                FetchError, match=r"^arxiv:cs\.LG: refused a redirect to "
            ) as caught:
                await collect(fetch)
    finally:
        await outside.cleanup()
        await inside.cleanup()
    assert f"http://127.0.0.1:{port}/api/query?… (127.0.0.1 is a loopback" in str(caught.value)
    assert len(app[HITS]) == 1 and inside_fake.requests == []


async def test_an_openreview_redirect_to_loopback_is_refused() -> None:
    time_ = FakeTime()
    inside_fake = FakeOpenReview([note("n1", "An internal page", "Internal.")])
    inside, port = await serve(inside_fake.app())
    app = redirecting(lambda request: f"http://127.0.0.1:{port}{request.path_qs}", status=307)
    outside, api_port = await serve(app)
    cfg = FetchConfig(openreview_url=f"http://127.0.0.1:{api_port}", openreview_delay=0, backoff=0)
    venue = parse_source("openreview:ICLR.cc/2025/Conference")
    try:
        async with open_session(cfg) as session:
            fetch = open_fetch(venue, session, cfg, sleep=time_.sleep, clock=time_.clock)
            with pytest.raises(FetchError, match=r"^openreview:ICLR\.cc/2025/Conference: refused"):
                await collect(fetch)
    finally:
        await outside.cleanup()
        await inside.cleanup()
    assert len(app[HITS]) == 1 and inside_fake.requests == []


async def test_a_rebinding_name_is_connected_to_at_the_address_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The name answers a public address first and loopback the second time: the check
    and the connection use one lookup, so the public address is what is connected to (it
    does not answer here), and the retry's lookup, loopback, is refused. A check that
    looked the name up on its own, before aiohttp's lookup, would have let aiohttp
    connect to 127.0.0.1."""
    connects: list[tuple[str, int]] = []
    guarded = socket.socket.connect  # the suite's no-network guard

    def recording(self: socket.socket, address: object) -> object:
        assert isinstance(address, tuple)
        connects.append((address[0], address[1]))
        if not ipaddress.ip_address(address[0]).is_loopback:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused by the test")
        return guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", recording)
    names = NamedHosts({"rebind.example": ["93.184.215.14", "127.0.0.1"]})
    loopback = r"\(127\.0\.0\.1 is a loopback address"
    with (
        feed_servers(lambda port: f"http://rebind.example:{port}/cs.LG.rss") as servers,
        pytest.raises(FetchError, match=loopback),
    ):
        await fetch_feed(servers.feed, resolver=names, attempts=2)
    assert names.lookups == ["rebind.example", "rebind.example"]  # one lookup per attempt
    assert ("93.184.215.14", servers.port) in connects
    assert ("127.0.0.1", servers.port) not in connects
    assert len(servers.hits) == 2 and servers.internal.requests == []


async def test_with_the_opt_out_redirects_are_followed_as_before() -> None:
    """Relative and absolute Locations, the request's headers kept on every hop, the
    final URL in the answer, at most 10 redirects."""
    internal = FakeFeeds()
    inside, port = await serve(internal.app())
    app = web.Application()

    async def hop(request: web.Request) -> web.StreamResponse:
        left = int(request.match_info["left"])
        if left == 0:
            raise web.HTTPPermanentRedirect(f"http://localhost:{port}/cs.LG.rss")
        raise web.HTTPFound(f"{left - 1}")  # relative to /hop/N

    app.router.add_get("/hop/{left}", hop)
    outside, feed_port = await serve(app)
    cfg = FetchConfig(allow_private_redirects=True, attempts=1)
    try:
        async with open_session(cfg) as session:
            client = PoliteClient(session, cfg, source="feed:test", delay=0)
            answer = await client.request(
                f"http://127.0.0.1:{feed_port}/hop/9", lambda a: a, headers={"Accept": "x/y"}
            )
            assert (answer.status, answer.url) == (200, f"http://localhost:{port}/cs.LG.rss")
            assert internal.requests[0]["Accept"] == "x/y"
            assert internal.requests[0]["User-Agent"].startswith("Paperboy/")
            with pytest.raises(FetchError, match=r"^feed:test: too many redirects from 127\."):
                await client.request(f"http://127.0.0.1:{feed_port}/hop/10", lambda a: a)
    finally:
        await outside.cleanup()
        await inside.cleanup()
    assert len(internal.requests) == 1


def test_the_setting(settings) -> None:  # type: ignore[no-untyped-def]
    from bot.fetching.store import fetch_config
    from config.settings import SettingsError, load_settings

    assert not fetch_config(settings).allow_private_redirects
    assert fetch_config(load_settings({OPT_OUT: "1"}, dotenv=None)).allow_private_redirects
    assert not fetch_config(load_settings({OPT_OUT: "no"}, dotenv=None)).allow_private_redirects
    with pytest.raises(SettingsError, match=f"^{OPT_OUT}='maybe' is not valid: must be 1"):
        load_settings({OPT_OUT: "maybe"}, dotenv=None)


async def test_a_malformed_answer_is_one_line_without_the_query_string() -> None:
    """aiohttp's error for an answer it cannot parse carries the URL asked for, query
    string and all (a private feed's token): the error line names the host, never that
    URL, for the source's own URL and for a hop alike."""

    async def malformed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Broken: a\x00b\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(malformed, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    app = redirecting(lambda request: f"http://127.0.0.1:{port}/cs.LG.rss?token=hunter2")
    outside, feed_port = await serve(app)
    try:
        for url, config in (
            (f"http://127.0.0.1:{port}/feed.rss?key=s3cr3t", {}),
            (f"http://127.0.0.1:{feed_port}/feed.rss", {"allow_private_redirects": True}),
        ):
            with pytest.raises(FetchError) as caught:
                await fetch_feed(url, attempts=1, **config)
            text = str(caught.value)
            assert f": connection to 127.0.0.1:{port} failed (" in text, text
            assert "s3cr3t" not in text and "hunter2" not in text and "url=" not in text, text
            assert "\n" not in text
    finally:
        await outside.cleanup()
        server.close()
        await server.wait_closed()


async def test_a_malformed_api_url_fails_the_fetch_in_one_line() -> None:
    """PAPERBOY_OPENREVIEW_URL passes the settings' check with a port out of range; the
    fetch fails with a FetchError (not retried), as any other unusable URL does."""
    time_ = FakeTime()
    cfg = FetchConfig(openreview_url="http://127.0.0.1:99999", backoff=0)
    venue = parse_source("openreview:ICLR.cc/2025/Conference")
    async with open_session(cfg) as session:
        fetch = open_fetch(venue, session, cfg, sleep=time_.sleep, clock=time_.clock)
        with pytest.raises(FetchError) as caught:
            await collect(fetch)
    assert str(caught.value) == (
        "openreview:ICLR.cc/2025/Conference: malformed URL for 127.0.0.1:99999 "
        "(Port out of range 0-65535)"
    )
    assert time_.sleeps == []


class AllAtOnce(AbstractResolver):
    """A resolver answering all of a name's addresses in one lookup, as getaddrinfo does
    for a name with several records; `before` runs before each answer (to pace a test)."""

    def __init__(
        self, table: dict[str, list[str]], before: Callable[[str], Awaitable[None]] | None = None
    ) -> None:
        self.table = table
        self.before = before
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups.append(host)
        if self.before is not None:
            await self.before(host)
        return [
            ResolveResult(
                hostname=host, host=address, port=port, proto=0, flags=0,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
            )
            for address in self.table[host]
        ]  # fmt: skip

    async def close(self) -> None:
        pass


async def test_a_name_with_a_public_and_a_loopback_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every address of the answer is checked, not the first: the connector tries them in
    turn (happy eyeballs), so a public address that does not answer would hand the
    connection to the loopback one."""
    connects: list[str] = []
    guarded = socket.socket.connect

    def recording(self: socket.socket, address: object) -> object:
        assert isinstance(address, tuple)
        connects.append(address[0])
        if not ipaddress.ip_address(address[0]).is_loopback:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused by the test")
        return guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", recording)
    names = AllAtOnce({"mixed.example": ["93.184.215.14", "127.0.0.1"]})
    with (
        feed_servers(lambda port: f"http://mixed.example:{port}/cs.LG.rss") as servers,
        pytest.raises(FetchError, match=r"\(127\.0\.0\.1 is a loopback address; "),
    ):
        await fetch_feed(servers.feed, resolver=names, attempts=1)
    assert names.lookups == ["mixed.example"]
    assert connects == ["127.0.0.1"]  # the feed's own host only
    assert len(servers.hits) == 1 and servers.internal.requests == []


async def test_two_sources_fetched_at_once_keep_their_own_checks() -> None:
    """One session, two fetches at once: A's own URL (a name on loopback: the operator
    named it) is looked up while B is inside its hop's check. A is read; B's hop to a
    name on loopback is refused. A check switched on for the whole session, not for B's
    request alone, would refuse A too."""
    b_in_hop, a_looked_up = asyncio.Event(), asyncio.Event()

    async def pace(host: str) -> None:
        if host == "a.example":  # answers while B's hop lookup is under way
            await b_in_hop.wait()
            a_looked_up.set()
        else:
            b_in_hop.set()
            await a_looked_up.wait()

    internal = FakeFeeds()
    inside, port = await serve(internal.app())
    app = redirecting(lambda request: f"http://b.example:{port}/cs.LG.rss")
    outside, feed_port = await serve(app)
    names = AllAtOnce({"a.example": ["127.0.0.1"], "b.example": ["127.0.0.1"]}, before=pace)
    cfg = FetchConfig(resolver=names, attempts=1, timeout=10)
    time_ = FakeTime()
    try:
        async with open_session(cfg) as session:

            async def read(url: str) -> int:
                fetch = open_fetch(
                    parse_source(f"feed:{url}"), session, cfg, sleep=time_.sleep, clock=time_.clock
                )
                return len((await collect(fetch))[0])

            a, b = await asyncio.gather(
                read(f"http://a.example:{port}/cs.LG.rss"),
                read(f"http://127.0.0.1:{feed_port}/feed.rss"),
                return_exceptions=True,
            )
    finally:
        await outside.cleanup()
        await inside.cleanup()
    assert a == 2
    assert isinstance(b, FetchError) and "(127.0.0.1 is a loopback address; " in str(b)
    assert sorted(names.lookups) == ["a.example", "b.example"]
    assert [r["path"] for r in internal.requests] == ["/cs.LG.rss"]  # A's, not B's


async def test_every_hop_of_a_chain_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first hop leads to a public host (played by loopback here: connections to its
    address land on 127.0.0.1), which redirects on to a name on loopback: refused there."""
    public = "93.184.215.14"
    guarded = socket.socket.connect

    def landing(self: socket.socket, address: object) -> object:
        assert isinstance(address, tuple)
        if address[0] == public:
            address = ("127.0.0.1", *address[1:])
        return guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", landing)
    names = NamedHosts({"mirror.example": [public], "intranet.example": ["127.0.0.1"]})

    def onward(port: int) -> Callable[[web.Request], str]:
        def location(request: web.Request) -> str:
            if request.path == "/feed.rss":
                return f"http://mirror.example:{request.url.port}/step"
            return f"http://intranet.example:{port}/cs.LG.rss"

        return location

    internal = FakeFeeds()
    inside, port = await serve(internal.app())
    app = redirecting(onward(port))
    outside, feed_port = await serve(app)
    try:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(f"http://127.0.0.1:{feed_port}/feed.rss", resolver=names, attempts=1)
    finally:
        await outside.cleanup()
        await inside.cleanup()
    assert str(caught.value).endswith(
        f": refused a redirect to http://intranet.example:{port}/cs.LG.rss (127.0.0.1 is a "
        f"loopback address; {OPT_OUT}=1 allows it)"
    )
    assert app[HITS] == ["/feed.rss", "/step"] and internal.requests == []


@pytest.mark.parametrize("host", ["feeds..example", "." + "a" * 64 + ".example"])
async def test_a_redirect_to_a_host_name_no_lookup_takes_is_one_line(host: str) -> None:
    """An empty or over-long label: getaddrinfo refuses it with a UnicodeError, no OSError,
    which nothing turned into a FetchError ('unexpected failure' for the source)."""
    app = redirecting(lambda request: f"http://{host}/cs.LG.rss")
    outside, feed_port = await serve(app)
    try:
        for allowed in (False, True):
            with pytest.raises(FetchError) as caught:
                await fetch_feed(
                    f"http://127.0.0.1:{feed_port}/feed.rss", attempts=3,
                    allow_private_redirects=allowed,
                )  # fmt: skip
            assert str(caught.value).endswith(
                f": 127.0.0.1:{feed_port} redirected to a malformed URL"
            )
    finally:
        await outside.cleanup()
    assert len(app[HITS]) == 2  # not retried
