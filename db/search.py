"""Ranked full-text lookup over papers, safe for any text a user types: user text is cut
into word tokens, never passed to a query language; BM25 ranks on the tantivy index
(`db.text_index`), or on SQLite's FTS5 when that index cannot answer at once."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tantivy import Occur, Query

from db import text_index
from db.papers import decode
from db.store import Store

log = logging.getLogger(__name__)

MAX_TOKENS = 32
MAX_TOKEN_CHARS = 64
# bm25() weights, in the order of the FTS columns: title, names, keywords, abstract_text.
WEIGHTS = (6.0, 10.0, 3.0, 1.0)
_TOKEN = re.compile(r"\w+", re.UNICODE)
_INITIAL = re.compile(r"(?<!\w)([^\W\d_])\.")


@dataclass(frozen=True)
class Hit:
    paper: dict[str, Any]
    score: float


def tokens(query: str) -> list[str]:
    """The distinct word tokens of `query`, lower-cased, at most MAX_TOKENS of them."""
    folded = unicodedata.normalize("NFKC", query).casefold()
    found: list[str] = []
    for token in _TOKEN.findall(folded):
        token = token[:MAX_TOKEN_CHARS]
        if token not in found:
            found.append(token)
        if len(found) == MAX_TOKENS:
            break
    return found


def match_expression(query: str) -> str | None:
    """An FTS5 MATCH expression for `query`, or None if it has no words at all."""
    words = tokens(query)
    if not words:
        return None
    terms = list(words)
    # Names written apart ("alpha dpo", "res dex") are one token in the index.
    for size in (2, 3):
        for start in range(len(words) - size + 1):
            joined = "".join(words[start : start + size])
            if joined not in terms:
                terms.append(joined)
    return " OR ".join('"' + term.replace('"', "") + '"' for term in terms)


def text_words(query: str) -> str:
    """`query` as searched in the papers' text: without its initials ("S. Levine",
    "Levine, S."), which name an author only: as a word "s" matches every "LLM's", and
    run together "K. An" would be "kan"."""
    return _INITIAL.sub(" ", query)


def query_key(query: str) -> str:
    """`query` as one lookup key: its letters and digits, folded; initials ("K. An") left
    out, as a name is no method's key."""
    folded = unicodedata.normalize("NFKC", text_words(query)).casefold()
    return "".join(char for char in folded if char.isalnum())


def _words(query: str) -> list[str]:
    """The distinct index words of `query`, at most MAX_TOKENS."""
    words: list[str] = []
    for token in tokens(query):
        for word in text_index.analyze(token):
            if word not in words:
                words.append(word)
    return words[:MAX_TOKENS]


def index_terms(query: str) -> list[str]:
    """The index terms `query` asks for: its words as the index cuts them, then the
    run-together forms of 2 and 3 neighbours ("alpha dpo" -> "alphadpo")."""
    words = _words(query)
    terms = list(words)
    for size in (2, 3):
        for start in range(len(words) - size + 1):
            joined = "".join(words[start : start + size])
            if joined not in terms and len(joined) <= MAX_TOKEN_CHARS:
                terms.append(joined)
    return terms


# An author match's weight against the text's: a paper by "Levine" ranks above one whose
# abstract only names him (an author's short field already scores high in BM25).
AUTHOR_BOOST = 4.0
# A query of at most this many words, none with a digit, may be an author's name.
MAX_NAME_WORDS = 4
# At most this many words or phrases are left out of one lookup: each costs a clause, and a
# check of every row read.
MAX_EXCLUDED = 8
# With words to leave out as a phrase, rows are read in rounds of growing depth until
# `limit` are left, up to this many.
EXCLUDE_DEPTH_MAX = 2_000


def excluded_words(exclude: Sequence[str]) -> list[list[str]]:
    """Each text to leave out as the index's words (one word, or a phrase); none empty;
    the first `MAX_EXCLUDED` only (callers refuse more: `digests.lookup`)."""
    found = [text_index.analyze(text)[:MAX_TOKENS] for text in exclude[:MAX_EXCLUDED]]
    return [words for words in found if words]


