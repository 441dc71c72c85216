"""Score how well a paper fits a topic: weighted terms and phrases, counted in its text.

Text and terms are normalised the same way: plain text, case-folded, hyphens and
punctuation as spaces, a light plural stemmer ("policies" -> "policy"). A term is a
phrase of such tokens; it matches where the paper has the same tokens in a row.

    score = sum over terms of weight * (1 + ln(count in abstract))
                             + weight * [term in title] + weight * [term in keywords]

so repetition counts, but with diminishing returns, and a term in the title or the
authors' keywords counts once more. The threshold a digest applies is calibrated on
labelled papers (see docs/relevance.md), not guessed.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from digests.enrich.text import plain_text

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"[^\W_]+")
_KEEP_S = ("ss", "us", "is", "ics", "ous")


def _stem(token: str) -> str:
    if len(token) <= 3 or token.endswith(_KEEP_S):
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("ches", "shes", "xes", "sses")):
        return token[:-2]
    if token.endswith("s"):
        return token[:-1]
    return token


@functools.lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """Space-padded token string: " offline reinforcement learning " style."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " " + " ".join(_stem(token) for token in _TOKEN.findall(folded)) + " "


@dataclass(frozen=True)
class PaperText:
    """The parts of a paper that matching reads, normalised once."""

    title: str
    keywords: str
    abstract: str

    @classmethod
    def of(cls, paper: Mapping[str, Any]) -> PaperText:
        """The normalised text of a paper; stored papers are cached by id and last update."""
        if not (paper.get("id") and paper.get("updated_at")):
            return _build_text(paper)
        key = (str(paper["id"]), str(paper["updated_at"]))
        text = _TEXT_CACHE.get(key)
        if text is None:
            text = _TEXT_CACHE[key] = _build_text(paper)
            if len(_TEXT_CACHE) > TEXT_CACHE_SIZE:
                _TEXT_CACHE.popitem(last=False)
        return text


# A digest run scores every unsent paper for every channel: normalise each paper once.
TEXT_CACHE_SIZE = 10_000
_TEXT_CACHE: OrderedDict[tuple[str, str], PaperText] = OrderedDict()


def _build_text(paper: Mapping[str, Any]) -> PaperText:
    keywords = paper.get("keywords") or []
    names = paper.get("names") or ""
    return PaperText(
        title=normalise(f"{paper.get('title') or ''} {names}"),
        keywords=normalise(" ; ".join(keywords) if isinstance(keywords, list) else keywords),
        abstract=normalise(paper.get("abstract_text") or plain_text(paper["abstract"])),
    )


@dataclass(frozen=True)
class Term:
    phrase: str  # normalised, space padded
    weight: float

    @classmethod
    def of(cls, phrase: str, weight: float) -> Term:
        return cls(normalise(phrase), float(weight))


def _occurrences(text: str, phrase: str) -> int:
    """Occurrences of a space-padded phrase, counting ones that share a space:
    " robot robot " has " robot " twice, which str.count would miss."""
    count, start = 0, text.find(phrase)
    while start != -1:
        count += 1
        start = text.find(phrase, start + len(phrase) - 1)
    return count


def score(paper: PaperText, terms: tuple[Term, ...]) -> float:
    """The paper's score for a topic's terms (0 when nothing matches)."""
    total = 0.0
    for term in terms:
        count = _occurrences(paper.abstract, term.phrase)
        if count:
            total += term.weight * (1.0 + math.log(count))
        if term.phrase in paper.title:
            total += term.weight
        if term.phrase in paper.keywords:
            total += term.weight
    return round(total, 3)
