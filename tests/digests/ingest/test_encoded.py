"""Rows sent by the worker as encoded tuples (`bulk.encode_row`) are
stored exactly as the dict rows they encode: same columns, same JSON text, same merges,
same rowid order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from db import open_db
from digests.ingest import bulk
from digests.ingest.pipeline import IngestSummary, prepare, read_file, store_row
from tests.conftest import NOW, seed_abstracts
from tests.fakes.ingest_files import abstract, prepared_rows, snapshot


def _rows(tmp_path: Path) -> list[tuple[dict[str, Any], str | None]]:
    """A chunk that mixes new papers with papers that merge into stored or earlier ones,
    with links, keywords, several authors and text that is not ASCII."""
    text = "\n".join(
        [
            "id\ttitle\tabstract\tauthors\tkeywords",
            f"or1\tMethod1: Learning Task 1 Offline\t{abstract(1)}\tAnn\trl; offline",
            f"or2\tA Second Paper About Things\t{abstract(2)} Code: https://github.com/a/b\tBo\t",
            f"or1\t\t{abstract(1)} Revised.\tAnn\t",  # the same external id
            f"\tA Second Paper About Things\t{abstract(3)}\tBo; Cy\t",  # same title, author
            f"\t\t{abstract(2)} Code: https://github.com/a/b\t\t",  # the same abstract
            f"or4\tÉtude d'un « cas » $\\alpha$\t{abstract(4)} Über ✓.\tDi; Zoë\tméthode",
            f"or4\tÉtude d'un « cas » $\\alpha$\t{abstract(4)} Über ✓.\tDi; Zoë\tméthode",
            f"or5\tYet Another Paper Entirely\t{abstract(5)}\tEd\t",
        ]
    )
    return prepared_rows(tmp_path / "mix.tsv", text)


def test_build_row_makes_the_columns_the_worker_encodes(tmp_path: Path) -> None:
    # Otherwise every row would travel as a dict (correct, but the saving is lost).
    for row, _ in _rows(tmp_path):
        assert tuple(row) == bulk.ROW_COLUMNS
        assert isinstance(bulk.encode_row(row), tuple)


def test_decoding_gives_the_row_back(tmp_path: Path) -> None:
    rows = [row for row, _ in _rows(tmp_path)]
    rows += [prepare(r, NOW) for r in read_file_seeds(tmp_path)]
    for row in rows:
        assert row is not None
        assert bulk.decode_row(bulk.encode_row(row)) == row
    unusual = {"id": "p1", "abstract": "x"}  # other columns: sent as they are
    assert bulk.encode_row(unusual) is unusual
    assert bulk.decode_row(unusual) is unusual


def read_file_seeds(tmp_path: Path) -> list[Any]:
    path = tmp_path / "seeds.tsv"
    lines = [
        "title\tabstract",
        *(f"Seed paper number {n}\t{a}" for n, a in enumerate(seed_abstracts())),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_file(path)


def _stored(rows: list[tuple[Any, str | None]]) -> tuple[list[dict[str, Any]], tuple[int, ...]]:
    db = open_db(":memory:")
    first = IngestSummary()
    last, external_id = rows[-1]
    store_row(db, bulk.decode_row(last), external_id, NOW, first)  # one stored before
    summary = IngestSummary()
    bulk.store_chunk(db, rows, NOW, summary)
    ordered = list(db.query("select rowid, id from papers order by rowid"))
    return snapshot(db) + ordered, (summary.added, summary.merged, summary.skipped)


def test_an_encoded_chunk_stores_what_the_dict_chunk_stores(tmp_path: Path) -> None:
    rows = _rows(tmp_path)
    encoded = [(bulk.encode_row(row), external_id) for row, external_id in rows]
    as_dicts = _stored(rows)
    assert _stored(encoded) == as_dicts
    assert as_dicts[1][0] >= 3 and as_dicts[1][1] >= 1  # new papers and merges both
    # Dicts and tuples mixed (a worker's rows beside this process's): the same again.
    mixed = [pair if n % 2 else (bulk.encode_row(pair[0]), pair[1]) for n, pair in enumerate(rows)]
    assert _stored(mixed) == as_dicts
