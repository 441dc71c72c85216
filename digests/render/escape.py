"""Escaping paper text for each platform, so that no paper can ping or break a message.

Paper text reaching a renderer is already plain (LaTeX rendered as Unicode, Markdown
removed: see `digests.text.plain_text`); these functions make it inert. Each
first removes terminal escapes, control, bidi and zero-width characters
(`digests.safe_text.strip_unsafe`), whatever the platform.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from digests.safe_text import strip_unsafe
from digests.safe_url import safe_url

log = logging.getLogger(__name__)

ZWSP = "\u200b"
_DISCORD_MARKDOWN = "\\*_~`|[]"  # the backslash first, so the escapes added are not escaped
# A `#`, `>` or `-` that starts a line or follows only spaces on it; spaces, not line
# breaks, so each line is read once.
_DISCORD_LINE_MARK = re.compile(r"^(?=[#>-])", re.M)
_DISCORD_SPACED_MARK = re.compile(r"^[^\S\n]+(?=[#>-])", re.M)
_DISCORD_EVERYONE = re.compile(r"@(?=everyone|here)", re.I)
_DISCORD_MENTION = re.compile(r"<(?=[@#:/!&]|a:|t:)", re.I)


def slack_escape(text: str) -> str:
    """Slack mrkdwn: `&`, `<`, `>` become entities, so `<!channel>` is just text."""
    return strip_unsafe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_link(url: str, label: str) -> str:
    """A Slack link `<url|label>`, the label escaped; just the label if `url` is not a
    well-formed http(s) URL. `safe_url` percent-encodes `<`, `>`, `|` and spaces, so the
    URL cannot break out of the link syntax."""
    label = slack_escape(label).replace("|", "∣")
    checked = safe_url(url)
    return f"<{checked}|{label}>" if checked else label


def discord_escape(text: str) -> str:
    """Discord Markdown: formatting characters backslash-escaped, mentions broken.

    Messages are also sent with no allowed mentions; this keeps `@everyone` from even
    rendering as a mention, and keeps `*`, `_` and `>` in titles from formatting.
    """
    escaped = strip_unsafe(text)
    for char in _DISCORD_MARKDOWN:  # `replace` per character: a regex sub costs per match
        if char in escaped:
            escaped = escaped.replace(char, "\\" + char)
    if "#" in escaped or ">" in escaped or "-" in escaped:
        escaped = _DISCORD_LINE_MARK.sub(r"\\", escaped)
        escaped = _DISCORD_SPACED_MARK.sub(_then_backslash, escaped)
    if "@" in escaped:
        escaped = _DISCORD_EVERYONE.sub("@" + ZWSP, escaped)
    if "<" in escaped:
        escaped = _DISCORD_MENTION.sub("<" + ZWSP, escaped)
    return escaped


def _then_backslash(match: re.Match[str]) -> str:
    return match[0] + "\\"


def plain(text: str) -> str:
    """Plain text (the terminal, files): nothing to escape, only unsafe characters go."""
    return strip_unsafe(text)


def with_code(text: str, escape: Callable[[str], str], code: Callable[[str], str] = plain) -> str:
    """Escape `text` except inside `backtick` spans, which `code` handles instead."""
    parts = strip_unsafe(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: treat it all as text
        return escape("`".join(parts))
    return "`".join(code(part) if index % 2 else escape(part) for index, part in enumerate(parts))
