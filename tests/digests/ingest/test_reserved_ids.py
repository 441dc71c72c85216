"""A file's own id never lands in Paperboy's own alias namespace (`fp:`, `seen:`): a
record with "id": "fp:<hash of another abstract>" would make every later ingest of that
abstract merge into it without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from db import open_db
from db.papers import count_papers
from digests.identity import fingerprint_hash
from digests.ingest import IngestError, ingest_files
from tests.conftest import NOW

OTHER = "We present Other, a study of sparse graphs under noise and their spectral limits."


@pytest.mark.parametrize("prefix", ["fp:", "seen:"])
def test_a_file_id_in_paperboys_own_namespace_is_refused(tmp_path: Path, prefix: str) -> None:
    crafted = {
        "id": prefix + fingerprint_hash(OTHER),
        "title": "Crafted Paper About Something Else Entirely",
        "abstract": "We propose Crafted, a method that claims another paper's abstract.",
    }
    path = tmp_path / "crafted.jsonl"
    path.write_text(
        json.dumps({"abstract": "A first fine paper on tabular data."})
        + "\n"
        + json.dumps(crafted)
        + "\n",
        encoding="utf-8",
    )
    db = open_db(tmp_path / "p.db")
    with pytest.raises(
        IngestError,
        match=r"crafted.jsonl:2: id '.*' starts with 'fp:' or "
        r"'seen:', which Paperboy keeps for its own keys",
    ):
        ingest_files(db, [path], now=NOW)
    assert count_papers(db) == 0  # nothing stored, as for any bad line
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"abstract": OTHER}) + "\n", encoding="utf-8")
    ingest_files(db, [other], now=NOW)
    assert count_papers(db) == 1
    assert not list(db.query("select * from paper_aliases where alias like 'fp:%'"))
