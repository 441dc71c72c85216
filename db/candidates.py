"""What a digest reads to pick papers: the papers new in a window of time, and the
backlog's full-text matches. Rows come as stored (JSON columns as text: `papers.decode`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from db.search import ranked_sql
from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]

# A paper is new: first stored, or first published, after `since`, and published no earlier
# than `stale`. Timestamps compare as strings (all ISO UTC). `added_at >= since`, not `>`:
# stamps are to the second, and a paper stored just after the previous digest's query, in
# the second it was built, was not in it (those of that second it did take are claimed).
# Two indexed ranges, not one OR: with the OR, SQLite takes `added_at <= :now` (the whole
# store) from the index and tests every row.
NEW_PAPERS = (
    "select * from papers where rowid in ("
    "select rowid from papers where added_at >= :since and added_at <= :now "
    "and (published_at is null or published_at > :stale) "
    "union select rowid from papers where published_at > :since and published_at <= :now "
    "and added_at <= :now) order by added_at"
)

# The columns that tell a window's papers and the version of each. A merge stamps
# `updated_at` with the ingest's clock, so a second merge in the same second would go
# unseen: the lengths of the columns a digest scores or shows are compared too (cheap
# beside reading the text itself).
WINDOW_KEYS = NEW_PAPERS.replace(
    "select *",
    "select id, updated_at, added_at, published_at, length(title), length(names), "
    "length(keywords), length(abstract_text), length(abstract), length(authors), "
    "length(links)",
)

# What scoring an archive candidate reads: the full row is read only for papers picked.
ARCHIVE_COLUMNS = "id, title, names, keywords, abstract, abstract_text, added_at, updated_at"


def new_papers(db: Store, since: str, stale: str, now: str) -> Iterator[Row]:
    """The papers new in the window (stored by `now`; see NEW_PAPERS), by `added_at`."""
    return db.iterate(NEW_PAPERS, {"now": now, "since": since, "stale": stale})


def window_keys(db: Store, since: str, stale: str, now: str) -> tuple[tuple[Any, ...], ...]:
    """The window's papers' ids and versions (WINDOW_KEYS' columns), in `new_papers`'
    order: equal while the window's papers are unchanged."""
    query = {"now": now, "since": since, "stale": stale}
    return tuple(tuple(row) for row in db.execute(WINDOW_KEYS, query).fetchall())


def ranked_matches(db: Store, expression: str, limit: int) -> list[int]:
    """The rowids of the first `limit` papers matching the FTS5 `expression`, best rank
    first (`search.ranked_sql`)."""
    if db.dialect == "sqlite":  # FTS5's own rowid and rank: no join with papers
        sql = "select rowid from papers_fts where papers_fts match ? order by rank limit ?"
        return [row[0] for row in db.execute(sql, [expression, limit]).fetchall()]
    sql, params = ranked_sql(db, "papers.rowid", expression, limit)
    return [row[0] for row in db.execute(sql, params).fetchall()]


def archive_rows(db: Store, rowids: list[int], built_at: str) -> Iterator[Row]:
    """ARCHIVE_COLUMNS of the papers among `rowids` stored by `built_at`, in no set order."""
    return db.iterate(
        f"select {ARCHIVE_COLUMNS} from papers where rowid in "
        f"({', '.join('?' for _ in rowids)}) and added_at <= ?",
        [*rowids, built_at],
    )


def stored_by(db: Store, paper_id: str, at: str) -> Iterator[Row]:
    """The paper's row if it was stored by `at` (none otherwise)."""
    return iter(db.query("select * from papers where id = ? and added_at <= ?", [paper_id, at]))
