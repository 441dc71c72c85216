"""Reference rankers for the relevance harness, rebuilt from the papers' text in each run.

- `TfIdf`: tf-idf cosine over unigrams and bigrams, in plain Python. Its settings follow
  the TfidfVectorizer of arxiv-sanity-lite's compute.py (token pattern, English stop
  words removed before bigrams are formed, sublinear tf, smooth idf, l2 norm), without
  its min_df=5 / max_df=0.1 cut: on 2,600 papers max_df would drop "reinforcement
  learning" itself (13% of ICLR 2021), so the reference would be a straw man.
- `Fts5Or`: SQLite FTS5 bm25 over title and abstract, title weight 5, the query's words
  ORed, unicode61 tokenizer (no stemming). Its own in-memory table, independent of
  Paperboy's index, so a change to Paperboy's index cannot move the reference.
- `sanity_search_rank`: arxiv-sanity-lite's `search_rank`, reproduced from
  https://github.com/karpathy/arxiv-sanity-lite/blob/d7a303b410b0246fbd19087e37f1885f7ca8a9dc/serve.py#L172-L192
  (the current commit, 2022-02-13): the query lowercased and split on spaces; each part
  scores 10 if it occurs (as a substring) in the authors, 20 if in the title, and its
  occurrence count in the abstract capped at 3; papers scoring 0 are left out; ties
  sort by paper id, descending, as `pairs.sort(reverse=True)` does.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

# scikit-learn's token_pattern as arxiv-sanity-lite sets it: words of 2+ characters
# starting with a letter or underscore.
_TOKEN = re.compile(r"\b[a-zA-Z_][a-zA-Z0-9_]+\b")
_WORD = re.compile(r"\w+", re.UNICODE)
# A short English stop list (the common function words of scikit-learn's list).
STOP_WORDS = frozenset(
    (  # noqa: SIM905
        "a about above after again against all also am an and any are as at be because been "
        "before being below between both but by can could did do does doing down during each "
        "few for from further had has have having he her here hers him his how i if in into "
        "is it its itself just me more most my no nor not now of off on once only or other our "
        "ours out over own same she should so some such than that the their theirs them then "
        "there these they this those through to too under until up very was we were what when "
        "where which while who whom why will with would you your yours yet via thus however "
        "well may might must us"
    ).split()
)


@dataclass(frozen=True)
class Doc:
    """A paper as the references see it: its id, title, abstract and authors."""

    id: str
    title: str
    abstract: str
    authors: str = ""


def _terms(text: str) -> list[str]:
    words = [w for w in _TOKEN.findall(text.lower()) if w not in STOP_WORDS]
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


class TfIdf:
    """Sparse l2-normalised tf-idf vectors of title + abstract; cosine = dot product."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        counts = {
            doc.id: Counter(_terms(f"{doc.title} {doc.abstract} {doc.authors}")) for doc in docs
        }
        df: Counter[str] = Counter()
        for terms in counts.values():
            df.update(terms.keys())
        n = len(docs)
        self.idf = {term: math.log((1 + n) / (1 + d)) + 1.0 for term, d in df.items()}
        self.vectors = {key: self._vector(terms) for key, terms in counts.items()}

    def _vector(self, terms: Counter[str]) -> dict[str, float]:
        vector = {
            term: (1.0 + math.log(count)) * self.idf[term]
            for term, count in terms.items()
            if term in self.idf
        }
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {term: v / norm for term, v in vector.items()}

    def scores(self, query: str) -> dict[str, float]:
        """Cosine of the query with every paper (0 for papers sharing no term)."""
        return self.scores_for(self._vector(Counter(_terms(query))))

    def scores_for(self, vector: Mapping[str, float]) -> dict[str, float]:
        return {
            key: sum(weight * doc[term] for term, weight in vector.items() if term in doc)
            for key, doc in self.vectors.items()
        }

    def neighbours(self, key: str) -> dict[str, float]:
        """Cosine of paper `key` with every other paper."""
        scores = self.scores_for(self.vectors[key])
        scores.pop(key, None)
        return scores


class Fts5Or:
    """FTS5 bm25, title weight 5, the query's words ORed (an in-memory table)."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("create virtual table ref using fts5(key unindexed, title, abstract)")
        self.db.executemany(
            "insert into ref (key, title, abstract) values (?, ?, ?)",
            [(doc.id, doc.title, doc.abstract) for doc in docs],
        )

    def scores(self, query: str) -> dict[str, float]:
        words = dict.fromkeys(w.lower() for w in _WORD.findall(query))
        if not words:
            return {}
        expression = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self.db.execute(
            "select key, -bm25(ref, 0.0, 5.0, 1.0) from ref where ref match ?", [expression]
        )
        # bm25 can be ~0 for a word in nearly every paper; keep such matches retrieved.
        return {key: max(score, 1e-9) for key, score in rows}


def sanity_search_rank(query: str, docs: Sequence[Doc]) -> list[str]:
    """arxiv-sanity-lite's search_rank (see the module docstring for the source)."""
    qs = query.lower().strip().split()
    if not qs:
        return []

    def match(s: str) -> int:
        return sum(min(3, s.lower().count(qp)) for qp in qs)

    def matchu(s: str) -> int:
        return sum(int(s.lower().count(qp) > 0) for qp in qs)

    pairs = []
    for doc in docs:
        score = 10.0 * matchu(doc.authors) + 20.0 * matchu(doc.title) + 1.0 * match(doc.abstract)
        if score > 0:
            pairs.append((score, doc.id))
    pairs.sort(reverse=True)
    return [key for _, key in pairs]
