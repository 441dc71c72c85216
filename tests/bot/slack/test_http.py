"""Paperboy's own Slack HTTP endpoint under bad traffic.

Loopback only: raw sockets for what aiohttp's client will not send (slow headers,
garbage), aiohttp for the rest. No test here is timed; the load goals are in
bench/slack_load.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.slack import app as slack_app
from bot.slack import endpoint as slack_endpoint
from bot.slack import verify
from bot.slack.app import WORKING
from bot.slack.http import Limits
from db import open_db
from db.channels import active_subscriptions
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    SIGNING_SECRET,
    HttpClient,
    make_services,
    signed_headers,
    slash_body,
    start_http,
)
from tests.fakes.waiting import eventually

CHANNEL = "slack:T0001/C0001"


Serve = Callable[..., Awaitable[HttpClient]]
Held = tuple[threading.Event, list[str]]


@pytest.fixture
async def serve(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack):  # type: ignore[no-untyped-def]
    """`await serve(ack_budget=..., limits=..., **env)`: the endpoint with those settings
    on a fresh store; every one started is closed after the test."""
    started: list[HttpClient] = []

    async def start(
        ack_budget: float = 2.0, limits: Limits | None = None, **env: str
    ) -> HttpClient:
        services = make_services(tmp_path, seed_paths, catalog, fake_slack, **env)
        started.append(await start_http(services, fake_slack, ack_budget, limits))
        return started[-1]

    yield start
    for client in started:
        await client.close()


@pytest.fixture
async def http(serve: Serve) -> HttpClient:
    return await serve()


@pytest.fixture
def held(serve: Serve, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Every command waits for the returned event (set when the test ends, before the
    servers close: this fixture depends on `serve`); the list records what ran."""
    release, ran = threading.Event(), []
    real_handle = slack_app.handle

    def holding(text: str, ctx: Any) -> Any:
        ran.append(text)
        release.wait(30)
        return real_handle(text, ctx)

    monkeypatch.setattr(slack_app, "handle", holding)
    yield release, ran
    release.set()


def subscriptions(client: HttpClient) -> list[str]:
    db = open_db(client.services.db_path)
    return [row["topic_id"] for row in active_subscriptions(db, CHANNEL)]


