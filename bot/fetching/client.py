"""The polite HTTP client every fetcher uses: spacing, retries, size cap, one error type.

`PoliteClient.request(url, parse=...)` spaces requests to a host `delay` apart (a shared
`Pacer`); retries 5xx, 429, network errors and a `ParseError` with backoff or the server's
`Retry-After` (failing at once beyond `max_wait`); follows redirects itself, each hop checked
by `bot.fetching.guard`; fails at once on other 4xx, an answer over its cap and a final
`ParseError`. Every failure is a one-line `FetchError` naming the source and the host, never
the query string (it may hold a private feed's token).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from bot.fetching import guard
from bot.fetching.config import FetchConfig
from digests.sources.errors import ArxivAPIError, NotAFeedError, ParseError

log = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

MAX_REDIRECTS = 10  # as aiohttp's own limit
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchError(Exception):
    """A source that could not be fetched. `str()` is one line: "SOURCE: message"."""

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        self.message = message
        super().__init__(f"{shown_source(source)}: {message}")


def shown_source(source: str) -> str:
    """`source` safe to log and show: a feed URL's query string (maybe a token) is cut."""
    if source.startswith("feed:") and "?" in source:
        return source.split("?", 1)[0] + "?…"
    return source


@dataclass
class Answer:
    """A successful HTTP answer (2xx or 304), its body read whole (up to the cap)."""

    status: int
    body: bytes
    headers: Mapping[str, str]  # case-insensitive (a CIMultiDict)
    url: str

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class Pacer:
    """When each host was (or will next be) asked, shared by the clients that must keep
    one spacing between them: `SourceFetcher` gives one to every fetch it makes, so two
    arXiv sources read one after the other (or at once) still keep 3 s between requests.
    Times are on the clients' `clock`; share a Pacer only between clients of one clock."""

    def __init__(self) -> None:
        self._next: dict[str, float] = {}

    def reserve(self, host: str, delay: float, now: float) -> float:
        """The time of the next request to `host`: `now`, or `delay` after the previous
        one; that slot is taken."""
        previous = self._next.get(host)
        slot = now if previous is None else max(now, previous + delay)
        self._next[host] = slot
        return slot


