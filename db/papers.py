"""Query functions for papers, their aliases (external ids) and ingest runs. Rows are plain
dicts; the list columns (JSON_COLUMNS) are Python lists here and JSON text in SQLite, except
where a function says it returns rows as stored (`decode` them)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from db.store import Store

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
    # PostgreSQL-only columns (the full-text vector, the rowid): rows read alike on both.
    decoded.pop("search_vector", None)
    decoded.pop("rowid", None)
    for key in JSON_COLUMNS:
        if isinstance(decoded.get(key), str):
            decoded[key] = json.loads(decoded[key])
    return decoded


def get_paper(db: Store, paper_id: str) -> Row | None:
    rows = list(db.query("select * from papers where id = ?", [paper_id]))
    return decode(rows[0]) if rows else None


def rows_with_ids(db: Store, paper_ids: list[str]) -> Iterator[Row]:
    """The rows of the stored papers among `paper_ids` (one bound parameter each), as
    stored (`decode` them), in no set order."""
    marks = ", ".join("?" for _ in paper_ids)
    return iter(db.query(f"select * from papers where id in ({marks})", paper_ids))


# What scoring a paper reads, and what tells its version (a cache key): not the whole row.
TEXT_COLUMNS = "id, title, names, keywords, abstract, abstract_text, updated_at"


def text_rows(db: Store, paper_ids: list[str]) -> Iterator[Row]:
    """TEXT_COLUMNS of the stored papers among `paper_ids`, in one query whatever their
    number (one JSON array parameter), in no set order."""
    each = (
        "json_each(?)" if db.dialect == "sqlite" else "jsonb_array_elements_text(cast(? as jsonb))"
    )
    sql = f"select {TEXT_COLUMNS} from papers where id in (select value from {each})"
    return iter(db.query(sql, [json.dumps(paper_ids)]))


def all_texts(db: Store) -> Iterator[Row]:
    """The id, title, abstract and abstract_text of every paper, by id."""
    return db.iterate("select id, title, abstract, abstract_text from papers order by id")


def all_ids(db: Store) -> Iterator[str]:
    """Every paper's id, in no set order."""
    return (row[0] for row in db.execute("select id from papers"))


def paper_id_for_alias(db: Store, alias: str) -> str | None:
    rows = list(db.query("select paper_id from paper_aliases where alias = ?", [alias]))
    return str(rows[0]["paper_id"]) if rows else None


def aliases_of(db: Store, paper_id: str, prefix: str) -> list[str]:
    """The aliases of `paper_id` that start with `prefix` (e.g. "arXiv:")."""
    return [
        str(row["alias"])
        for row in db.query(
            "select alias from paper_aliases where paper_id = ? and substr(alias, 1, ?) = ?",
            [paper_id, len(prefix), prefix],
        )
    ]


def insert_paper(db: Store, row: Row) -> None:
    """One plain INSERT: sqlite-utils' `insert()` inspects the table on every call, a large
    part of the time ingest holds the write lock."""
    encoded = _encode(row)
    columns = ", ".join(f'"{name}"' for name in encoded)  # names from our code, not input
    marks = ", ".join("?" for _ in encoded)
    db.execute(f"insert into papers ({columns}) values ({marks})", list(encoded.values()))


def update_paper(db: Store, paper_id: str, changes: Row) -> None:
    db.update("papers", {"id": paper_id}, _encode(changes))


def add_alias(db: Store, alias: str, paper_id: str) -> None:
    db.execute(
        "insert into paper_aliases (alias, paper_id) values (?, ?) on conflict do nothing",
        [alias, paper_id],
    )


def resolve_paper(db: Store, ref: str) -> Row | None:
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
            db.query(
                "select id from papers where lower(id) like ? escape '\\' limit 2",
                [escaped + "%"],
            )
        )
        if len(rows) == 1:
            return get_paper(db, rows[0]["id"])
    return None


def count_papers(db: Store) -> int:
    return int(db.execute("select count(*) from papers").fetchone()[0])


def record_ingest(db: Store, row: Row) -> None:
    db.insert("ingests", _encode(row) | {"files": json.dumps(row["files"], ensure_ascii=False)})


def last_ingest(db: Store) -> Row | None:
    """The last ingest, with "unfinished": the latest ingest that did not complete and
    that no later complete ingest of the same files (by name) finished, else None. A
    file left half stored stays known after other files are ingested."""
    rows = list(db.query("select * from ingests order by id desc limit 1"))
    if not rows:
        return None
    row = _ingest_row(rows[0])
    row["unfinished"] = None
    open_rows = db.query(
        "select * from ingests where status is not null and status != 'complete' "
        "order by id desc limit 50"
    )
    for candidate in open_rows:
        names = _file_names(json.loads(candidate["files"]))
        later = db.query(
            "select files from ingests where status = 'complete' and id > ?", [candidate["id"]]
        )
        if not any(_file_names(json.loads(done["files"])) == names for done in later):
            row["unfinished"] = _ingest_row(candidate)
            break
    return row