async def raw(port: int, data: bytes, *, read: bool = True) -> bytes:
    """Send bytes over a fresh connection; what the server answers before closing."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 20) if read else b""
    writer.close()
    return answer


def request_bytes(body: bytes, headers: dict[str, str]) -> bytes:
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (
        f"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n{head}\r\n"
    ).encode() + body


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


# The signature is checked on the raw body, before any parsing; bodies are capped.


async def test_an_unsigned_body_is_refused_before_it_is_parsed(
    http: HttpClient,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    parsed: list[str] = []
    hmacs: list[bytes] = []
    real_sign = verify.sign
    monkeypatch.setattr(slack_endpoint.json, "loads", lambda s, **k: parsed.append(s) or {})
    monkeypatch.setattr(slack_endpoint, "parse_qsl", lambda *a, **k: parsed.append("form") or [])
    monkeypatch.setattr(verify, "sign", lambda *a: hmacs.append(a[2]) or real_sign(*a))
    nested = "[" * 8_000 + "]" * 8_000  # 48 KB once form-encoded: under the body cap
    body = urlencode({"payload": nested})
    headers = signed_headers(body, secret="0" * 32)
    response = await http.post("/slack/events", data=body, headers=headers)
    assert response.status == 401
    assert parsed == [] and len(hmacs) == 1  # one HMAC, nothing parsed
    no_tracebacks(caplog)


async def test_a_body_over_the_cap_is_refused_unread(serve: Serve, fake_slack: FakeSlack) -> None:
    client = await serve(limits=Limits(max_body=1000))
    # Announce 900 KB but send none of it: the answer comes at once, unread.
    head = (
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n\r\n"
    )
    answer = await raw(client.server.port, head)
    assert answer.startswith(b"HTTP/1.1 413 ")
    body = slash_body("topics", fake_slack.response_url())
    ok = await client.post("/slack/events", data=body, headers=signed_headers(body))
    assert ok.status == 200


def test_a_signature_check_costs_at_most_one_hmac(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = verify.sign
    monkeypatch.setattr(verify, "sign", lambda *a: calls.append(1) or real(*a))
    secret, now = SIGNING_SECRET.encode(), time.time()
    stamp = str(int(now)).encode()
    good = verify.sign(secret, stamp, b"body").encode()
    calls.clear()
    assert verify.check(secret, stamp, good, b"body", now) is None
    assert verify.check(secret, stamp, good, b"other", now) == "signature mismatch"
    assert verify.check(secret, b"12x", good, b"body", now) == "missing or malformed timestamp"
    assert verify.check(secret, None, good, b"body", now) == "missing or malformed timestamp"
    assert verify.check(secret, b"9" * 40, good, b"body", now) == "missing or malformed timestamp"
    assert verify.check(secret, stamp, b"v0=zz", b"body", now) == "missing or malformed signature"
    old = str(int(now) - 301).encode()
    assert verify.check(secret, old, good, b"body", now) == "timestamp more than 5 minutes away"
    for odd in (b"+" + stamp, b"-" + stamp, stamp + b".0", b"1e9", "١٧٠٠".encode(), b"0x10"):
        assert verify.check(secret, odd, good, b"body", now) == "missing or malformed timestamp"
    for odd in (good[3:], good.upper(), good + b" ", b"v1=" + good[3:], good[:-1]):
        assert verify.check(secret, stamp, odd, b"body", now) == "missing or malformed signature"
    assert len(calls) == 2  # only the two with well-formed, fresh headers


# Malformed requests get 401 unsigned, 400 signed, never 500 or a traceback.


@pytest.mark.parametrize(
    ("body", "timestamp"),
    [
        (b"text=help&command=/papers", "not-a-number"),
        (b"\xff\xfe\x00garbage", None),
        (b'payload={"type": "block_actions", "actions": [', None),
        (b"", None),
    ],
)
async def test_unsigned_malformed_requests_get_401(
    http: HttpClient, caplog: pytest.LogCaptureFixture, body: bytes, timestamp: str | None
) -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    headers["X-Slack-Request-Timestamp"] = timestamp or str(int(time.time()))
    headers["X-Slack-Signature"] = "v0=" + "0" * 64
    answer = await raw(http.server.port, request_bytes(body, headers))
    assert answer.startswith(b"HTTP/1.1 401 ")
    no_tracebacks(caplog)


BLOCK_ACTIONS = json.dumps(
    {"type": "block_actions", "actions": [], "team": {"id": "T0001"}, "user": {"id": "U0001"}}
)
# Another app's button: an action id Paperboy does not know is acknowledged and ignored,
# a click without actions is malformed.
OTHER_ACTION = json.dumps(
    {
        "type": "block_actions",
        "actions": [{"action_id": "someone_else", "type": "button", "value": "1"}],
        "team": {"id": "T0001"},
        "user": {"id": "U0001"},
    }
)


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"\xff\xfe\x00garbage", "application/x-www-form-urlencoded", 400),
        (b"payload=%7Bnot+json", "application/x-www-form-urlencoded", 400),
        (b"payload=" + b"%5B" * 5000 + b"%5D" * 5000, "application/x-www-form-urlencoded", 400),
        (b"payload=%5B1%2C2%5D", "application/x-www-form-urlencoded", 400),
        (b"{not json", "application/json", 400),
        (b"text=help", "application/x-www-form-urlencoded", 400),
        (b"command=/papers&text=help", "application/x-www-form-urlencoded", 400),
        (b"a=1", "text/plain", 400),
        (urlencode({"payload": BLOCK_ACTIONS}).encode(), "application/x-www-form-urlencoded", 400),
        (urlencode({"payload": OTHER_ACTION}).encode(), "application/x-www-form-urlencoded", 200),
        (b'{"type": "event_callback", "event": {}}', "application/json", 200),
    ],
)
async def test_signed_malformed_requests_get_400(
    http: HttpClient,
    caplog: pytest.LogCaptureFixture,
    body: bytes,
    content_type: str,
    status: int,
) -> None:
    headers = signed_headers(body.decode("latin-1"))
    headers["Content-Type"] = content_type
    # signed_headers signs text; sign the exact bytes instead.
    stamp = headers["X-Slack-Request-Timestamp"]
    headers["X-Slack-Signature"] = verify.sign(SIGNING_SECRET.encode(), stamp.encode(), body)
    answer = await raw(http.server.port, request_bytes(body, headers))
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:60]
    assert http.endpoint.commands_run == 0
    no_tracebacks(caplog)


async def test_url_verification_gets_its_challenge(http: HttpClient) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "t"})
    headers = {**signed_headers(body), "Content-Type": "application/json"}
    response = await http.post("/slack/events", data=body, headers=headers)
    assert response.status == 200 and await response.json() == {"challenge": "abc123"}


async def test_malformed_http_gets_400_and_other_paths_404(http: HttpClient) -> None:
    port = http.server.port
    assert (await raw(port, b"GARBAGE\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
    assert (await raw(port, b"POST /slack/events HTTP/1.1\r\nbad header\r\n\r\n")).startswith(
        b"HTTP/1.1 400 "
    )
    chunked = b"POST /slack/events HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    assert (await raw(port, chunked)).startswith(b"HTTP/1.1 411 ")
    assert (await raw(port, b"GET /slack/events HTTP/1.1\r\nConnection: close\r\n\r\n")).startswith(
        b"HTTP/1.1 405 "
    )
    assert (await raw(port, b"GET /admin HTTP/1.1\r\nConnection: close\r\n\r\n")).startswith(
        b"HTTP/1.1 404 "
    )


# Header and body deadlines, and a connection cap that slow clients cannot fill.


async def test_slow_headers_and_bodies_are_cut_off(serve: Serve, fake_slack: FakeSlack) -> None:
    # The body test's headers must arrive within the header timeout: 2 s, for a loaded
    # machine; the body never arrives, so its deadline can be short.
    limits = Limits(header_timeout=2.0, body_timeout=0.3)
    client = await serve(limits=limits)
    # Headers that never end: the server closes the connection, answering nothing.
    answer = await raw(client.server.port, b"POST /slack/events HTTP/1.1\r\nX-A: 1\r\n")
    assert answer == b""
    # A body that never comes: 408.
    head = b"POST /slack/events HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc"
    assert (await raw(client.server.port, head)).startswith(b"HTTP/1.1 408 ")
    assert await eventually(lambda: client.server.open_connections == 0)


async def test_at_the_connection_cap_slow_clients_make_room(
    serve: Serve, fake_slack: FakeSlack
) -> None:
    client = await serve(limits=Limits(max_connections=8))
    port = client.server.port
    loris = []
    try:
        for _ in range(40):  # five times the cap, each sending half a request line
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /slack/ev")
            loris.append(writer)
        assert await eventually(lambda: client.server.evicted >= 32)
        assert client.server.open_connections <= 8
        body = slash_body("subscribe offline-rl", fake_slack.response_url())
        response = await client.post("/slack/events", data=body, headers=signed_headers(body))
        assert response.status == 200
        assert subscriptions(client) == ["offline-rl"]
    finally:
        for writer in loris:
            writer.close()


# A replayed signed request is answered 200 and has no effect.


async def test_a_replay_is_answered_and_runs_nothing(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    subscribe = slash_body("subscribe offline-rl", fake_slack.response_url())
    captured = signed_headers(subscribe)
    first = await http.post("/slack/events", data=subscribe, headers=captured)
    assert first.status == 200
    unsubscribe = slash_body("unsubscribe offline-rl", fake_slack.response_url())
    await http.post("/slack/events", data=unsubscribe, headers=signed_headers(unsubscribe))
    assert subscriptions(http) == []
    replayed = await http.post("/slack/events", data=subscribe, headers=captured)
    assert replayed.status == 200 and await replayed.read() == b""
    assert subscriptions(http) == []  # the replay did not subscribe again
    assert http.endpoint.commands_run == 2


def test_replay_memory_forgets_what_can_no_longer_be_replayed() -> None:
    memory = verify.ReplayMemory(size=3, window=300)
    assert memory.first_time(b"a", 1000, now=1000)
    assert not memory.first_time(b"a", 1000, now=1200)
    assert memory.first_time(b"b", 1000, now=1200)
    assert memory.first_time(b"c", 1400, now=1400)  # a and b have expired by now
    assert len(memory) == 1
    for name in (b"d", b"e", b"f", b"g"):
        memory.first_time(name, 1400, now=1400)
    assert len(memory) == 3  # bounded


# Acknowledged within the budget, never a 404, each command run exactly once.


async def test_many_concurrent_commands_all_get_200_and_run_once(
    serve: Serve,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []
    real_handle = slack_app.handle

    def counting(text: str, ctx: Any) -> Any:
        ran.append(text)
        return real_handle(text, ctx)

    monkeypatch.setattr(slack_app, "handle", counting)
    # A tiny budget, so that many answers go through response_url after "Working on it…".
    client = await serve(ack_budget=0.01)
    texts = [f"find policy {n}" for n in range(200)]

    async def one(text: str) -> tuple[int, dict[str, Any]]:
        body = slash_body(text, fake_slack.response_url(f"r{text.split()[-1]}"))
        response = await client.post("/slack/events", data=body, headers=signed_headers(body))
        return response.status, await response.json()

    answers = await asyncio.gather(*(one(text) for text in texts))
    assert [status for status, _ in answers] == [200] * 200
    working = sum(1 for _, body in answers if body.get("text") == WORKING)
    assert await eventually(lambda: len(fake_slack.responses) >= working)
    await client.endpoint.close()  # every answer in flight has now reached the fake
    assert sorted(ran) == sorted(texts)  # each exactly once
    assert len(fake_slack.responses) == working


async def test_the_connection_cap_leaves_room_under_the_file_limit(
    http: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.slack import http as slack_http

    monkeypatch.setattr(slack_http.resource, "getrlimit", lambda _: (1024, 4096))
    server = slack_http.HttpServer(http.endpoint, Limits(max_connections=5000), "127.0.0.1")
    await server.start()
    try:
        assert server.limits.max_connections == 1024 - slack_http.FD_RESERVE
    finally:
        await server.stop()


async def test_a_command_acknowledged_late_is_never_404(
    serve: Serve, fake_slack: FakeSlack, held: Held
) -> None:
    """bolt answered 404 "unhandled request" when its ack came after 3 s, though the
    command went on to run. A budget past 3 s makes that happen without load."""
    release, ran = held
    client = await serve(ack_budget=3.2)
    body = slash_body("subscribe offline-rl", fake_slack.response_url())
    response = await client.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 200 and (await response.json())["text"] == WORKING
    release.set()
    assert await eventually(lambda: fake_slack.responses)
    assert "subscribed this channel" in fake_slack.responses[0]["text"]
    assert ran == ["subscribe offline-rl"]


async def test_a_command_that_must_queue_is_acknowledged_at_once(
    serve: Serve, fake_slack: FakeSlack, held: Held
) -> None:
    release, ran = held
    client = await serve(ack_budget=60)
    first = [slash_body(f"find policy {n}", fake_slack.response_url(f"r{n}")) for n in (1, 2)]
    busy = [
        asyncio.ensure_future(client.post("/slack/events", data=body, headers=signed_headers(body)))
        for body in first
    ]
    assert await eventually(lambda: len(ran) == 2)  # both threads are now taken
    body = slash_body("topics", fake_slack.response_url("r3"))
    # Its answer cannot be ready, and the budget is 60 s: only "at once" ends this.
    third = await asyncio.wait_for(
        client.post("/slack/events", data=body, headers=signed_headers(body)), 20
    )
    assert (await third.json())["text"] == WORKING
    release.set()
    for response in await asyncio.gather(*busy):
        assert "Top" in (await response.json())["text"]
    assert await eventually(lambda: len(fake_slack.responses) == 1)
    assert sorted(ran) == ["find policy 1", "find policy 2", "topics"]


async def test_a_taken_port_is_one_line_at_start_up(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    from bot.runner import SlackComponent
    from config.settings import SettingsError

    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        component = SlackComponent(services, http=True, port=port)
        with pytest.raises(SettingsError) as caught:
            await component.start()
        await component.stop()
    assert str(caught.value).startswith(f"cannot listen on port {port} (")
    assert str(caught.value).endswith("choose another with --port")


@pytest.mark.parametrize("signed", [True, False])
async def test_slacks_certificate_check_gets_200(http: HttpClient, signed: bool) -> None:
    body = "ssl_check=1&token=legacy-verification-token"
    headers = (
        signed_headers(body) if signed else {"Content-Type": "application/x-www-form-urlencoded"}
    )
    response = await http.post("/slack/events", data=body, headers=headers)
    assert response.status == 200 and await response.read() == b""
    assert http.endpoint.commands_run == 0


# Smuggling, eviction order, where answers may go.


@pytest.mark.parametrize(
    "header",
    [b"X-A: a\nContent-Length: 45", b"X-A: a\rContent-Length: 45", b"X-A: a\x00b"],
)
async def test_a_header_with_a_bare_line_break_or_control_is_refused(
    http: HttpClient, header: bytes
) -> None:
    """A proxy in front that takes a bare LF (or CR) for a line end would see a
    Content-Length this server would not (reading the line as one X-A value): the two
    disagree on where the request ends, and the 45 bytes become a smuggled request."""
    smuggled = b"GET /admin HTTP/1.1\r\nConnection: close\r\n\r\n"
    data = b"POST /slack/events HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n" + smuggled
    answer = await raw(http.server.port, data)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert answer.count(b"HTTP/1.1 ") == 1  # nothing after it was read as a request


async def test_connection_close_among_other_options_closes(http: HttpClient) -> None:
    data = b"GET /slack/events HTTP/1.1\r\nHost: x\r\nConnection: TE, close\r\n\r\n"
    answer = await asyncio.wait_for(raw(http.server.port, data), 5)  # not the header timeout
    assert answer.startswith(b"HTTP/1.1 405 ") and b"Connection: close\r\n" in answer


async def test_a_keep_alive_connection_starting_a_request_is_not_evicted_first(
    serve: Serve, fake_slack: FakeSlack
) -> None:
    """Eviction does not go by when a connection opened: a proxy's keep-alive connection,
    open the longest, would be the first one evicted at the cap, even mid-way through a
    request that had just begun, before the slow-loris connections opened after it."""
    client = await serve(limits=Limits(max_connections=4))
    port = client.server.port
    reader, proxy = await asyncio.open_connection("127.0.0.1", port)
    loris = []
    try:
        # The proxy's connection: one request answered, kept alive.
        proxy.write(b"GET /admin HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(reader.readuntil(b"not found"), 20)).startswith(
            b"HTTP/1.1 404 "
        )
        for _ in range(3):  # then three slow-loris connections fill the cap
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /slack/ev")
            loris.append(writer)
        assert await eventually(lambda: client.server.open_connections == 4)
        # The proxy starts a genuine request; its body is still on the way.
        body = slash_body("subscribe offline-rl", fake_slack.response_url()).encode()
        request = request_bytes(body, signed_headers(body.decode()))
        proxy.write(request[:-10])
        await proxy.drain()
        mine = proxy.get_extra_info("sockname")[1]

        def youngest() -> int:  # the client port of the connection evicted last
            conns = list(client.server._connections)
            return conns[-1].writer.get_extra_info("peername")[1] if conns else 0

        # The server has seen it begin (not asserted: a server that never reorders fails).
        await eventually(lambda: youngest() == mine)
        _reader, newcomer = await asyncio.open_connection("127.0.0.1", port)
        loris.append(newcomer)
        assert await eventually(lambda: client.server.evicted == 1)
        proxy.write(request[-10:])
        answer = await asyncio.wait_for(reader.read(), 20)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:40]
        assert subscriptions(client) == ["offline-rl"]
    finally:
        proxy.close()
        for writer in loris:
            writer.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "https://hooks.slack.com@evil.example/commands/T1/1/x",
        "https://evil.example\\@hooks.slack.com/commands/T1/1/x",
        "http://hooks.slack.com/commands/T1/1/x",
        "https://hooks.slack.com.evil.example/commands/T1/1/x",
        "https://hooks.slack.com /commands",
        "file:///etc/passwd",
    ],
)
async def test_answers_go_only_to_slack(
    http: HttpClient, fake_slack: FakeSlack, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Any http(s) response_url was taken: a signed request could make Paperboy POST its
    answers to an internal address. Slack's are https://hooks.slack.com/...; tests and
    benchmarks use a fake on SLACK_API_URL's host, which SLACK_API_URL allows explicitly."""
    body = slash_body("topics", url)
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 400
    assert http.endpoint.commands_run == 0
    no_tracebacks(caplog)


