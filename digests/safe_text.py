"""Characters that must never reach a terminal or a chat message: terminal escape
sequences, control characters, bidi overrides and zero-width characters.

Paper text and command text come from anyone. On a terminal, `ESC ] 0 ; … BEL` sets
the window title and `ESC [ 2 J` clears the screen; in a chat, U+202E turns
"Offline RL" around and zero-width characters make two names look the same.
`strip_unsafe()` removes all of them (whole escape sequences, not just the ESC) and
keeps newlines and tabs; `has_unsafe()` says whether there was anything to remove.

Removed: C0 controls except `\\n` and `\\t` (so `\\r` too), DEL, C1 controls (U+0080 to
U+009F), bidi embeddings, overrides, isolates and marks (U+202A to U+202E, U+2066 to
U+2069, U+200E, U+200F, U+061C), zero-width characters (U+200B to U+200D, U+2060 to
U+2064, U+FEFF), and U+2028/U+2029 (line and paragraph separators, which some
terminals and clients treat as line breaks; they become a space). Zero-width joiners
go too: an emoji sequence then shows as its separate emoji, a small price.
Every pattern is linear in the input.
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
_UNSAFE_CHARS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (but \t, \n), DEL, C1
    "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"  # bidi, zero-width
)
_UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]")
_SEPARATORS = re.compile("[\u2028\u2029]")
_ANY = re.compile(f"[{_UNSAFE_CHARS}\u2028\u2029]")


def has_unsafe(text: str) -> bool:
    """Whether `text` holds any character `strip_unsafe` would remove or replace."""
    return _ANY.search(text) is not None


def strip_unsafe(text: str) -> str:
    """`text` without escape sequences, control, bidi or zero-width characters."""
    if not has_unsafe(text):
        return text  # the common case: one scan, no copy
    text = _ESCAPE_SEQUENCES.sub("", text)
    text = _SEPARATORS.sub(" ", text)
    return _UNSAFE.sub("", text)


def json_safe(document: str) -> str:
    """JSON text with every unsafe character written as a `\\uXXXX` escape.

    Lossless (the decoded data is unchanged) and inert on a terminal. In JSON made by
    `json.dumps`, such characters can only occur inside strings, where an escape is valid.
    """
    return _ANY.sub(lambda match: f"\\u{ord(match.group()):04x}", document)
