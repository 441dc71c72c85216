"""`similar`: papers that share a paper's content, not just a name, found lexically on every
install: tf-idf-weighted words ask the search index for candidates, ordered by tf-idf
cosine (docs/explanation/architecture.md, "Lookup at scale"; docs/dev/relevance.md)."""

from __future__ import annotations

import itertools
import logging
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tantivy import Occur, Query

from db import text_index
from db.papers import count_papers, decode, rows_with_ids
from db.search import Hit, fts_count, fts_ids
from db.store import Store
from digests import semantic
from digests.semantic import Encoder

log = logging.getLogger(__name__)

QUERY_TERMS = 25  # the heaviest words asked of the index
CANDIDATES = 100  # papers re-ordered by cosine
TITLE_TF = 1  # extra term frequency of a title word (a title states the subject)
MIN_WORD = 3  # shorter words carry no subject ("rl" is kept by MIN_WORD_SHORT below)
# An abstract is read this far. Real ones stop well short (ICLR 2021's longest 4,966
# characters, the synthetic corpus's 5,206), but a record may hold 100 KB, and a
# `similar` among such candidates would be dozens of times dearer.
MAX_ABSTRACT_CHARS = 6_000

# Function words, and words every abstract uses whatever its subject.
STOP_WORDS = frozenset(
    (  # noqa: SIM905
        "a about above after again against all also am an and any are as at be because been "
        "before being below between both but by can could did do does doing down during each "
        "few for from further had has have having he her here hers him his how i if in into "
        "is it its itself just me more most my no nor not now of off on once only or other our "
        "ours out over own same she should so some such than that the their theirs them then "
        "there these they this those through to too under until up very was we were what when "
        "where which while who whom why will with would you your yours yet via thus however "
        "well may might must us one two three new show shows shown propose proposed paper "
        "approach method methods results result based using use used work existing"
    ).split()
)


@dataclass(frozen=True)
class Frequencies:
    """Document frequencies from one store: `df(word)` papers of `total` contain `word`."""

    total: int
    counts: Mapping[str, int]

    def idf(self, word: str) -> float:
        if " " in word:
            # A word pair: the index keeps no positions to count pairs in; a pair is at
            # least as rare as its rarer word (the sum and the mean ranked a little worse).
            first, second = word.split(" ", 1)
            return max(self.idf(first), self.idf(second))
        # Smoothed, as scikit-learn's TfidfVectorizer: a word in every paper still counts 1.
        return math.log((1 + self.total) / (1 + self.counts.get(word, 0))) + 1.0


def words(text: str) -> list[str]:
    """The content words of `text` as the search index cuts them, stop words left out."""
    return [
        word
        for word in text_index.analyze(text)
        if (len(word) >= MIN_WORD or word == "rl") and word not in STOP_WORDS and not word.isdigit()
    ]


def term_counts(paper: Mapping[str, Any]) -> Counter[str]:
    """Term frequencies of a paper's title and abstract, words and neighbouring pairs
    ("a b"); a title word counts TITLE_TF more."""
    title = words(str(paper.get("title") or ""))
    abstract = words(
        str(paper.get("abstract_text") or paper.get("abstract") or "")[:MAX_ABSTRACT_CHARS]
    )
    counts = Counter(abstract)
    counts.update(title)
    for part in (title, abstract):
        counts.update(f"{a} {b}" for a, b in itertools.pairwise(part))
    for word in set(title):
        counts[word] += TITLE_TF
    return counts


def vector(counts: Mapping[str, float], freqs: Frequencies) -> dict[str, float]:
    """The l2-normalised tf-idf vector: (1 + log tf) * idf per word."""
    weights = {
        word: (1.0 + math.log(count)) * freqs.idf(word) for word, count in counts.items() if count
    }
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    return {word: w / norm for word, w in weights.items()}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    if len(b) < len(a):
        a, b = b, a
    return sum(weight * b[word] for word, weight in a.items() if word in b)


def similar_papers(
    db: Store, paper: Mapping[str, Any], limit: int = 5, model: Encoder | None = None
) -> list[Hit]:
    """Up to `limit` stored papers closest to `paper`, best first, `paper` itself left out.

    With the semantic extra and stored embeddings (or `model` and its vectors): the
    nearest by meaning (`digests.semantic`), scores are cosines. Otherwise by content
    words (`lexical_similar`)."""
    near = semantic.similar_hits(db, paper, limit, model)
    if near is not None:
        return near
    return lexical_similar(db, paper, limit)