def test_slacks_own_response_urls_are_taken() -> None:
    api = "https://slack.com/api/"
    assert slack_endpoint.slack_url("https://hooks.slack.com/commands/T1/2/abc", api)
    assert slack_endpoint.slack_url("https://HOOKS.slack.com/commands/T1/2/abc", api)
    assert slack_endpoint.slack_url("https://hooks.slack-gov.com/commands/T1/2/abc", api)
    assert not slack_endpoint.slack_url("http://127.0.0.1:9/respond/r1", api)
    fake = "http://127.0.0.1:8000/api/"
    assert slack_endpoint.slack_url("http://127.0.0.1:9/respond/r1", fake)
    assert not slack_endpoint.slack_url("https://127.0.0.1:9/respond/r1", fake)
    assert not slack_endpoint.slack_url("http://127.0.0.1:x/respond/r1", fake)


async def send_three_held_commands(
    client: HttpClient, fake_slack: FakeSlack, ran: list[str]
) -> None:
    """Two commands take both threads (held), a third queues; all three are "Working"."""
    bodies = [slash_body(f"find policy {n}", fake_slack.response_url(f"r{n}")) for n in (1, 2, 3)]
    for body in bodies:
        response = await client.post("/slack/events", data=body, headers=signed_headers(body))
        assert (await response.json())["text"] == WORKING
    assert await eventually(lambda: len(ran) == 2)


