"""Only well-formed http(s) URLs are ever shown as links.

`safe_url()` returns the URL in a form every platform accepts, or None: http(s) with a host
(DNS labels with a dot, or an IP address without a zone) and a valid port; no user name or
password; no control, bidi or zero-width character; characters outside RFC 3986
percent-encoded; at most `MAX_URL` characters.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from urllib.parse import quote, urlsplit

from digests.safe_text import has_unsafe

log = logging.getLogger(__name__)

MAX_URL = 2000  # Discord's embed URL limit is 2048; Slack's is 3000
SCHEMES = ("http", "https")
# RFC 3986 reserved characters and "%" stay as they are; quote() keeps letters, digits, "-._~".
_KEEP = "!#$&'()*+,/:;=?@%"  # but not [ and ], which only a host may hold
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_BARE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _host(hostname: str, bracketed: bool) -> str | None:
    """The host in ASCII, or None if it is not a plausible host name or address."""
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        address = None
    if address is not None:
        if getattr(address, "scope_id", None):  # a zone only means something on one host
            return None
        return f"[{address.compressed}]" if address.version == 6 else address.compressed
    if bracketed:
        return None
    try:
        ascii_name = hostname.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    labels = ascii_name.split(".")
    if len(labels) < 2 or len(ascii_name) > 253:
        return None
    if not all(_LABEL.fullmatch(label) for label in labels):
        return None
    return ascii_name


def _encode(part: str) -> str:
    return quote(_BARE_PERCENT.sub("%25", part), safe=_KEEP)


def safe_url(url: object) -> str | None:
    """`url` as a link every platform accepts (percent-encoded where needed), or None."""
    if not isinstance(url, str):
        return None
    url = url.strip()
    if not url or len(url) > MAX_URL or has_unsafe(url) or any(c in url for c in "\t\n\r"):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a bad port or a malformed IPv6 address
        return None
    if parts.scheme.lower() not in SCHEMES or not parts.hostname or port == 0:
        return None
    if "@" in parts.netloc or any(char.isspace() for char in parts.netloc):
        return None
    host = _host(parts.hostname, parts.netloc.startswith("["))
    if host is None:
        return None
    result = f"{parts.scheme.lower()}://{host}{f':{port}' if port is not None else ''}"
    result += _encode(parts.path)
    if parts.query:
        result += "?" + _encode(parts.query)
    if parts.fragment:
        result += "#" + _encode(parts.fragment)
    return result if len(result) <= MAX_URL else None
