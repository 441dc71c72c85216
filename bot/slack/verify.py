"""Slack request signatures, checked on the raw body before anything parses it, and a
memory of the signatures already seen, so a replayed request has no effect."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections import OrderedDict
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

MAX_AGE_SECONDS = 300
REPLAY_MEMORY = 50_000  # signatures remembered; Slack's real traffic is far below this per 5 min
_TIMESTAMP = re.compile(rb"\d{1,12}")
_SIGNATURE = re.compile(rb"v0=[0-9a-f]{64}")
SLACK_HOOK_HOSTS = ("hooks.slack.com", "hooks.slack-gov.com")  # where Slack's response_urls point
_URL = re.compile(r"https?://[!-~]{1,2000}")  # printable ASCII: no spaces or controls


def sign(secret: bytes, timestamp: bytes, body: bytes) -> str:
    """The `X-Slack-Signature` value Slack would send for this timestamp and body."""
    digest = hmac.new(secret, b"v0:" + timestamp + b":" + body, hashlib.sha256).hexdigest()
    return "v0=" + digest


def check(
    secret: bytes, timestamp: bytes | None, signature: bytes | None, body: bytes, now: float
) -> str | None:
    """None when the request is signed by Slack (HMAC-SHA256 of `v0:{timestamp}:{body}`,
    compared in constant time, the timestamp within `MAX_AGE_SECONDS` of now); otherwise
    why not, in a few words (never echoing the request). Malformed headers are refused
    before the HMAC."""
    if not timestamp or not _TIMESTAMP.fullmatch(timestamp):
        return "missing or malformed timestamp"
    if abs(now - int(timestamp)) > MAX_AGE_SECONDS:
        return "timestamp more than 5 minutes away"
    if not signature or not _SIGNATURE.fullmatch(signature):
        return "missing or malformed signature"
    if not hmac.compare_digest(sign(secret, timestamp, body).encode(), signature):
        return "signature mismatch"
    return None


class ReplayMemory:
    """The signatures of accepted requests, each kept until its timestamp is too old for
    `check` to accept again (so a replay is refused by one or the other).

    Bounded: beyond `size` entries the oldest is forgotten early. Only Slack can make a
    valid signature, so reaching the bound takes more than `size` genuine requests in
    5 minutes."""

    def __init__(self, size: int = REPLAY_MEMORY, window: float = MAX_AGE_SECONDS) -> None:
        self.size = size
        self.window = window
        self._seen: OrderedDict[bytes, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def first_time(self, signature: bytes, timestamp: int, now: float) -> bool:
        """Remember `signature`; False if it was already seen (a replay)."""
        self._forget_expired(now)
        if signature in self._seen:
            return False
        self._seen[signature] = timestamp + self.window
        if len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return True

    def _forget_expired(self, now: float) -> None:
        # Entries arrive in roughly timestamp order; an entry that expires later than one
        # behind it only stays a little longer than needed, which is harmless.
        while self._seen:
            signature, expires = next(iter(self._seen.items()))
            if expires >= now:
                break
            del self._seen[signature]


def slack_url(url: str, api_url: str) -> bool:
    """Whether answers may be posted to `url`: https on Slack's hooks host, or the host
    (and scheme) of the configured `SLACK_API_URL`, which tests and benchmarks point at a
    local fake. Anything else (an internal address, a URL with a user name, which parsers
    read differently) is refused, so even a signed request cannot make Paperboy post to it."""
    if not _URL.fullmatch(url):
        return False
    parts, api = urlsplit(url), urlsplit(api_url)
    try:
        parts.port  # noqa: B018 (raises ValueError on a malformed port)
    except ValueError:
        return False
    if "@" in parts.netloc or not parts.hostname:
        return False
    if parts.scheme == "https" and parts.hostname in SLACK_HOOK_HOSTS:
        return True
    return (parts.scheme, parts.hostname) == (api.scheme, api.hostname)
