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
