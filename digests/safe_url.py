"""Only well-formed http(s) URLs are ever shown as links.

Paper URLs come from files anyone can write. Discord refuses a whole message when one
embed URL is malformed (a space, `<`, `|`), and Slack's `<url|label>` syntax breaks on
`>` or `|`. `safe_url()` returns the URL in a form every platform accepts, or None:

- the scheme is http or https, and there is a host: DNS labels (non-ASCII names in
  their IDNA form) with at least one dot, or an IP address; an optional numeric port;
- no user name or password (`https://github.com@evil.example` misleads the reader);
- no control, bidi or zero-width characters anywhere, tab and newline included (Python's
  `urlsplit` drops those silently, so the link would differ from the text: such a URL is
  broken or a trick);
- an IPv6 address without a zone (`[fe80::1%25eth0]` means nothing off that machine), and
  a port from 1 to 65535;
- in the path, query and fragment, spaces and characters outside RFC 3986 (`<>|"{}^\\`
  and backtick, `[` `]`, non-ASCII letters) are percent-encoded, and a `%` that starts no
  escape becomes `%25`;
- at most `MAX_URL` characters, after encoding.
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