def _field_words(paper: dict[str, Any]) -> list[list[str]]:
    """Each searched field of `paper` as the index cuts it: title, method names, keywords,
    abstract, then each author's name (its words, then its words run together)."""
    keywords = paper.get("keywords") or []
    fields = [
        str(paper.get("title") or ""),
        str(paper.get("names") or ""),
        " ".join(str(word) for word in keywords) if isinstance(keywords, list) else str(keywords),
        str(paper.get("abstract_text") or paper.get("abstract") or ""),
    ]
    found = [text_index.analyze(field) for field in fields]
    found.extend(text_index.author_text([name]).split() for name in paper.get("authors") or [])
    return found


def _holds(fields: list[list[str]], words: list[str]) -> bool:
    size = len(words)
    return any(
        found[i : i + size] == words for found in fields for i in range(len(found) - size + 1)
    )


def mentions(paper: dict[str, Any], words: list[str]) -> bool:
    """Whether `words`, in this order, are in the paper's title, method names, keywords,
    abstract or one author's name as the index cuts them (the index does not stem)."""
    return _holds(_field_words(paper), words)


def mentions_any(paper: dict[str, Any], excluded: Sequence[list[str]]) -> bool:
    """Whether the paper `mentions` any of `excluded`; its fields are cut once."""
    if not excluded:
        return False
    fields = _field_words(paper)
    return any(_holds(fields, words) for words in excluded)


def initial_keys(query: str) -> list[str]:
    """The initial + surname terms a query holding an initial asks for: "S. Levine",
    "S Levine", "Levine, S." and "Levine S" all give "slevine"; none without one."""
    words = _words(query)
    if len(words) > MAX_NAME_WORDS:
        return []
    letters = [word for word in words if len(word) == 1 and word.isalpha()]
    others = [word for word in words if len(word) > 1]
    return [letter + other for letter in letters for other in others]


def _tier(paper: dict[str, Any], key: str) -> int:
    """0: the query is the paper's method name; 1: one of its own acronyms; 2: neither."""
    if key and key in str(paper.get("name_keys") or "").split():
        return 0
    own = text_index.own_acronyms(
        str(paper.get("title") or ""), str(paper.get("abstract_text") or "")
    )
    return 1 if key and key in own else 2


def exact_tier(paper: dict[str, Any], query: str) -> int:
    """How exactly `paper` is named by `query`: 0 when the query is its method name (a
    long form included), 1 when it is an acronym the paper names as its own (in its title,
    or defined in its abstract), 2 otherwise; a lower tier always ranks first."""
    return _tier(paper, query_key(query))


def search_papers(db: Store, query: str, limit: int = 10, exclude: Sequence[str] = ()) -> list[Hit]:
    """Papers matching `query`, best first, at most `limit`, none that `mentions` a text
    of `exclude` (a word, or words as a phrase). Never raises on odd user input.

    Each token, with its run-together forms ("alpha dpo" also matches "AlphaDPO"), is ORed
    with the others, over the text and the authors' names (all the query's words in the
    authors, or a run-together name: "Sergey Levine"; an initial with a surname, only when
    the query has an initial: "S. Levine", "Levine, S."). Papers the query
    names exactly come first (`exact_tier`: its method name, then its own acronym); the
    rest follow by weighted BM25 over title, names, keywords and abstract, plus the
    authors'. On the tantivy index only the top rows are read from SQLite; when it cannot
    answer (inside a write transaction, its writer busy elsewhere, a read-only folder)
    FTS5 answers instead: slower on a large store, still correct (it has no authors
    column: their names are then searched by a bounded scan, `_by_authors`, only when the
    words find few papers)."""
    if not tokens(query) or limit <= 0:
        return []
    excluded = excluded_words(exclude)
    try:
        index = text_index.ready(db)
    except text_index.IndexUnavailable as exc:
        log.info("lookup on FTS5: the search index cannot answer now (%s)", exc)
        return _search_fts(db, query, limit, excluded)
    try:
        return _search_index(db, index, query, limit, excluded)
    except (OSError, ValueError) as exc:  # tantivy's errors (a corrupt segment, I/O)
        log.warning("search index failed, this lookup uses FTS5: %s", exc)
        text_index.forget(db)
        return _search_fts(db, query, limit, excluded)


