"""Stable paper ids: the same abstract, from any file or format, gets the same id."""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata

from digests.enrich.text import plain_text

log = logging.getLogger(__name__)

ID_PREFIX = "p"
ID_HEX_DIGITS = 10
_WORD = re.compile(r"[^\W_]+")


def abstract_fingerprint(abstract: str) -> str:
    """The abstract's words only: markup, case, punctuation and spacing don't count."""
    text = unicodedata.normalize("NFKC", plain_text(abstract)).casefold()
    return " ".join(_WORD.findall(text))


def paper_id(abstract: str) -> str:
    """`p` and 10 hex digits of the fingerprint's SHA-256, e.g. `p3f9a2b1c0d`."""
    digest = hashlib.sha256(abstract_fingerprint(abstract).encode("utf-8")).hexdigest()
    return ID_PREFIX + digest[:ID_HEX_DIGITS]


def title_key(title: str | None) -> str | None:
    """A real title's words only (as `abstract_fingerprint`), to match one paper's title
    across sources ("Offline RL: A Survey." and "offline rl -- a survey" are one key).
    None for an empty title or one too short to identify a paper (under 3 words)."""
    if not title:
        return None
    key = abstract_fingerprint(title)
    return key if len(key.split()) >= 3 else None


def surnames(authors: list[str]) -> set[str]:
    """Authors' surnames, case-folded and without accents' marks: "Ada Lovelace",
    "Lovelace, Ada" and "A. Lovelace" all give "lovelace"."""
    found: set[str] = set()
    for author in authors:
        name = author.split(",", 1)[0] if "," in author else (author.split() or [""])[-1]
        decomposed = unicodedata.normalize("NFKD", name).casefold()
        word = "".join(ch for ch in decomposed if ch.isalnum())
        if len(word) >= 2:
            found.add(word)
    return found
