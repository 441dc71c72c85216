"""Stable paper ids: the same abstract, from any file or format, gets the same id."""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterator

from digests.text import plain_text

log = logging.getLogger(__name__)

ID_PREFIX = "p"
# 64 bits: at 10M papers the expected number of pairs sharing an id is n^2/2^65, 2.7e-6
# (at 40 bits, the legacy ids, it is 45: docs/explanation/guarantees.md).
ID_HEX_DIGITS = 16
LEGACY_HEX_DIGITS = 10  # the first ids' length; a stored id's shape never changes
# What `papers.fingerprint` keeps of the fingerprint's SHA-256: 128 bits, so two different
# abstracts agree on it with a chance of n^2/2^129 (1.5e-25 at 10M), in 32 bytes a row.
FINGERPRINT_HEX_DIGITS = 32
# Alternative ids tried after a collision (`probe_ids`); each is taken with a chance of
# n/2^64, so more than one is never needed in practice (tests use 2-hex ids).
MAX_PROBES = 64
_WORD = re.compile(r"[^\W_]+")
# ASCII text's words, folded, in one C pass: letters to lower case, digits kept, every
# other byte a space (then `split`). On ASCII text this is what `_words` does: NFKC
# changes no ASCII character, `casefold` is `lower`, and `[^\W_]` is [A-Za-z0-9].
_ASCII_FOLD = bytes(ord(chr(c).lower()) if chr(c).isalnum() else 0x20 for c in range(128)) + bytes(
    range(128, 256)  # never met: the text is ASCII
)


def _words(text: str) -> bytes:
    """`text`'s words, case-folded and NFKC-normalised, joined by single spaces (UTF-8)."""
    if text.isascii():  # most abstracts: far faster than the Unicode regex
        return b" ".join(text.encode("ascii").translate(_ASCII_FOLD).split())
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORD.findall(folded)).encode("utf-8")


def abstract_fingerprint(abstract: str) -> str:
    """The abstract's words only: markup, case, punctuation and spacing don't count."""
    return _words(plain_text(abstract)).decode("utf-8")


def fingerprint_hash(abstract: str) -> str:
    """What identifies an abstract in the store: the first 32 hex digits of the SHA-256
    of its fingerprint (`papers.fingerprint`). Its ids are derived from it."""
    digest = hashlib.sha256(_words(plain_text(abstract))).hexdigest()
    return digest[:FINGERPRINT_HEX_DIGITS]


def own_id(fingerprint: str) -> str:
    """The id of a paper with this fingerprint hash unless another paper holds it already
    (then see `probe_ids`): `p` and its first 16 hex digits. Reads ID_HEX_DIGITS at each
    call (tests shorten it to force collisions): don't copy the constant."""
    return ID_PREFIX + fingerprint[:ID_HEX_DIGITS]


def paper_id(abstract: str) -> str:
    """`p` and 16 hex digits of the fingerprint's SHA-256, e.g. `p3f9a2b1c0d4e5f60`
    (`own_id` of its `fingerprint_hash`)."""
    return own_id(fingerprint_hash(abstract))


def legacy_id(fingerprint: str) -> str:
    """The 10-hex-digit id of the first stored papers with this fingerprint hash (a
    prefix of its `own_id`); stored papers keep it."""
    return ID_PREFIX + fingerprint[:LEGACY_HEX_DIGITS]


def probe_ids(fingerprint: str) -> Iterator[str]:
    """The ids a paper with this fingerprint hash may be stored under, in the order they
    are tried: its own (`paper_id`), then, should another paper hold it (a collision),
    `p` + 16 hex of SHA-256(fingerprint + "#1"), "#2", ... Deterministic, so the same
    abstract always walks the same sequence and finds where it was put."""
    yield own_id(fingerprint)
    for attempt in range(1, MAX_PROBES):
        digest = hashlib.sha256(f"{fingerprint}#{attempt}".encode("ascii")).hexdigest()
        yield ID_PREFIX + digest[:ID_HEX_DIGITS]


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


# Words after a surname that are no surname: two papers by "John Smith Jr." and "Mary
# Jones Jr." share no author, nor do "A. Smith et al." and "B. Jones et al."
_NOT_SURNAMES = frozenset({"jr", "sr", "ii", "iii", "iv", "phd", "et", "al", "etal"})


def _folded(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word).casefold()
    return "".join(ch for ch in decomposed if ch.isalnum())


def surnames(authors: list[str]) -> set[str]:
    """Authors' surnames, case-folded and without accents' marks: "Ada Lovelace",
    "Lovelace, Ada", "A. Lovelace", "ADA LOVELACE JR." and "Ada Lovelace et al." all
    give "lovelace"."""
    found: set[str] = set()
    for author in authors:
        name = author.split(",", 1)[0] if "," in author else author
        words = [_folded(word) for word in name.split()]
        while words and (not words[-1] or words[-1] in _NOT_SURNAMES):
            words.pop()
        word = words[-1] if words else ""
        if len(word) >= 2:
            found.add(word)
    return found