async def test_a_stop_tells_queued_commands_they_did_not_run(
    serve: Serve, fake_slack: FakeSlack, held: Held
) -> None:
    """A command still queued at a stop is told at once that it did not run: it does not
    run during the answers' grace (or, when the stop is cut short, at interpreter exit),
    its asker left with "Working on it…" and then nothing."""
    release, ran = held
    client = await serve(ack_budget=0.01)
    await send_three_held_commands(client, fake_slack, ran)
    closing = asyncio.ensure_future(client.endpoint.close(grace=20))
    assert await eventually(lambda: fake_slack.responses)  # the queued one, told at once
    assert fake_slack.responses[0]["text"] == slack_endpoint.STOPPED
    release.set()  # the two running ones finish within the grace, and are answered
    await asyncio.wait_for(closing, 30)
    assert sorted(ran) == ["find policy 1", "find policy 2"]
    assert len(fake_slack.responses) == 3
    assert all("Top" in answer["text"] for answer in fake_slack.responses[1:])
    # A command that arrives during the stop is told so, and does not run either.
    body = slash_body("topics", fake_slack.response_url("r4"))
    late = await client.post("/slack/events", data=body, headers=signed_headers(body))
    assert (await late.json())["text"] == slack_endpoint.STOPPED
    assert len(ran) == 2


