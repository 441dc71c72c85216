"""Paper files and the rows an ingest prepares from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from db.store import Store
from digests.ingest.pipeline import prepare, read_file
from tests.conftest import NOW


def abstract(number: int) -> str:
    return (
        f"We propose Method{number}, a framework for task {number} in offline learning. "
        f"It improves on the baseline by {number} points on every benchmark we tried."
    )


def papers_file(tmp_path: Path, count: int = 10, bad: dict[int, str] | None = None) -> Path:
    """JSON Lines of `count` papers; `bad` replaces line N with the given text."""
    lines = []
    for number in range(1, count + 1):
        paper = {
            "id": f"2501.{number:05d}",
            "title": f"Method{number}: Learning Task {number} Offline",
            "abstract": abstract(number),
            "authors": [f"Ann Author{number}", "Bo Shared"],
        }
        lines.append(json.dumps(paper))
    for number, text in (bad or {}).items():
        lines[number - 1] = text
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def snapshot(db: Store) -> list[dict[str, Any]]:
    rows = list(db.query("select * from papers order by id"))
    aliases = list(db.query("select * from paper_aliases order by alias"))
    return rows + aliases


def prepared_rows(path: Path, text: str) -> list[tuple[dict[str, Any], str | None]]:
    """`prepare`'s rows, with their external ids, of the TSV `text` written to `path`."""
    path.write_text(text + "\n", encoding="utf-8")
    rows = []
    for record in read_file(path):
        row = prepare(record, NOW)
        assert row is not None
        rows.append((row, record.external_id))
    return rows
