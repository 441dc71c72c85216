"""A local fake of Slack: the Web API, response_url, and a Socket Mode websocket.

Point the real slack_sdk client at `fake.api_url` (its `base_url`). Every call is
recorded in `fake.calls`; `fake.queue(method, ...)` makes the next call to a method
answer with an error, a 429 and Retry-After, or anything else; `fake.drop(method)` makes
calls to it read and record the request, then close the connection without answering.
With `limits` (a `RateLimits`), `chat.postMessage` is limited per channel and
workspace-wide as Slack does it, and a post over the limit is answered as Slack answers
it: HTTP 429, `{"ok": false, "error": "ratelimited"}` and `Retry-After` in whole seconds.
`limited` lists the posts refused so; `accepted()` the ones that were posted.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

from tests.fakes.rate_limits import RateLimits
from tests.fakes.server import serve


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str | None


@dataclass
class FakeSlack:
    calls: list[Call] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)  # posts to response_url
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    admins: set[str] = field(default_factory=set)
    _queued: dict[str, deque[tuple[int, dict[str, Any], dict[str, str]]]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    _ts: int = 1_700_000_000
    _dropping: dict[str, int | None] = field(default_factory=dict)  # method: times left
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    _socket_open: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    port: int = 0
    limits: RateLimits | None = None
    limited: list[Call] = field(default_factory=list)  # posts refused by `limits`

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"http://127.0.0.1:{self.port}/respond/{name}"

    def queue(
        self,
        method: str,
        body: dict[str, Any],
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._queued[method].append((status, body, headers or {}))

    def drop(self, method: str, times: int | None = None) -> None:
        """Read, record, then drop the connection for the next `times` calls (None: all)."""
        self._dropping[method] = times

    def posted(self, method: str = "chat.postMessage") -> list[dict[str, Any]]:
        return [call.args for call in self.calls if call.method == method]

    def accepted(self) -> list[dict[str, Any]]:
        """The `chat.postMessage` calls that posted a message (not refused with a 429)."""
        refused = {id(call) for call in self.limited}
        return [
            call.args
            for call in self.calls
            if call.method == "chat.postMessage" and id(call) not in refused
        ]

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_get("/socket", self._socket)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        for socket in self._sockets:
            await socket.close()
        if self._runner:
            await self._runner.cleanup()

    async def _args(self, request: web.Request) -> dict[str, Any]:
        if request.method == "GET":
            return dict(request.query)
        raw = await request.text()
        if request.content_type == "application/json":
            return json.loads(raw or "{}")
        return dict(parse_qsl(raw))

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._args(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or None
        self.calls.append(Call(method, args, token))
        if method in self._dropping:
            left = self._dropping[method]
            if left is not None:
                if left <= 1:
                    del self._dropping[method]
                else:
                    self._dropping[method] = left - 1
            assert request.transport is not None
            request.transport.close()  # the request arrived; its answer never will
            return web.Response()
        if self._queued[method]:
            status, body, headers = self._queued[method].popleft()
            return web.json_response(body, status=status, headers=headers)
        if method == "chat.postMessage" and self.limits is not None:
            verdict = self.limits.admit(str(args.get("channel")))
            if not verdict.ok:
                self.limited.append(self.calls[-1])
                return web.json_response(
                    {"ok": False, "error": "ratelimited"},
                    status=429,
                    headers={"Retry-After": str(max(1, math.ceil(verdict.retry_after)))},
                )
        return web.json_response(self._default(method, args))

    def _default(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "user_id": "UBOT",
                "team_id": "T0001",
                "bot_id": "B0001",
                "user": "paperboy",
            }
        if method == "chat.postMessage":
            self._ts += 1
            return {"ok": True, "channel": args.get("channel"), "ts": f"{self._ts}.000100"}
        if method == "users.info":
            user = args.get("user")
            return {"ok": True, "user": {"id": user, "is_admin": user in self.admins}}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}
        return {"ok": False, "error": "unknown_method"}

    async def _respond(self, request: web.Request) -> web.Response:
        self.responses.append(await self._args(request))
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {},
                "connection_info": {"app_id": "A0001"},
            }
        )
        self._socket_open.set()
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                self.socket_acks.append(json.loads(message.data))
        return socket

    async def send_envelope(self, envelope: dict[str, Any]) -> None:
        """Push a Socket Mode envelope to the connected app."""
        await asyncio.wait_for(self._socket_open.wait(), 10)
        await self._sockets[-1].send_json(envelope)