async def test_a_stop_cut_short_still_cancels_queued_commands(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack, held: Held
) -> None:
    """`paperboy run` gives all parts one stop deadline; when it cuts the Slack part's stop
    short (while the server waits for requests in flight), the pool is still shut down,
    and no queued command runs after the stop."""
    from bot.runner import SlackComponent

    release, ran = held
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    component = SlackComponent(services, http=True, port=0)
    await component.start()
    assert component._http is not None and component._endpoint is not None
    endpoint = component._endpoint
    endpoint.ack_budget = 60  # past what the setting allows, so requests wait for commands
    client = HttpClient(component._http, endpoint)
    bodies = [slash_body(f"find policy {n}", fake_slack.response_url(f"r{n}")) for n in (1, 2, 3)]

    async def post(body: str) -> object:
        return await client.post("/slack/events", data=body, headers=signed_headers(body))

    try:
        # Two commands take both threads; their requests wait for them (a 60 s budget),
        # so the server's stop waits for those requests. A third queues ("Working").
        in_flight = [asyncio.ensure_future(post(body)) for body in bodies[:2]]
        assert await eventually(lambda: len(ran) == 2)
        queued = await post(bodies[2])
        assert (await queued.json())["text"] == WORKING  # type: ignore[attr-defined]
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(component.stop(), 0.5)  # the server's grace is 2 s
        release.set()
        for thread in list(endpoint._executor._threads):
            await asyncio.to_thread(thread.join, 20)
        assert sorted(ran) == ["find policy 1", "find policy 2"]
        await asyncio.gather(*in_flight, return_exceptions=True)
    finally:
        release.set()  # before the stop below, which waits for answers
        await client.session.close()
        await component.stop()


