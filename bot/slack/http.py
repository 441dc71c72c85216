"""A small HTTP/1.1 server for Slack's requests, with limits that bad traffic cannot pass
(aiohttp's server has no deadline for a request's headers and no connection cap). What a
request means is the handler's business (`bot/slack/endpoint.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import resource
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from config.settings import Settings

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 16 * 1024
FD_RESERVE = 128  # descriptors left for the database, outgoing calls and logs
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_REQUEST_LINE = re.compile(rb"([A-Z]{1,16}) (\S{1,4096}) HTTP/1\.([01])")
# A field value: visible characters, spaces and tabs. A bare CR or LF, a NUL or another
# control character is refused: a proxy in front that takes a bare LF for a line end would
# see a header (say Content-Length) that this server does not, and the two would disagree
# on where a request ends (request smuggling).
_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
REASONS = {
    100: "Continue",
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Limits:
    max_body: int = 64 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    max_connections: int = 1000


def http_limits(settings: Settings) -> Limits:
    return Limits(
        max_body=settings.slack_max_body_bytes,
        header_timeout=settings.slack_header_timeout,
        body_timeout=settings.slack_body_timeout,
        max_connections=settings.slack_max_connections,
    )


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, bytes]  # lower-case names; raw values
    body: bytes
    received: float  # loop time when the headers were complete
    peer: str = ""


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    close: bool = False  # close the connection after this response

    @classmethod
    def json(cls, text: str, status: int = 200) -> Response:
        return cls(status, text.encode(), "application/json; charset=utf-8")

    def encode(self, keep_alive: bool) -> bytes:
        head = (
            f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Status')}\r\n"
            f"Content-Type: {self.content_type}\r\n"
            f"Content-Length: {len(self.body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        )
        return head.encode("ascii") + self.body


class BadRequest(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.response = Response(status, text.encode(), close=True)


Handler = Callable[[Request], Awaitable[Response]]


@dataclass(eq=False)
class _Connection:
    writer: asyncio.StreamWriter
    evictable: bool = True  # not (yet) handling a whole request
    idle: bool = True  # between requests: no byte of the next one yet
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class HttpServer:
    """Serves `handler(Request)` (the raw body) on host:port within `limits`: headers of
    at most `MAX_HEADER_BYTES` within `header_timeout`; a body announced by
    Content-Length (not chunked) of at most `max_body` (413 unread), within
    `body_timeout`; at most `max_connections`, the cap evicting the connection whose
    unfinished request began longest ago (503 when all are busy); a response not read
    within `body_timeout` is dropped. `start()`, then `stop()`."""

    def __init__(self, handler: Handler, limits: Limits, host: str = "0.0.0.0", port: int = 0):
        self.handler = handler
        self.limits = limits
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        # Insertion order: by when each one's current request began (`_restart_age`).
        self._connections: dict[_Connection, None] = {}
        self._closing = False
        self.evicted = 0  # counters, for tests and the benchmark
        self.refused = 0

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    async def start(self) -> int:
        """Listen; returns the port (useful when asked for port 0). The connection cap is
        lowered to leave `FD_RESERVE` descriptors of the process's limit to the rest."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and self.limits.max_connections > soft - FD_RESERVE:
            cap = max(16, soft - FD_RESERVE)
            log.warning(
                "HTTP: %d connections at most, not %d: the open-file limit is %d (ulimit -n)",
                cap,
                self.limits.max_connections,
                soft,
            )
            self.limits = replace(self.limits, max_connections=cap)
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, limit=MAX_HEADER_BYTES, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self, grace: float = 2.0) -> None:
        """Stop listening, close idle connections, give requests in flight (also those
        still arriving: a proxy forwarding them during a restart) `grace` seconds to be
        answered, then close the rest."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            if conn.idle:
                self._drop(conn)
        busy = [conn.task for conn in self._connections if conn.task is not None]
        if busy:
            await asyncio.wait(busy, timeout=grace)
        for conn in list(self._connections):
            self._drop(conn)
            if conn.task is not None:
                conn.task.cancel()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    def _make_room(self) -> bool:
        """At the cap, evict the connection whose unfinished request began longest ago (or
        that is idle longest); False if every connection is busy answering."""
        if len(self._connections) < self.limits.max_connections:
            return True
        for conn in self._connections:
            if conn.evictable:
                self.evicted += 1
                self._drop(conn)
                return True
        return False

    def _restart_age(self, conn: _Connection) -> None:
        """A request has begun on `conn`: its age for eviction counts from now, so a
        proxy's long-lived keep-alive connection that starts a request is not the first
        one evicted."""
        if conn in self._connections:  # not evicted meanwhile
            del self._connections[conn]
            self._connections[conn] = None

    def _drop(self, conn: _Connection) -> None:
        # Its reader then sees end-of-file and its task ends quietly.
        self._connections.pop(conn, None)
        conn.writer.transport.abort()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.transport.abort()
            return
        if not self._make_room():
            self.refused += 1
            log.warning("HTTP: %d connections, all busy; refusing one", len(self._connections))
            writer.write(Response(503, b"busy, try again", close=True).encode(False))
            writer.close()
            return
        conn = _Connection(writer, task=asyncio.current_task())
        self._connections[conn] = None
        try:
            await self._serve(conn, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the peer went away or was too slow: nothing to answer
        finally:
            conn.evictable = True
            try:
                await self._close(writer)
            finally:
                self._connections.pop(conn, None)

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        """Close after what was written has been sent (within `body_timeout`): an abort
        would drop what is still in the transport's buffer for a slow peer."""
        if writer.transport.is_closing():
            writer.transport.abort()  # dropped or evicted: nothing more to send
            return
        writer.close()
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                await writer.wait_closed()
        except (TimeoutError, ConnectionError):
            _abort(writer)  # the peer does not read: give up on it
        except BaseException:
            _abort(writer)  # cancelled (a stop): do not leave it open
            raise

    async def _serve(
        self, conn: _Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        peer_text = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        loop = asyncio.get_running_loop()
        while True:
            conn.evictable = conn.idle = True
            if self._closing:
                return
            try:
                async with asyncio.timeout(self.limits.header_timeout):
                    first = await reader.readexactly(1)
                    conn.idle = False
                    self._restart_age(conn)
                    head = first + await reader.readuntil(b"\r\n\r\n")
                received = loop.time()
            except asyncio.LimitOverrunError:
                await self._reply(writer, BadRequest(431, "headers too large").response, False)
                return
            except asyncio.IncompleteReadError:
                return  # closed between requests, or mid-headers
            try:
                method, path, keep_alive, headers = _parse_head(head)
                length = _content_length(headers, self.limits.max_body)
                if headers.get("expect", b"").lower() == b"100-continue" and length:
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                async with asyncio.timeout(self.limits.body_timeout):
                    body = await reader.readexactly(length) if length else b""
            except BadRequest as bad:
                await self._reply(writer, bad.response, False)
                return
            except TimeoutError:
                await self._reply(writer, Response(408, b"body too slow", close=True), False)
                return
            conn.evictable = False
            request = Request(method, path, headers, body, received, peer_text)
            try:
                response = await self.handler(request)
            except Exception:  # the handler's bug must not become a stack trace to the peer
                log.exception("HTTP: handler failed on %s %s", method, path)
                response = Response(500, b"internal error", close=True)
            keep_alive = keep_alive and not response.close and not self._closing
            await self._reply(writer, response, keep_alive)
            if not keep_alive:
                return

    async def _reply(self, writer: asyncio.StreamWriter, response: Response, keep: bool) -> None:
        writer.write(response.encode(keep))
        async with asyncio.timeout(self.limits.body_timeout):
            await writer.drain()


def _abort(writer: asyncio.StreamWriter) -> None:
    # A transport that finished closing meanwhile has no loop left, and its abort()
    # raises AttributeError: there is nothing left to abort then.
    with contextlib.suppress(AttributeError):
        writer.transport.abort()


def _parse_head(head: bytes) -> tuple[str, str, bool, dict[str, bytes]]:
    """Method, path, keep-alive and headers of a request head. Raises BadRequest."""
    lines = head[:-4].split(b"\r\n")
    match = _REQUEST_LINE.fullmatch(lines[0])
    if not match:
        raise BadRequest(400, "malformed request line")
    method, target, minor = match.groups()
    headers: dict[str, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):  # also refuses obsolete line folding
            raise BadRequest(400, "malformed header")
        value = value.strip(b" \t")
        if not _VALUE.fullmatch(value):
            raise BadRequest(400, "malformed header")
        key = name.decode("ascii").lower()
        if key in headers and key == "content-length" and headers[key] != value:
            raise BadRequest(400, "conflicting Content-Length")
        headers[key] = value
    options = {option.strip() for option in headers.get("connection", b"").lower().split(b",")}
    keep_alive = b"close" not in options if minor == b"1" else b"keep-alive" in options
    path = target.decode("ascii", "replace").split("?", 1)[0]
    return method.decode("ascii"), path, keep_alive, headers


def _content_length(headers: dict[str, bytes], max_body: int) -> int:
    if "transfer-encoding" in headers:
        raise BadRequest(411, "send a Content-Length, not a chunked body")
    raw = headers.get("content-length")
    if raw is None:
        return 0
    if not re.fullmatch(rb"\d{1,12}", raw):
        raise BadRequest(400, "malformed Content-Length")
    length = int(raw)
    if length > max_body:
        raise BadRequest(413, f"body larger than {max_body} bytes")
    return length
