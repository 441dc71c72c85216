"""Query functions for papers, their aliases (external ids) and ingest runs.

Rows go in and come out as plain dicts; the list columns (`links`, `keywords`,
`authors`, `sources`, `categories`, `affiliations`) are Python lists here and JSON text in SQLite.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlite_utils import Database

log = logging.getLogger(__name__)

Row = dict[str, Any]
JSON_COLUMNS = ("links", "keywords", "authors", "sources", "categories", "affiliations")
MIN_PREFIX = 4


def _encode(row: Row) -> Row:
    return {
        key: json.dumps(value, ensure_ascii=False) if key in JSON_COLUMNS else value
        for key, value in row.items()
    }


def decode(row: Row) -> Row:
    """A stored row with its JSON list columns decoded."""
    decoded = dict(row)
    for key in JSON_COLUMNS:
        if isinstance(decoded.get(key), str):
            decoded[key] = json.loads(decoded[key])
    return decoded


def get_paper(db: Database, paper_id: str) -> Row | None:
    rows = list(db.query("select * from papers where id = ?", [paper_id]))
    return decode(rows[0]) if rows else None


def paper_id_for_alias(db: Database, alias: str) -> str | None:
    rows = list(db.query("select paper_id from paper_aliases where alias = ?", [alias]))
    return str(rows[0]["paper_id"]) if rows else None


def aliases_of(db: Database, paper_id: str, prefix: str) -> list[str]:
    """The aliases of `paper_id` that start with `prefix` (e.g. "arXiv:")."""
    return [
        str(row["alias"])
        for row in db.query(
            "select alias from paper_aliases where paper_id = ? and substr(alias, 1, ?) = ?",
            [paper_id, len(prefix), prefix],
        )
    ]


def insert_paper(db: Database, row: Row) -> None:
    """One plain INSERT: sqlite-utils' `insert()` inspects the table on every call, which
    was half of the time ingest holds the write lock."""
    encoded = _encode(row)
    columns = ", ".join(f"[{name}]" for name in encoded)  # names from our code, not input
    marks = ", ".join("?" for _ in encoded)
    db.execute(f"insert into papers ({columns}) values ({marks})", list(encoded.values()))


def update_paper(db: Database, paper_id: str, changes: Row) -> None:
    db.table("papers").update(paper_id, _encode(changes))


def add_alias(db: Database, alias: str, paper_id: str) -> None:
    db.execute(
        "insert or ignore into paper_aliases (alias, paper_id) values (?, ?)", [alias, paper_id]
    )


def resolve_paper(db: Database, ref: str) -> Row | None:
    """A paper by id, by external id (OpenReview or arXiv id), or by a unique id prefix."""
    ref = ref.strip()
    if not ref:
        return None
    found = get_paper(db, ref) or get_paper(db, ref.lower())
    if found:
        return found
    aliased = paper_id_for_alias(db, ref)
    if aliased:
        return get_paper(db, aliased)
    if len(ref) >= MIN_PREFIX:
        escaped = ref.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = list(
            db.query("select id from papers where id like ? escape '\\' limit 2", [escaped + "%"])
        )
        if len(rows) == 1:
            return get_paper(db, rows[0]["id"])
    return None


def count_papers(db: Database) -> int:
    return int(db.execute("select count(*) from papers").fetchone()[0])


def record_ingest(db: Database, row: Row) -> None:
    db.table("ingests").insert(
        _encode(row) | {"files": json.dumps(row["files"], ensure_ascii=False)}
    )


def last_ingest(db: Database) -> Row | None:
    rows = list(db.query("select * from ingests order by id desc limit 1"))
    if not rows:
        return None
    row = dict(rows[0])
    row["files"] = json.loads(row["files"])
    return row


def papers_with_title_key(db: Database, key: str) -> list[Row]:
    """Papers whose real title normalises to `key` (id and authors only)."""
    return [
        {"id": row["id"], "authors": json.loads(row["authors"] or "[]")}
        for row in db.query("select id, authors from papers where title_key = ?", [key])
    ]


def papers_without_title_key(db: Database) -> list[Row]:
    """Papers stored before titles were keyed (title_key NULL), id and title."""
    return [
        dict(row)
        for row in db.query("select id, title, title_derived from papers where title_key is null")
    ]


def set_title_key(db: Database, paper_id: str, key: str) -> None:
    db.execute("update papers set title_key = ? where id = ?", [key, paper_id])