def _ingest_row(raw: Row) -> Row:
    row = dict(raw)
    row["files"] = json.loads(row["files"])
    return row


def _file_names(files: list[str]) -> list[str]:
    return sorted(name.replace("\\", "/").rsplit("/", 1)[-1] for name in files)


def papers_with_title_key(db: Store, key: str) -> list[Row]:
    """Papers whose real title normalises to `key` (id and authors only)."""
    return [
        {"id": row["id"], "authors": json.loads(row["authors"] or "[]")}
        for row in db.query("select id, authors from papers where title_key = ?", [key])
    ]


def papers_without_title_key(db: Store) -> list[Row]:
    """Papers stored before titles were keyed (title_key NULL), id and title."""
    return [
        dict(row)
        for row in db.query("select id, title, title_derived from papers where title_key is null")
    ]


def set_title_key(db: Store, paper_id: str, key: str) -> None:
    db.execute("update papers set title_key = ? where id = ?", [key, paper_id])


# --- batched writes and lookups for large ingests ----------------------------------------

# Bound parameters per statement: SQLite's default limit is 32,766 since 3.32, 999 before.
MAX_PARAMETERS = 900


def _insert_sql(columns: list[str]) -> str:
    """The INSERT of one paper's `columns`, for `executemany`."""
    names = ", ".join(f'"{name}"' for name in columns)  # names from our code, not input
    marks = ", ".join("?" for _ in columns)
    return f"insert into papers ({names}) values ({marks})"


def insert_papers(db: Store, rows: list[Row]) -> None:
    """Plain INSERTs of many new papers in one `executemany` (their keys must be the same:
    rows built by one function). The FTS5 index is kept by the table's triggers."""
    if not rows:
        return
    columns = list(rows[0])
    encoded = (
        [
            json.dumps(row[name], ensure_ascii=False) if name in JSON_COLUMNS else row[name]
            for name in columns
        ]
        for row in rows
    )
    db.executemany(_insert_sql(columns), encoded)


def insert_encoded_papers(db: Store, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    """`insert_papers` for rows encoded already (by the ingest's worker process, which has
    a core to spare): each a tuple of `columns`' values in order, the JSON
    columns as `json.dumps(value, ensure_ascii=False)` text."""
    if not rows:
        return
    db.executemany(_insert_sql(columns), rows)


def add_aliases(db: Store, pairs: list[tuple[str, str]]) -> None:
    """Many (alias, paper id) pairs; an alias already taken keeps its paper."""
    db.executemany(
        "insert into paper_aliases (alias, paper_id) values (?, ?) on conflict do nothing", pairs
    )


def _present(db: Store, sql: str, values: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(values), MAX_PARAMETERS):
        part = values[start : start + MAX_PARAMETERS]
        marks = ", ".join("?" for _ in part)
        found.update(str(row[0]) for row in db.execute(sql.format(marks=marks), part))
    return found


def existing_ids(db: Store, ids: list[str]) -> set[str]:
    """Those of `ids` that are stored papers' ids (one query per 900)."""
    return _present(db, "select id from papers where id in ({marks})", ids)


def existing_aliases(db: Store, aliases: list[str]) -> set[str]:
    """Those of `aliases` that are stored aliases."""
    return _present(db, "select alias from paper_aliases where alias in ({marks})", aliases)


def existing_title_keys(db: Store, keys: list[str]) -> set[str]:
    """Those of `keys` that some stored paper's title has (indexed)."""
    return _present(db, "select title_key from papers where title_key in ({marks})", keys)


def start_ingest(db: Store, row: Row) -> int:
    """Record an ingest that is starting to store papers (`status` "running"); its id."""
    encoded = _encode(row) | {"files": json.dumps(row["files"], ensure_ascii=False)}
    return int(db.insert("ingests", encoded, returning="id"))


def update_ingest(db: Store, ingest_id: int, changes: Row) -> None:
    """Progress or the end of an ingest: counts, `done`, `status`, `error`."""
    db.update("ingests", {"id": ingest_id}, changes)


def mark_ingest_stopped(db: Store, ingest_id: int) -> None:
    """Set the ingest's status alone to "stopped", in place: the row keeps its size."""
    db.execute("update ingests set status = 'stopped' where id = ?", [ingest_id])


def last_ingest_id(db: Store) -> int:
    """The id of the last ingest recorded, 0 for none (sqlite3.Error: no `ingests` table)."""
    return int(db.execute("select coalesce(max(id), 0) from ingests").fetchone()[0])


def ingests_after(db: Store, ingest_id: int) -> list[Row]:
    """The ingests recorded after `ingest_id`, latest first, as stored (`files` as JSON
    text)."""
    return list(db.query("select * from ingests where id > ? order by id desc", [ingest_id]))