async def test_the_command_queue_is_bounded(
    serve: Serve, fake_slack: FakeSlack, held: Held
) -> None:
    """With both threads stuck (a database locked for long), every further command was
    queued, without a bound on memory or on how late its answer would come."""
    release, ran = held
    client = await serve(ack_budget=0.01)
    client.endpoint.max_queued = 1
    await send_three_held_commands(client, fake_slack, ran)  # two running, one queued
    body = slash_body("subscribe offline-rl", fake_slack.response_url("r4"))
    response = await client.post("/slack/events", data=body, headers=signed_headers(body))
    assert (await response.json())["text"] == slack_endpoint.BUSY
    release.set()
    assert await eventually(lambda: len(fake_slack.responses) == 3)
    assert sorted(ran) == ["find policy 1", "find policy 2", "find policy 3"]
    assert subscriptions(client) == []


async def test_pipelined_and_http_1_0_requests_are_answered_in_order(http: HttpClient) -> None:
    data = (
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /slack/events HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"
        b"GET /b HTTP/1.0\r\n\r\n"  # HTTP/1.0 without keep-alive: the last one
        b"GET /c HTTP/1.1\r\n\r\n"
    )
    answer = await raw(http.server.port, data)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert statuses == [b"404", b"405", b"404"]
    assert answer.endswith(b"Connection: close\r\n\r\nnot found")


