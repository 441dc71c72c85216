"""Characters that must never reach a terminal or a chat message: terminal escape
sequences, control characters, bidi overrides and invisible characters.

`strip_unsafe()` removes them (whole escape sequences, not just the ESC) and keeps
newlines and tabs; U+2028/U+2029 become a space. Kept where people's text needs them: a
joiner between two visible non-ASCII characters (👩‍💻, Persian), a variation selector after
one (❤️) or in a keycap (1️⃣), a subdivision flag's tags (🏴). Every pattern is linear.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

# Longest body of an OSC/DCS/APC string we remove whole; an unterminated or longer one
# loses only its introducer (what follows is ordinary text again once the ESC is gone).
_STRING_MAX = 4096
_ESCAPE_SEQUENCES = re.compile(
    # OSC, DCS, SOS, PM, APC: ESC ] … BEL or ESC \ (and their C1 forms)
    rf"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x90\x98\x9b-\x9f]{{0,{_STRING_MAX}}}(?:\x07|\x1b\\|\x9c)"
    # CSI: ESC [ parameters intermediates final (and the C1 CSI)
    r"|(?:\x1b\[|\x9b)[0-?]*+[ -/]*+[@-~]"
    # any other escape: ESC, intermediates, one final character
    r"|\x1b[ -/]*+[0-~]"
)
_ALWAYS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (but \t, \n), DEL, C1
    "\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi, zero-width space
    "\u180e\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb"  # invisible format characters
    # soft hyphen, grapheme joiner, Hangul and Khmer fillers, shorthand and musical
    # format controls: they show as nothing, so `off\u00adline-rl` passes for offline-rl
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
)
_JOINERS = "\u200c\u200d"
_TAGS = "\U000e0000-\U000e007f"
_SEPARATOR_CHARS = "\u2028\u2029"
_SELECTORS = "\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef"
# A character a joiner may sit next to: visible and not ASCII.
_VISIBLE_NON_ASCII = rf"[^\x00-\x7f\s{_ALWAYS}{_JOINERS}{_TAGS}{_SEPARATOR_CHARS}]"
_UNSAFE = re.compile(f"[{_ALWAYS}]")
_TAG_RUNS = re.compile(rf"(?P<flag>\U0001f3f4[\U000e0020-\U000e007e]{{1,32}}\U000e007f)|[{_TAGS}]+")
# A character a selector may follow: visible, not ASCII, not a selector itself.
_SELECTOR_BASE = rf"[^\x00-\x7f\s{_ALWAYS}{_JOINERS}{_TAGS}{_SEPARATOR_CHARS}{_SELECTORS}]"
_LONE_SELECTORS = re.compile(
    rf"(?<!{_SELECTOR_BASE})(?:(?<![0-9#*])[{_SELECTORS}]|[{_SELECTORS}](?!\u20e3))"
)
_LONE_JOINERS = re.compile(
    rf"(?<!{_VISIBLE_NON_ASCII})[{_JOINERS}]|[{_JOINERS}](?!{_VISIBLE_NON_ASCII})"
)
_SEPARATORS = re.compile(f"[{_SEPARATOR_CHARS}]")
# Every character `strip_unsafe` may remove or replace (a fast first scan).
_ANY = re.compile(f"[{_ALWAYS}{_JOINERS}{_TAGS}{_SEPARATOR_CHARS}{_SELECTORS}]")
_TAG = re.compile(f"[{_TAGS}]")
_JOINER = re.compile(f"[{_JOINERS}]")
_SELECTOR = re.compile(f"[{_SELECTORS}]")
# What `_ANY` can find in ASCII text: only the C0 controls (but \t, \n) and DEL.
_ASCII_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def is_text(value: str) -> bool:
    """Whether `value` can be stored and printed: undecodable bytes (in argv, say) arrive
    as lone surrogates, which SQLite and terminals refuse."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def has_unsafe(text: str) -> bool:
    """Whether `text` holds any character `strip_unsafe` would remove or replace."""
    return _ANY.search(text) is not None and strip_unsafe(text) != text


def strip_unsafe(text: str) -> str:
    """`text` without escape sequences, control, bidi or invisible characters."""
    # The common case: nothing to remove, found in one scan without a copy. ASCII text
    # (most papers) can hold only C0 controls and DEL, which `isprintable` finds far
    # faster than `_ANY`'s large character class (it also stops at \n and \t, kept).
    if text.isascii():
        if text.isprintable() or _ASCII_UNSAFE.search(text) is None:
            return text
    elif _ANY.search(text) is None:
        return text
    text = _ESCAPE_SEQUENCES.sub("", text)
    text = _SEPARATORS.sub(" ", text)
    text = _UNSAFE.sub("", text)
    # Tags, selectors, then joiners: each pass sees the neighbours the result will have.
    if _TAG.search(text):
        text = _TAG_RUNS.sub(lambda match: match.group("flag") or "", text)
    if _SELECTOR.search(text):
        text = _LONE_SELECTORS.sub("", text)
    if _JOINER.search(text):
        text = _LONE_JOINERS.sub("", text)
    return text


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # JSON spells a character outside the BMP as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_safe(document: str) -> str:
    """JSON text with every character `strip_unsafe` might remove written as a `\\uXXXX`
    escape (joiners and flag tags too: JSON is data, and this keeps it simple).

    Lossless (the decoded data is unchanged) and inert on a terminal. In JSON made by
    `json.dumps`, such characters can only occur inside strings, where an escape is valid.
    """
    return _ANY.sub(_json_escape, document)
