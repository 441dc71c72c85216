"""Redirects between hosts with public addresses are still followed, with the redirect
guard on: two hosts on public addresses inside a network namespace of their own (no
route off it), so a test can reach them. Needs root and iproute2; skipped otherwise."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

ROOT = Path(__file__).resolve().parents[3]
FEED_HOST = "93.184.215.14"
PAPERS_HOST = "93.184.216.34"  # also reached by the name papers.example


def test_redirects_between_public_hosts_are_followed() -> None:
    """A chain of 301 (relative), 307 (to a name) and 308 (to an IP literal) across two
    public hosts is followed to the feed, its papers read, the final URL in the answer;
    in the same namespace a redirect to its loopback is still refused."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 (ip netns) to serve on public addresses")
    namespace = f"paperboy-test-{os.getpid()}-{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", namespace], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace: {made.stderr.strip()}")
    try:
        for args in (
            ["link", "set", "lo", "up"],
            ["addr", "add", f"{FEED_HOST}/32", "dev", "lo"],
            ["addr", "add", f"{PAPERS_HOST}/32", "dev", "lo"],
        ):
            subprocess.run(["ip", "-n", namespace, *args], check=True, capture_output=True)
        code = "from tests.bot.fetching.test_redirects_netns import child; child()"
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["papers"] == 2
    assert seen["status"] == 200
    assert seen["url"] == f"http://{PAPERS_HOST}:{seen['papers_port']}/cs.LG.rss"
    assert seen["lookups"] == ["papers.example", "papers.example"]  # once a fetch
    assert seen["paths"] == ["/step", "/cs.LG.rss", "/step", "/cs.LG.rss"]
    assert seen["refused"] == (
        f"feed:http://{FEED_HOST}:{seen['feed_port']}/to-loopback.rss: refused a redirect to "
        f"http://127.0.0.1:{seen['loopback_port']}/cs.LG.rss (127.0.0.1 is a loopback address; "
        "PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS=1 allows it)"
    )
    assert seen["loopback_requests"] == 0


def child() -> None:
    """Run in the namespace: serve, fetch, print what happened as one JSON line."""
    print(json.dumps(asyncio.run(_serve_and_fetch())))


async def _site(app: web.Application, host: str) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


async def _serve_and_fetch() -> dict[str, Any]:
    from bot.fetching import FetchConfig, FetchError, collect, open_fetch, open_session
    from bot.fetching.client import PoliteClient
    from digests.sources.spec import parse_source
    from tests.fakes.feeds import FakeFeeds
    from tests.fakes.fetch_time import FakeTime
    from tests.fakes.named_hosts import NamedHosts

    papers_feeds, loopback_feeds = FakeFeeds(), FakeFeeds()
    papers_app = papers_feeds.app()
    ports: dict[str, int] = {}

    async def step(request: web.Request) -> web.StreamResponse:
        papers_feeds.requests.append({"path": request.path})
        raise web.HTTPPermanentRedirect(f"http://{PAPERS_HOST}:{ports['papers']}/cs.LG.rss")

    papers_app.router.add_get("/step", step)
    feed_app = web.Application()

    async def start(request: web.Request) -> web.StreamResponse:
        raise web.HTTPMovedPermanently("moved.rss")

    async def moved(request: web.Request) -> web.StreamResponse:
        raise web.HTTPTemporaryRedirect(f"http://papers.example:{ports['papers']}/step")

    async def to_loopback(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"http://127.0.0.1:{ports['loopback']}/cs.LG.rss")

    feed_app.router.add_get("/start.rss", start)
    feed_app.router.add_get("/moved.rss", moved)
    feed_app.router.add_get("/to-loopback.rss", to_loopback)
    runners = []
    for name, app, host in (
        ("papers", papers_app, PAPERS_HOST),
        ("feed", feed_app, FEED_HOST),
        ("loopback", loopback_feeds.app(), "127.0.0.1"),
    ):
        runner, ports[name] = await _site(app, host)
        runners.append(runner)
    names = NamedHosts({"papers.example": [PAPERS_HOST]})
    config = FetchConfig(resolver=names, attempts=1)
    feed = f"http://{FEED_HOST}:{ports['feed']}"
    time_ = FakeTime()
    try:
        async with open_session(config) as session:
            spec = parse_source(f"feed:{feed}/start.rss")
            fetch = open_fetch(spec, session, config, sleep=time_.sleep, clock=time_.clock)
            papers, _ = await collect(fetch)
            client = PoliteClient(session, config, source=spec.name, delay=0)
            answer = await client.request(f"{feed}/start.rss", lambda a: a)
            refused = ""
            try:
                spec = parse_source(f"feed:{feed}/to-loopback.rss")
                await collect(open_fetch(spec, session, config))
            except FetchError as exc:
                refused = str(exc)
    finally:
        for runner in runners:
            await runner.cleanup()
    return {
        "papers": len(papers),
        "status": answer.status,
        "url": answer.url,
        "lookups": names.lookups,
        "paths": [r["path"] for r in papers_feeds.requests],
        "refused": refused,
        "loopback_requests": len(loopback_feeds.requests),
        "feed_port": ports["feed"],
        "papers_port": ports["papers"],
        "loopback_port": ports["loopback"],
    }