def _ranked_query(schema: Any, query: str, excluded: list[list[str]]) -> tuple[Any, list[Any]]:
    """The ranked query (text terms, then the authors'), and the clauses leaving out
    single excluded words (phrases are checked on the rows read)."""
    terms = index_terms(query)
    words = _words(query)
    clauses = [
        (Occur.Should, Query.term_query(schema, text_index.TEXT, term))
        for term in index_terms(text_words(query))
    ]
    every = [(Occur.Must, Query.term_query(schema, text_index.AUTHORS, word)) for word in words]
    joined = [
        (Occur.Should, Query.term_query(schema, text_index.AUTHORS, term))
        for term in terms[len(words) :]
    ]
    # "S. Levine": the initial with the surname, and the surname as an author's word.
    joined.extend(
        (
            Occur.Should,
            Query.boolean_query(
                [
                    (Occur.Must, Query.term_query(schema, text_index.INITIALS, key)),
                    (Occur.Must, Query.term_query(schema, text_index.AUTHORS, key[1:])),
                ]
            ),
        )
        for key in initial_keys(query)
    )
    for part in (every, joined):
        if part:
            clauses.append(
                (Occur.Should, Query.boost_query(Query.boolean_query(part), AUTHOR_BOOST))
            )
    leave_out = [
        (Occur.MustNot, Query.term_query(schema, field, words[0]))
        for words in excluded
        if len(words) == 1
        for field in (text_index.TEXT, text_index.AUTHORS)
    ]
    return Query.boolean_query(clauses + leave_out), leave_out


def _search_index(
    db: Store,
    index: text_index.TextIndex,
    query: str,
    limit: int,
    excluded: list[list[str]],
) -> list[Hit]:
    if not index_terms(query):
        return []
    schema = index.schema
    ranked, leave_out = _ranked_query(schema, query, excluded)
    tiers = []
    key = query_key(query)
    if key:
        for field in (text_index.KEYS, text_index.OWN):
            must = (Occur.Must, Query.term_query(schema, field, key))
            tiers.append(Query.boolean_query([must, (Occur.Should, ranked), *leave_out]))
    tiers.append(ranked)
    phrases = [words for words in excluded if len(words) > 1]
    searcher = index.searcher()
    depth = limit
    while True:
        found: dict[str, float] = {}
        for tier in tiers:
            if len(found) < depth:
                _collect(searcher, tier, depth, found)
        hits = _read_hits(db, list(found)[:depth], found, phrases)
        if len(hits) >= limit or len(found) < depth or depth >= EXCLUDE_DEPTH_MAX:
            return hits[:limit]
        depth = min(EXCLUDE_DEPTH_MAX, depth * 4)


def _read_hits(
    db: Store, ids: list[str], scores: dict[str, float], phrases: list[list[str]]
) -> list[Hit]:
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    rows = {row["id"]: row for row in db.query(f"select * from papers where id in ({marks})", ids)}
    # A paper deleted since the index last caught up is left out.
    hits = [Hit(decode(rows[i]), round(scores[i], 4)) for i in ids if i in rows]
    return [hit for hit in hits if not mentions_any(hit.paper, phrases)]


def _collect(searcher: Any, query: Any, limit: int, found: dict[str, float]) -> None:
    # count=False: counting every match would defeat the top-k pruning.
    for score, address in searcher.search(query, limit + len(found), count=False).hits:
        paper_id = searcher.doc(address).get_first("id")
        if paper_id not in found:
            found[paper_id] = float(score)


# The FTS5 lookup reads at least this many rows, so that own acronyms (not a column)
# can be sorted first among them.
FTS_DEPTH = 50


