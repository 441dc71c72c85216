"""Where a redirect may lead: a fetch follows a source's redirects only to public addresses.

The URL the operator names is fetched wherever it points; every redirect hop it leads to
is checked after DNS resolution (`refusal`), unless `allow_private_redirects` is set.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_PRIVATE = tuple(
    ipaddress.ip_network(net)
    for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # the well-known prefix (RFC 6052)
_TEREDO = ipaddress.IPv6Network("2001::/32")


class RedirectRefused(Exception):
    """A redirect hop to an address the rule refuses: `address` and `why` (a phrase such
    as "a loopback address")."""

    def __init__(self, address: str, why: str) -> None:
        super().__init__(f"{address} is {why}")
        self.address = address
        self.why = why


@dataclass
class Hop:
    """A redirect hop being requested; `checked` once the resolver checked its addresses."""

    checked: bool = False


_HOP: ContextVar[Hop | None] = ContextVar("paperboy_redirect_hop", default=None)


@contextmanager
def checking() -> Iterator[Hop]:
    """Within it, the fetch session's resolver checks every address it looks up (a hop is
    being requested, in this task)."""
    hop = Hop()
    token = _HOP.set(hop)
    try:
        yield hop
    finally:
        _HOP.reset(token)


def refusal(address: str) -> str | None:
    """Why a redirect may not lead to `address` (an IP address, v4 or v6), or None when it
    is public. Anything Python does not count as global is refused (documentation, shared
    and benchmarking ranges too), and so are multicast, reserved and site-local addresses
    and IPv4 addresses inside IPv6 (mapped, NAT64) whose IPv4 address is refused; 6to4 and
    Teredo tunnel addresses always are."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "not a canonical IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _TEREDO:
            return "a Teredo tunnel address"
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            kind, ipv4 = embedded
            why = _kind(ipv4)
            if why is not None:
                return f"{kind} {ipv4}, {why}"
            if kind == "a 6to4":  # deprecated relays; Python releases disagree on them
                return "a 6to4 tunnel address"
            return None  # mapped and NAT64 addresses are reserved as IPv6 addresses
    return _kind(ip)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    if ip.ipv4_mapped is not None:
        return "an IPv4-mapped", ip.ipv4_mapped
    if ip in _NAT64:
        return "a NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return "a 6to4", ip.sixtofour
    return None


def _kind(ip: IPAddress) -> str | None:
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if any(ip in net for net in _PRIVATE):
        return "a private address"
    if ip.is_reserved or (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local):
        return "a reserved address"
    if not ip.is_global:
        return "not a public address"
    return None


def is_literal(host: str | None) -> bool:
    """Whether aiohttp takes `host` for an IP literal, which it connects to without asking
    the resolver (aiohttp's own test: a colon, or only digits and dots)."""
    if not host:
        return False
    return ":" in host or host.replace(".", "").isdigit()


def literal_refusal(host: str) -> str | None:
    """Why a redirect may not lead to `host` when it is an IP literal, or None: a public
    literal, or a name (the resolver checks names)."""
    return refusal(host) if is_literal(host) else None


class GuardedResolver(AbstractResolver):
    """The fetch session's resolver: it passes lookups through to `inner` (aiohttp's
    threaded `getaddrinfo` when None), and within `checking()` it refuses a name any of
    whose addresses `refusal` refuses (RedirectRefused). The connector connects to the
    addresses returned here, so the address checked is the address connected to; that
    holds only with no DNS cache and no pooled connections (see `open_session`)."""

    def __init__(self, inner: AbstractResolver | None = None) -> None:
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if self._inner is None:
            self._inner = ThreadedResolver()  # needs the running loop: made on first use
        found = await self._inner.resolve(host, port, family)
        hop = _HOP.get()
        if hop is not None:
            for result in found:
                why = refusal(result["host"])
                if why is not None:
                    log.debug("redirect to %s refused: %s is %s", host, result["host"], why)
                    raise RedirectRefused(result["host"], why)
            hop.checked = True
        return found

    async def close(self) -> None:
        # The session does not own this resolver, so it never calls this: the inner
        # resolver is the caller's, or a ThreadedResolver, whose close does nothing.
        pass


class GuardedConnector(aiohttp.TCPConnector):
    """The fetch session's connector (`open_session`): a `GuardedResolver` over `inner`, no
    DNS cache and no pooled connections, so every request to a name is looked up, checked
    when it is a hop, and connected to at the very addresses checked. A hop by name is
    sent only through this connector: any other cannot have its address checked before
    the request goes out."""

    def __init__(self, inner: AbstractResolver | None = None, *, limit_per_host: int = 0) -> None:
        super().__init__(
            limit_per_host=limit_per_host,
            resolver=GuardedResolver(inner),
            use_dns_cache=False,
            force_close=True,
        )