class _Transient(Exception):
    """A failure worth retrying; `wait` is the server's Retry-After, if it gave one."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class PoliteClient:
    """Requests for one source, spaced `delay` seconds apart (see the module doc)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        config: FetchConfig,
        *,
        source: str,
        delay: float,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        pacer: Pacer | None = None,
    ) -> None:
        self.session = session
        self.pacer = pacer or Pacer()
        self.config = config
        self.source = source
        self.delay = delay
        self.sleep = sleep
        self.clock = clock
        self.requests = 0

    async def request(
        self,
        url: str,
        parse: Callable[[Answer], T],
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> T:
        """`parse(answer)` for the first good answer; FetchError when there is none."""
        host = urlsplit(url).netloc or url
        attempts = max(1, self.config.attempts)
        for attempt in range(1, attempts + 1):
            try:
                answer = await self._get(url, host, params, headers, max_bytes)
                try:
                    return parse(answer)
                except (ArxivAPIError, NotAFeedError) as exc:
                    raise FetchError(self.source, str(exc)) from None
                except ParseError as exc:
                    raise _Transient(f"malformed answer from {host}: {exc}") from None
            except _Transient as exc:
                if attempt == attempts:
                    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
                    raise FetchError(self.source, f"{exc} (gave up after {tries})") from None
                wait = self.config.backoff * 2 ** (attempt - 1)
                if exc.wait is not None:
                    if exc.wait > self.config.max_wait:
                        raise FetchError(
                            self.source, f"{exc}; {host} asks to wait {exc.wait:.0f} s, too long"
                        ) from None
                    wait = max(wait, exc.wait)
                log.warning(
                    "%s: %s; retrying in %.0f s (attempt %d of %d)",
                    shown_source(self.source), exc, wait, attempt, attempts,
                )  # fmt: skip
                await self.sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _space(self, host: str) -> None:
        """Wait for this request's turn: `delay` after the previous request to `host` by
        any client sharing this client's `Pacer`. The slot is reserved before sleeping
        (no await in between), so two clients never take the same one."""
        now = self.clock()
        slot = self.pacer.reserve(host, self.delay, now)
        if slot > now:
            await self.sleep(slot - now)

    async def _get(
        self,
        url: str,
        host: str,
        params: Mapping[str, str | int] | None,
        headers: Mapping[str, str] | None,
        max_bytes: int | None,
    ) -> Answer:
        await self._space(host)
        self.requests += 1
        max_bytes = max_bytes if max_bytes is not None else self.config.max_bytes
        sent = {"User-Agent": self.config.user_agent(), **(headers or {})}
        try:
            target = URL(url)
        except ValueError as exc:  # a setting's port out of range, say: asking again won't help
            raise FetchError(self.source, f"malformed URL for {host} ({exc})") from None
        query, hops, at = params, 0, host
        try:
            # One deadline for the whole chain of redirects, as aiohttp's own had.
            async with asyncio.timeout(self.config.timeout):
                while True:
                    check = hops > 0 and not self.config.allow_private_redirects
                    got = await self._one(target, query, sent, check, at, max_bytes)
                    if isinstance(got, Answer):
                        return got
                    hops += 1
                    if hops > MAX_REDIRECTS:
                        raise FetchError(self.source, f"too many redirects from {host}")
                    target = self._hop(*got, at)
                    query, at = None, _authority(target)
        except guard.RedirectRefused as exc:
            raise FetchError(self.source, _refused(target, str(exc))) from None
        except TimeoutError:
            raise _Transient(f"{at} did not answer within {self.config.timeout:g} s") from None
        except aiohttp.ClientConnectorError as exc:
            reason = str(exc.os_error) if exc.os_error else "connection failed"
            raise _Transient(f"cannot reach {at} ({reason})") from None
        except aiohttp.ClientError as exc:
            # A ClientResponseError's str() ends with the URL asked for, query string and all.
            text = exc.message if isinstance(exc, aiohttp.ClientResponseError) else str(exc)
            detail = text.splitlines()[0][:100] if text else type(exc).__name__
            raise _Transient(f"connection to {at} failed ({detail})") from None

    async def _one(
        self,
        target: URL,
        query: Mapping[str, str | int] | None,
        sent: Mapping[str, str],
        check: bool,
        at: str,
        max_bytes: int,
    ) -> Answer | tuple[URL, str]:
        """One request of a chain (`check`: a hop, its addresses checked): the Answer, or
        the URL answered and its Location for a redirect. A 5xx or 429 is retried."""
        timeout = aiohttp.ClientTimeout(total=self.config.timeout)
        by_name = check and not guard.is_literal(target.raw_host)
        unchecked = f"refused a redirect to {_shown_url(target)}: its address was not checked"
        if by_name and not isinstance(self.session.connector, guard.GuardedConnector):
            # No resolver of ours would see the lookup: refused before anything is sent.
            raise FetchError(self.source, unchecked)
        with guard.checking() if check else nullcontext() as hop:
            async with self.session.get(
                target, params=query, headers=sent, timeout=timeout, allow_redirects=False
            ) as resp:
                if by_name and hop is not None and not hop.checked:
                    # Connected to without the resolver's check, which `GuardedConnector`
                    # never does: refused, not trusted.
                    raise FetchError(self.source, unchecked)
                location = resp.headers.get("Location")
                if resp.status in _REDIRECTS and location is not None:
                    return resp.url, location
                if resp.status >= 500 or resp.status == 429:
                    raise _Transient(
                        f"HTTP {resp.status} {resp.reason or ''} from {at}".rstrip(),
                        retry_after(resp.headers.get("Retry-After"), time.time()),
                    )
                if resp.status >= 400:
                    raise FetchError(
                        self.source, f"HTTP {resp.status} {resp.reason or ''} from {at}".rstrip()
                    )
                body = await _read(resp, max_bytes, self.source, at)
                return Answer(resp.status, body, CIMultiDict(resp.headers), str(resp.url))

    def _hop(self, base: URL, location: str, at: str) -> URL:
        """The URL a redirect from `base` to `location` leads to; FetchError when it may
        not be followed (not http(s), no host, or an IP literal `guard` refuses)."""
        try:
            target = URL(location)
        except ValueError:
            raise FetchError(self.source, f"{at} redirected to a malformed URL") from None
        if target.scheme not in ("http", "https", ""):
            raise FetchError(
                self.source,
                f"refused a redirect from {at} to a {target.scheme[:20]}: URL "
                "(only http and https are followed)",
            )
        if not target.scheme or not target.is_absolute():  # "//host/path" or "/path"
            target = base.join(target)
        if target.scheme not in ("http", "https") or not target.raw_host:
            raise FetchError(self.source, f"{at} redirected to a URL without a host")
        try:
            target.raw_host.encode("idna")  # as getaddrinfo does: an empty or long label fails
        except UnicodeError:
            raise FetchError(self.source, f"{at} redirected to a malformed URL") from None
        if not self.config.allow_private_redirects:
            why = guard.literal_refusal(target.raw_host)
            if why is not None:
                raise FetchError(self.source, _refused(target, f"{target.raw_host} is {why}"))
        return target


def _authority(url: URL) -> str:
    """`host[:port]` of `url`, never a user name or password."""
    return url.host_port_subcomponent or url.raw_host or "?"


def _shown_url(url: URL) -> str:
    """`url` safe to show: no user name or password, the query string cut (a token)."""
    path = url.raw_path if len(url.raw_path) <= 80 else url.raw_path[:80] + "…"
    return f"{url.scheme}://{_authority(url)}{path}{'?…' if url.raw_query_string else ''}"


def _refused(target: URL, reason: str) -> str:
    return (
        f"refused a redirect to {_shown_url(target)} ({reason}; "
        "PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS=1 allows it)"
    )


async def _read(resp: aiohttp.ClientResponse, max_bytes: int, source: str, host: str) -> bytes:
    """The body, up to `max_bytes` AFTER decompression (aiohttp inflates gzip/deflate as it
    streams, so a small gzip bomb is cut at the cap, not inflated whole)."""
    if resp.content_length is not None and resp.content_length > max_bytes:
        raise FetchError(
            source, f"answer from {host} too big ({resp.content_length} bytes, limit {max_bytes})"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(65536):
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(source, f"answer from {host} too big (over {max_bytes} bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a `Retry-After` header asks to wait (a number or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, moment.timestamp() - now)