def _search_fts(db: Store, query: str, limit: int, excluded: Sequence[list[str]] = ()) -> list[Hit]:
    """The same lookup on FTS5: every match is scored, so it is slow on a large store."""
    expression = match_expression(text_words(query))
    key = query_key(query)
    exact = (
        "(papers.name_keys is not null and :key != '' "
        "and ' ' || papers.name_keys || ' ' like '% ' || :key || ' %')"
    )
    if db.dialect == "sqlite":
        weights = ", ".join(str(weight) for weight in WEIGHTS)
        score, source, params = f"-bm25(papers_fts, {weights})", FTS5_SOURCE, dict[str, str]()
    else:
        tsquery, params = pg_tsquery(expression or "")
        score = f"ts_rank('{PG_WEIGHTS}', search_vector, {tsquery})"
        source = "papers"
        source += f" where search_vector @@ {tsquery}"
    sql = f"""
        select papers.*, {score} as score, {exact} as exact from {source}
        order by exact desc, score desc limit :limit
    """
    depth = max(limit, FTS_DEPTH)
    while True:
        rows: list[dict[str, Any]] = []
        if expression is not None:
            query_params = {"expression": expression, "key": key, "limit": depth, **params}
            rows = list(db.query(sql, query_params))
        hits = []
        for row in rows:
            row.pop("exact")
            row.pop("rowid", None)
            hits.append(Hit(decode(row), round(float(row.pop("score")), 4)))
        if len(hits) < depth:  # a paper by the author before one that only names him
            hits = _by_authors(db, query, {hit.paper["id"] for hit in hits}, limit) + hits
        hits = [hit for hit in hits if not mentions_any(hit.paper, excluded)]
        if len(hits) >= limit or len(rows) < depth or depth >= EXCLUDE_DEPTH_MAX:
            break
        depth = min(EXCLUDE_DEPTH_MAX, depth * 4)
    hits.sort(key=lambda hit: _tier(hit.paper, key))  # stable: by score within a tier
    return hits[:limit]


# The FTS5 lookup has no authors column: it scans `papers.authors` of at most this many of
# the newest papers (0.6 s; the whole table at a million papers: 3-10 s).
AUTHOR_SCAN_ROWS = 200_000
_FOLDS_TO = frozenset("aceinosuyz")  # letters an accented letter often folds to


def _like_pattern(word: str) -> str:
    """A LIKE pattern finding `word` in stored names whatever their accents ("muller" finds
    "Müller"): a letter an accented one folds to may be any one character."""
    escaped = "".join("_" if char in _FOLDS_TO else char for char in word if char.isalnum())
    return f"%{escaped}%"


def _by_authors(db: Store, query: str, seen: set[str], limit: int) -> list[Hit]:
    """Papers whose authors match `query` as the index's author clauses do (every word of
    it in one paper's authors, its words run together as one name, or an initial with a
    surname: `initial_keys`), for the FTS5 lookup, which has no authors column: a scan of
    the newest `AUTHOR_SCAN_ROWS` papers, only for a query that may be a name (at most
    `MAX_NAME_WORDS` words, no digit)."""
    words = _words(query)
    if not words or len(words) > MAX_NAME_WORDS or any(c.isdigit() for c in "".join(words)):
        return []
    wanted = set(index_terms(query)[len(words) :])
    initials = set(initial_keys(query))
    # SQLite narrows the scan by one word (the longest); the names are checked below.
    longest = max(words, key=len)
    sql = """
        select * from papers
        where rowid > (select coalesce(max(rowid), 0) from papers) - ? and lower(authors) like ?
        order by rowid desc
    """
    found = []
    for row in db.query(sql, [AUTHOR_SCAN_ROWS, _like_pattern(longest)]):
        paper = decode(row)
        names = set(text_index.author_text(paper.get("authors")).split())
        keys = set(text_index.author_initials(paper.get("authors")).split())
        if row["id"] not in seen and (set(words) <= names or wanted & names or initials & keys):
            found.append(Hit(paper, 0.0))
            if len(found) == limit:
                break
    return found


def matched_authors(authors: Sequence[Any], query: str) -> list[int]:
    """The positions of the names in `authors` that `query` names as the author clauses
    match one name: all its words, its words run together, or an initial with the
    surname ("levine", "Sergey Levine", "S. Levine" all name "Sergey Levine")."""
    words = set(_words(query))
    if not words or len(words) > MAX_NAME_WORDS:
        return []
    wanted = set(index_terms(query)) - words
    initials = set(initial_keys(query))
    found = []
    for place, name in enumerate(authors):
        names = set(text_index.author_text([name]).split())
        keys = set(text_index.author_initials([name]).split())
        if words <= names or wanted & names or initials & keys:
            found.append(place)
    return found