def lexical_similar(db: Store, paper: Mapping[str, Any], limit: int = 5) -> list[Hit]:
    """Up to `limit` stored papers closest to `paper` in content words, best first, `paper`
    itself left out. Hit scores are tf-idf cosines in 0..1. Empty when the paper has no
    content words or nothing shares one. The QUERY_TERMS heaviest words (idf from the
    store's search index) find CANDIDATES papers, which are ordered by cosine; when the
    index cannot answer, FTS5 finds them (unweighted OR) and counts the words."""
    counts = term_counts(paper)
    if not counts or limit <= 0:
        return []
    try:
        index = text_index.ready(db)
    except text_index.IndexUnavailable as exc:
        log.info("similar on FTS5: the search index cannot answer now (%s)", exc)
        index = None
    if index is not None:
        try:
            return _rank(db, paper, counts, _IndexSource(index), limit)
        except (OSError, ValueError) as exc:  # tantivy's errors (a corrupt segment, I/O)
            log.warning("search index failed, this similar uses FTS5: %s", exc)
            text_index.forget(db)
    return _rank(db, paper, counts, _FtsSource(db), limit)


class _IndexSource:
    """Document frequencies and weighted candidates from the tantivy index."""

    def __init__(self, index: text_index.TextIndex) -> None:
        self.index = index
        self.searcher = index.searcher()

    def frequencies(self, wanted: set[str]) -> Frequencies:
        counts = {w: int(self.searcher.doc_freq(text_index.TEXT, w)) for w in wanted}
        return Frequencies(int(self.searcher.num_docs), counts)

    def candidates(self, query: Mapping[str, float], limit: int) -> list[str]:
        schema = self.index.schema
        clauses = [
            (Occur.Should, Query.boost_query(Query.term_query(schema, text_index.TEXT, w), b))
            for w, b in query.items()
        ]
        hits = self.searcher.search(Query.boolean_query(clauses), limit, count=False).hits
        return [self.searcher.doc(address).get_first("id") for _, address in hits]


class _FtsSource:
    """The same from SQLite's FTS5 index (slower on a large store; unweighted OR)."""

    def __init__(self, db: Store) -> None:
        self.db = db

    def frequencies(self, wanted: set[str]) -> Frequencies:
        counts = {word: fts_count(self.db, '"' + word + '"') for word in wanted}
        return Frequencies(count_papers(self.db), counts)

    def candidates(self, query: Mapping[str, float], limit: int) -> list[str]:
        expression = " OR ".join('"' + word + '"' for word in query)
        return fts_ids(self.db, expression, limit)


def _rank(
    db: Store,
    paper: Mapping[str, Any],
    counts: Counter[str],
    source: _IndexSource | _FtsSource,
    limit: int,
) -> list[Hit]:
    freqs = source.frequencies({w for word in counts for w in word.split(" ")})
    mine = vector(counts, freqs)
    heaviest = sorted(
        ((w, v) for w, v in mine.items() if " " not in w), key=lambda item: (-item[1], item[0])
    )[:QUERY_TERMS]
    ids = [i for i in source.candidates(dict(heaviest), CANDIDATES + 1) if i != paper.get("id")]
    if not ids:
        return []
    rows = [decode(row) for row in rows_with_ids(db, ids)]
    # The candidates' words not yet counted (one index lookup each).
    theirs = {row["id"]: term_counts(row) for row in rows}
    unseen = {
        w for c in theirs.values() for word in c for w in word.split(" ") if w not in freqs.counts
    }
    if isinstance(source, _FtsSource) and unseen:
        # FTS5 counts a word's papers by reading its whole document list: on a 1M store the
        # candidates' ~3,000 other words would take seconds per similar (as while the
        # index is built at `paperboy run`'s start). Those words are not the
        # paper's, so they only scale a candidate's vector (its norm), never the shared
        # words' weights: the median document frequency of the paper's own words stands in.
        known = sorted(freqs.counts.values())
        typical = known[len(known) // 2] if known else 1
        more = Frequencies(freqs.total, dict.fromkeys(unseen, typical))
    else:
        more = source.frequencies(unseen)
    freqs = Frequencies(freqs.total, {**freqs.counts, **more.counts})
    scored = [(cosine(mine, vector(theirs[row["id"]], freqs)), row) for row in rows]
    scored.sort(key=lambda item: (-item[0], item[1]["id"]))
    return [Hit(row, round(score, 4)) for score, row in scored[:limit] if score > 0]