async def test_a_request_arriving_during_a_stop_is_answered(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    """A stop does not close every connection that has not sent a whole request: a command
    the proxy is forwarding at a restart would get a reset (Slack: "dispatch_failed")."""
    body = slash_body("topics", fake_slack.response_url()).encode()
    request = request_bytes(body, signed_headers(body.decode()))
    reader, writer = await asyncio.open_connection("127.0.0.1", http.server.port)
    _idle_reader, idle = await asyncio.open_connection("127.0.0.1", http.server.port)
    try:
        writer.write(request[:-10])
        await writer.drain()
        assert await eventually(lambda: any(not conn.idle for conn in http.server._connections))
        stopping = asyncio.ensure_future(http.server.stop(grace=20))
        assert await eventually(lambda: http.server.open_connections == 1)  # idle one closed
        writer.write(request[-10:])
        answer = await asyncio.wait_for(reader.read(), 20)
        assert answer.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in answer
        await asyncio.wait_for(stopping, 20)
    finally:
        writer.close()
        idle.close()


async def test_a_response_is_sent_whole_before_the_connection_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every connection ended with abort(), which drops what the transport still holds:
    behind a proxy that sends "Connection: close" (nginx's default), a large answer to a
    slow or small-buffered peer arrived cut off (60 KB as its first 6 KB)."""
    from bot.slack.http import HttpServer, Request, Response

    size = 60_000

    async def large(request: Request) -> Response:
        return Response(200, b"x" * size)

    real_accept = HttpServer._accept

    async def small_buffers(self: HttpServer, reader: Any, writer: Any) -> None:
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        await real_accept(self, reader, writer)

    monkeypatch.setattr(HttpServer, "_accept", small_buffers)
    server = HttpServer(large, Limits(), "127.0.0.1")
    await server.start()
    peer = socket.socket()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    peer.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(peer, ("127.0.0.1", server.port))
        reader, writer = await asyncio.open_connection(sock=peer)
        writer.write(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 20)
        writer.close()
        assert answer.endswith(b"\r\n\r\n" + b"x" * size), len(answer)
    finally:
        await server.stop()


@pytest.mark.parametrize("part", ["headers", "body"])
async def test_a_trickle_does_not_reset_the_deadlines(serve: Serve, part: str) -> None:
    """The header and body deadlines are totals, not per read: a byte every 50 ms (a
    slow-loris that keeps each read short) is cut off, with 408 once the headers are in."""
    client = await serve(limits=Limits(header_timeout=0.5, body_timeout=0.5))
    head = b"POST /slack/events HTTP/1.1\r\nContent-Length: 400\r\n\r\n"
    reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
    if part == "body":
        writer.write(head)
    trickle = (head if part == "headers" else b"") + b"x" * 400

    async def dribble() -> None:
        for byte in trickle:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)  # 20 s in all: far past either deadline

    dribbling = asyncio.ensure_future(dribble())
    try:
        # With a deadline per read, this would wait for the whole trickle (20 s).
        answer = await asyncio.wait_for(reader.read(), 15)
        if part == "headers":
            assert answer == b""  # closed, nothing answered
        else:
            assert answer.startswith(b"HTTP/1.1 408 ")
    finally:
        dribbling.cancel()
        writer.close()


async def test_an_ack_budget_past_slacks_3_seconds_is_refused_at_start_up(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """PAPERBOY_SLACK_ACK_SECONDS over Slack's 3 s is refused: every slow command would
    get Slack's "failed" while it ran on."""
    from bot.runner import SlackComponent
    from config.settings import SettingsError

    services = make_services(
        tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_SLACK_ACK_SECONDS="5"
    )
    component = SlackComponent(services, http=True, port=0)
    with pytest.raises(SettingsError) as caught:
        await component.start()
    await component.stop()
    assert str(caught.value) == (
        "PAPERBOY_SLACK_ACK_SECONDS=5 is not valid: must be at most 2.5 (Slack waits 3 seconds)"
    )
