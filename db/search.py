"""Ranked full-text lookup over papers, safe for any text a user types.

User text never reaches FTS5 syntax: it is cut into word tokens, each quoted, and
the tokens are OR-ed together (with their run-together forms, so "alpha dpo" also
matches "AlphaDPO"). BM25 ranks the matches, with title and method-name columns
weighted above the abstract; an exact method-name match always comes first.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

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


def search_papers(db: Database, query: str, limit: int = 10) -> list[Hit]:
    """Papers matching `query`, best first. Never raises on odd user input."""
    expression = match_expression(query)
    if expression is None or limit <= 0:
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
