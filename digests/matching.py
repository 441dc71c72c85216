"""Score how well a paper fits a topic: weighted terms and phrases, counted in its text.

Text and terms are normalised alike (plain, case-folded, punctuation as spaces, a light
plural stemmer); a term matches where the paper has its tokens in a row. The score is the
sum over terms of weight * (1 + ln(count in abstract)), plus weight once more for the title
and once for the keywords; the digest's threshold is calibrated (docs/dev/relevance.md).
"""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from digests.text import plain_text

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


# Stems of the tokens seen so far: a vocabulary is small, and stemming each token of each
# abstract again would be most of the cost of normalising a paper.
_STEMS: dict[str, str] = {}
STEMS_SIZE = 200_000


@functools.lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """Space-padded token string: " offline reinforcement learning " style."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    stems = _STEMS
    tokens = _TOKEN.findall(folded)
    try:
        return " " + " ".join([stems[token] for token in tokens]) + " "
    except KeyError:
        if len(stems) > STEMS_SIZE:
            stems.clear()
        # Stemmed here, not read back from `stems`: another thread (the scheduler builds
        # in worker threads) may clear it between the update and the read.
        stemmed = [stems.get(token) or _stem(token) for token in tokens]
        stems.update(zip(tokens, stemmed, strict=True))
        return " " + " ".join(stemmed) + " "


@dataclass(frozen=True)
class PaperText:
    """The parts of a paper that matching reads, normalised once."""

    title: str
    keywords: str
    abstract: str

    @classmethod
    def of(cls, paper: Mapping[str, Any]) -> PaperText:
        """The normalised text of a paper; stored papers are cached by id and last update,
        and a cached text is used only if made from the same title, names, keywords and
        abstract: two databases in one process (tests, the bench, a copy) can hold one id
        with one `updated_at` and other text, and `updated_at` is the ingest's clock, so
        two merges into a paper in one ingest (or one second) leave it unchanged."""
        if not (paper.get("id") and paper.get("updated_at")):
            return _build_text(paper)
        key = (str(paper["id"]), str(paper["updated_at"]))
        source = _source(paper)
        cached = _TEXT_CACHE.get(key)
        if cached is not None and cached[0] == source:
            return cached[1]
        text = _build_text(paper)
        _TEXT_CACHE[key] = (source, text)
        if len(_TEXT_CACHE) > TEXT_CACHE_SIZE:
            _TEXT_CACHE.popitem(last=False)
        return text


# A digest run scores every unsent paper for every channel: normalise each paper once.
TEXT_CACHE_SIZE = 10_000
_TEXT_CACHE: OrderedDict[tuple[str, str], tuple[tuple[Any, ...], PaperText]] = OrderedDict()


def _source(paper: Mapping[str, Any]) -> tuple[Any, ...]:
    """What `_build_text` reads from a paper (comparing it is a memcmp, not a normalise)."""
    keywords = paper.get("keywords")
    return (
        paper.get("title"),
        paper.get("names"),
        tuple(keywords) if isinstance(keywords, list) else keywords,
        paper.get("abstract_text") or paper.get("abstract"),
    )


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
    """The paper's score for a topic's terms (0 when nothing matches).

    The reference definition; `Matcher` gives the same scores for many topics at once.
    A term of no words ("", " ", a phrase of punctuation) matches nothing: counting ""
    or " " never got past the first match (`_occurrences` looped forever on them)."""
    total = 0.0
    for term in terms:
        if not term.phrase.strip():
            continue
        count = _occurrences(paper.abstract, term.phrase)
        if count:
            total += term.weight * (1.0 + math.log(count))
        if term.phrase in paper.title:
            total += term.weight
        if term.phrase in paper.keywords:
            total += term.weight
    return round(total, 3)


def _tokens(text: str) -> tuple[str, ...] | None:
    """A normalised text's tokens, or None for a text not in normalised form (tests build
    PaperText by hand): `Matcher` then falls back to `score`."""
    if not text.strip(" "):
        return ()  # no tokens: no phrase of words can be in it
    tokens = text.split(" ")
    if len(tokens) < 3 or tokens[0] or tokens[-1] or "" in tokens[1:-1]:
        return None
    return tuple(tokens[1:-1])


def _count(tokens: tuple[str, ...], starts: list[int], phrase: tuple[str, ...]) -> int:
    """Occurrences of `phrase` at the token positions `starts` (where its first token is),
    left to right without overlap: what `_occurrences` counts in the padded string."""
    count, free, size = 0, 0, len(phrase)
    for start in starts:
        if start >= free and tokens[start : start + size] == phrase:
            count += 1
            free = start + size  # `_occurrences` resumes at the match's closing space
    return count


class Matcher:
    """Scores papers against many topics at once, with exactly `score`'s results.

    `score` searches the padded text once per term (`str.find`); over thousands of topics
    that is thousands of scans per paper. The matcher indexes the terms by their first
    token instead: a paper's text is split once, and only the terms whose first token it
    contains are checked, so its cost grows with the paper's words, not with the number
    of topics. Terms of several words are indexed by their first two ("offline rl"), so
    thousands of topics' phrases starting with a common word ("learning ...") are not all
    checked. Scores are summed term by term in each topic's order, as `score` does, so
    the floats (and their rounding) are the same."""

    def __init__(self, topics: Mapping[str, tuple[Term, ...]]) -> None:
        self.keys = list(topics)
        self._terms = [topics[key] for key in self.keys]
        # lead ("word" or "two words") -> phrases starting so -> (topic, term index) using it
        self._lead: dict[str, dict[tuple[str, ...], list[tuple[int, int]]]] = {}
        self._pair_firsts: set[str] = set()  # first words of phrases of several words
        self._odd: set[int] = set()  # topics with a term of no tokens: scored by `score`
        for index, terms in enumerate(self._terms):
            for position, term in enumerate(terms):
                tokens = _tokens(term.phrase)
                if not tokens:
                    self._odd.add(index)
                    continue
                if len(tokens) > 1:
                    self._pair_firsts.add(tokens[0])
                users = self._lead.setdefault(" ".join(tokens[:2]), {}).setdefault(tokens, [])
                users.append((index, position))

    def scores(self, paper: PaperText) -> dict[str, float]:
        """{topic key: score} for the topics with some term in the paper (others score 0)."""
        abstract, title, keywords = (
            _tokens(x) for x in (paper.abstract, paper.title, paper.keywords)
        )
        if abstract is None or title is None or keywords is None:
            return self._slow(paper, range(len(self.keys)))
        fields = (abstract, title, keywords)
        lead, pair_firsts = self._lead, self._pair_firsts
        starts: dict[str, list[list[int]]] = {}
        for field, tokens in enumerate(fields):
            previous = ""
            for position, token in enumerate(tokens):
                if token in lead:
                    starts.setdefault(token, [[], [], []])[field].append(position)
                if previous in pair_firsts and (pair := f"{previous} {token}") in lead:
                    starts.setdefault(pair, [[], [], []])[field].append(position - 1)
                previous = token
        hits: dict[int, list[tuple[int, int, bool, bool]]] = {}
        for key, (in_abstract, in_title, in_keywords) in starts.items():
            for phrase, users in lead[key].items():
                count = _count(abstract, in_abstract, phrase) if in_abstract else 0
                titled = bool(in_title) and _count(title, in_title, phrase) > 0
                keyed = bool(in_keywords) and _count(keywords, in_keywords, phrase) > 0
                if count or titled or keyed:
                    for index, position in users:
                        hits.setdefault(index, []).append((position, count, titled, keyed))
        found = {}
        for index, matched in hits.items():
            if index in self._odd:
                continue
            terms = self._terms[index]
            total = 0.0
            for position, count, titled, keyed in sorted(matched):
                weight = terms[position].weight
                if count:
                    total += weight * (1.0 + math.log(count))
                if titled:
                    total += weight
                if keyed:
                    total += weight
            found[self.keys[index]] = round(total, 3)
        found.update(self._slow(paper, self._odd))
        return found

    def _slow(self, paper: PaperText, indexes: Iterable[int]) -> dict[str, float]:
        found = {}
        for index in indexes:
            value = score(paper, self._terms[index])
            if value:
                found[self.keys[index]] = value
        return found