def fts_count(db: Store, expression: str) -> int:
    """How many papers match the FTS5 `expression`."""
    if db.dialect == "sqlite":
        sql, params = "select count(*) from papers_fts where papers_fts match :e", {"e": expression}
    else:
        tsquery, params = pg_tsquery(expression)
        sql = f"select count(*) from papers where search_vector @@ {tsquery}"
    return int(db.execute(sql, params).fetchone()[0])


def fts_ids(db: Store, expression: str, limit: int) -> list[str]:
    """The ids of the first `limit` papers matching the FTS5 `expression`, by plain
    (unweighted) bm25 (PostgreSQL: unweighted ts_rank), best first."""
    return [row[0] for row in db.execute(*ranked_sql(db, "papers.id", expression, limit))]


def ranked_sql(db: Store, column: str, expression: str, limit: int) -> tuple[str, dict[str, Any]]:
    """A query of `column` of the first `limit` papers matching the FTS5 `expression`,
    best unweighted rank first, with its parameters."""
    if db.dialect == "sqlite":
        sql = f"select {column} from {FTS5_SOURCE} order by bm25(papers_fts) limit :limit"
        return sql, {"expression": expression, "limit": limit}
    tsquery, params = pg_tsquery(expression)
    sql = (
        f"select {column} from papers where search_vector @@ {tsquery} "
        f"order by ts_rank('{{1, 1, 1, 1}}', search_vector, {tsquery}) desc, rowid limit :limit"
    )
    return sql, {**params, "limit": limit}


# The FTS5 lookup's rows; `:expression` is its MATCH expression.
FTS5_SOURCE = (
    "papers_fts join papers on papers.rowid = papers_fts.rowid where papers_fts match :expression"
)
# ts_rank's weights for labels D, C, B, A (abstract, keywords, title, names: the
# migration's labels), in WEIGHTS' proportions.
PG_WEIGHTS = "{0.1, 0.3, 0.6, 1.0}"
_FTS5_TERM = re.compile(r'"((?:[^"]|"")*)"|(\S+)')


def pg_tsquery(expression: str) -> tuple[str, dict[str, str]]:
    """The PostgreSQL tsquery for an FTS5 expression of quoted phrases or bare words
    joined by OR (what db/ callers build): SQL ORing one `phraseto_tsquery` per phrase,
    each phrase a parameter (`:q0`, `:q1`...), never part of the SQL."""
    phrases = []
    for match in _FTS5_TERM.finditer(expression):
        quoted, bare = match.groups()
        if quoted is None and bare == "OR":
            continue
        phrases.append(quoted.replace('""', '"') if quoted is not None else bare)
    params = {f"q{place}": phrase for place, phrase in enumerate(phrases)}
    parts = [f"phraseto_tsquery('english', :{name})" for name in params]
    joined = " || ".join(parts) or "''::tsquery"
    return f"({joined})", params


def papers_with_id_prefix(db: Store, prefix: str, limit: int = 10) -> list[dict[str, Any]]:
    """Id and title of the papers whose id starts with `prefix` (case-insensitive), by id."""
    escaped = prefix.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    sql = "select id, title from papers where lower(id) like ? escape '\\' order by id limit ?"
    return list(db.query(sql, [escaped + "%", limit]))


def papers_with_arxiv_id(db: Store, arxiv_id: str, limit: int = 10) -> list[dict[str, Any]]:
    """Papers whose page or arXiv link is the abstract page of `arxiv_id` (no version)."""
    pages = [f"{scheme}://arxiv.org/abs/{arxiv_id}" for scheme in ("https", "http")]
    sql = "select * from papers where arxiv_url in (?, ?) or url in (?, ?) order by id limit ?"
    return [decode(row) for row in db.query(sql, [*pages, *pages, limit])]
