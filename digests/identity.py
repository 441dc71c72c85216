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


# Titles that journals and proceedings reuse for many different items ("Editorial",
# "Introduction to the special issue on ...", "Reply to ..."), often by the same editors:
# a shared surname would merge them, so they never match on their title.
_GENERIC_FIRST_WORDS = frozenset(
    {
        "addendum",
        "comment",
        "comments",
        "correction",
        "corrigendum",
        "editorial",
        "erratum",
        "errata",
        "foreword",
        "introduction",
        "obituary",
        "preface",
        "reply",
        "response",
        "retraction",
    }
)
MIN_TITLE_WORDS = 3
SHORT_TITLE_WORDS = 4  # a title under this many words needs two shared surnames


def title_key(title: str | None) -> str | None:
    """A real title's words only (as `abstract_fingerprint`), to match one paper's title
    across sources ("Offline RL: A Survey." and "offline rl -- a survey" are one key).
    None for an empty title, one too short to identify a paper (under 3 words), or a
    generic one ("Editorial: ...", "Erratum to ...", "Introduction to the special issue")."""
    if not title:
        return None
    key = abstract_fingerprint(title)
    words = key.split()
    if len(words) < MIN_TITLE_WORDS or words[0] in _GENERIC_FIRST_WORDS:
        return None
    return key


def same_authors_enough(key: str, ours: set[str], theirs: set[str]) -> bool:
    """Whether two papers with the title key `key` share enough author surnames to be one
    paper: one for a title of 4 words or more, two for a shorter one (unless a side has a
    single author, who must then be shared)."""
    shared = ours & theirs
    if len(key.split()) >= SHORT_TITLE_WORDS:
        return bool(shared)
    return len(shared) >= min(2, len(ours), len(theirs)) and bool(shared)


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
