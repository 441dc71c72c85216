"""Ranked full-text lookup over papers, safe for any text a user types: user text is cut
into word tokens, never passed to a query language; BM25 ranks on the tantivy index
(`db.text_index`), or on SQLite's FTS5 when that index cannot answer at once."""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database
from tantivy import Occur, Query

from db import text_index
from db.papers import decode

log = logging.getLogger(__name__)

MAX_TOKENS = 32
MAX_TOKEN_CHARS = 64
# bm25() weights, in the order of the FTS columns: title, names, keywords, abstract_text.
WEIGHTS = (6.0, 10.0, 3.0, 1.0)
_TOKEN = re.compile(r"\w+", re.UNICODE)


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


def query_key(query: str) -> str:
    folded = unicodedata.normalize("NFKC", query).casefold()
    return "".join(char for char in folded if char.isalnum())


def index_terms(query: str) -> list[str]:
    """The index terms `query` asks for: its words as the index cuts them, then the
    run-together forms of 2 and 3 neighbours ("alpha dpo" -> "alphadpo")."""
    words: list[str] = []
    for token in tokens(query):
        for word in text_index.analyze(token):
            if word not in words:
                words.append(word)
    words = words[:MAX_TOKENS]
    terms = list(words)
    for size in (2, 3):
        for start in range(len(words) - size + 1):
            joined = "".join(words[start : start + size])
            if joined not in terms and len(joined) <= MAX_TOKEN_CHARS:
                terms.append(joined)
    return terms


def search_papers(db: Database, query: str, limit: int = 10) -> list[Hit]:
    """Papers matching `query`, best first, at most `limit`. Never raises on odd user input.

    Each token, with its run-together forms ("alpha dpo" also matches "AlphaDPO"), is ORed
    with the others. A paper whose method name is the query comes first; the rest follow
    by weighted BM25 over title, names, keywords and abstract. On the tantivy index only
    the top `limit` rows are read from SQLite; when it cannot answer (inside a write
    transaction, its writer busy elsewhere, a read-only folder) FTS5 answers instead:
    slower on a large store, still correct."""
    if not tokens(query) or limit <= 0:
        return []
    try:
        index = text_index.ready(db)
    except text_index.IndexUnavailable as exc:
        log.info("lookup on FTS5: the search index cannot answer now (%s)", exc)
        return _search_fts(db, query, limit)
    try:
        return _search_index(db, index, query, limit)
    except (OSError, ValueError) as exc:  # tantivy's errors (a corrupt segment, I/O)
        log.warning("search index failed, this lookup uses FTS5: %s", exc)
        text_index.forget(db)
        return _search_fts(db, query, limit)


def _search_index(db: Database, index: text_index.TextIndex, query: str, limit: int) -> list[Hit]:
    terms = index_terms(query)
    if not terms:
        return []
    schema = index.schema
    clauses = [(Occur.Should, Query.term_query(schema, text_index.TEXT, term)) for term in terms]
    ranked = Query.boolean_query(clauses)
    searcher = index.searcher()
    found: dict[str, float] = {}
    key = query_key(query)
    if key:
        exact = Query.boolean_query(
            [
                (Occur.Must, Query.term_query(schema, text_index.KEYS, key)),
                (Occur.Should, ranked),
            ]
        )
        _collect(searcher, exact, limit, found)
    if len(found) < limit:
        _collect(searcher, ranked, limit, found)
    ids = list(found)[:limit]
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    rows = {row["id"]: row for row in db.query(f"select * from papers where id in ({marks})", ids)}
    # A paper deleted since the index last caught up is left out.
    return [
        Hit(decode(rows[paper_id]), round(found[paper_id], 4))
        for paper_id in ids
        if paper_id in rows
    ]


def _collect(searcher: Any, query: Any, limit: int, found: dict[str, float]) -> None:
    # count=False: counting every match would defeat the top-k pruning.
    for score, address in searcher.search(query, limit + len(found), count=False).hits:
        paper_id = searcher.doc(address).get_first("id")
        if paper_id not in found:
            found[paper_id] = float(score)


def _search_fts(db: Database, query: str, limit: int) -> list[Hit]:
    """The same lookup on FTS5: every match is scored, so it is slow on a large store."""
    expression = match_expression(query)
    if expression is None:
        return []
    key = query_key(query)
    weights = ", ".join(str(weight) for weight in WEIGHTS)
    sql = f"""
        select papers.*, -bm25(papers_fts, {weights}) as score,
               (papers.name_keys is not null and :key != ''
                and instr(' ' || papers.name_keys || ' ', ' ' || :key || ' ') > 0) as exact
        from papers_fts join papers on papers.rowid = papers_fts.rowid
        where papers_fts match :expression
        order by exact desc, score desc
        limit :limit
    """
    rows = db.query(sql, {"expression": expression, "key": key, "limit": limit})
    hits = []
    for row in rows:
        row.pop("exact")
        score = float(row.pop("score"))
        hits.append(Hit(decode(row), round(score, 4)))
    return hits


def fts_count(db: Database, expression: str) -> int:
    """How many papers match the FTS5 `expression`."""
    sql = "select count(*) from papers_fts where papers_fts match ?"
    return int(db.execute(sql, [expression]).fetchone()[0])


def fts_ids(db: Database, expression: str, limit: int) -> list[str]:
    """The ids of the first `limit` papers matching the FTS5 `expression`, by plain
    (unweighted) bm25, best first."""
    sql = """
        select papers.id from papers_fts join papers on papers.rowid = papers_fts.rowid
        where papers_fts match ? order by bm25(papers_fts) limit ?
    """
    return [row[0] for row in db.execute(sql, [expression, limit])]


def papers_with_id_prefix(db: Database, prefix: str, limit: int = 10) -> list[dict[str, Any]]:
    """Id and title of the papers whose id starts with `prefix` (case-insensitive), by id."""
    escaped = prefix.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    sql = "select id, title from papers where id like ? escape '\\' order by id limit ?"
    return list(db.query(sql, [escaped + "%", limit]))


def papers_with_arxiv_id(db: Database, arxiv_id: str, limit: int = 10) -> list[dict[str, Any]]:
    """Papers whose page or arXiv link is the abstract page of `arxiv_id` (no version)."""
    pages = [f"{scheme}://arxiv.org/abs/{arxiv_id}" for scheme in ("https", "http")]
    sql = "select * from papers where arxiv_url in (?, ?) or url in (?, ?) order by id limit ?"
    return [decode(row) for row in db.query(sql, [*pages, *pages, limit])]
