"""Ingest's fast paths keep what ingest does: the page cache it borrows is
given back, and the fast paths of the text checks decide as the full ones do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.store import Store
from digests.ingest import IngestError, bulk, ingest_files
from digests.ingest.pipeline import read_file
from digests.ingest.secrets import secret_kind
from digests.safe_text import strip_unsafe
from tests.conftest import NOW


def papers_file(tmp_path: Path, count: int = 5) -> Path:
    lines = [
        json.dumps({"id": f"2501.{n:05d}", "abstract": f"We propose Method{n} for task {n}."})
        for n in range(1, count + 1)
    ]
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cache_size(db: Store) -> int:
    return int(db.execute("PRAGMA cache_size").fetchone()[0])


def record_cache_while_storing(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    store_chunk = bulk.store_chunk

    def recording(db: Store, *args: Any) -> None:
        seen.append(cache_size(db))
        store_chunk(db, *args)

    monkeypatch.setattr(bulk, "store_chunk", recording)
    return seen


def test_an_ingest_writes_with_a_larger_page_cache_then_gives_back_the_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_db(tmp_path / "papers.db")
    db.execute("PRAGMA cache_size = -1234")
    seen = record_cache_while_storing(monkeypatch)
    ingest_files(db, [papers_file(tmp_path)], now=NOW)
    assert seen == [-bulk.INGEST_CACHE_KB]
    assert cache_size(db) == -1234


def test_the_page_cache_is_given_back_when_an_ingest_fails(tmp_path: Path) -> None:
    db = open_db(tmp_path / "papers.db")
    db.execute("PRAGMA cache_size = 500")  # pages, not KiB
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"abstract": "We propose A."}\nnot json\n', encoding="utf-8")
    with pytest.raises(IngestError):
        ingest_files(db, [bad], now=NOW)
    assert cache_size(db) == 500


def test_a_connection_with_a_larger_page_cache_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_db(tmp_path / "papers.db")
    db.execute(f"PRAGMA cache_size = {-2 * bulk.INGEST_CACHE_KB}")
    seen = record_cache_while_storing(monkeypatch)
    ingest_files(db, [papers_file(tmp_path)], now=NOW)
    assert seen == [-2 * bulk.INGEST_CACHE_KB]
    assert cache_size(db) == -2 * bulk.INGEST_CACHE_KB


@pytest.mark.parametrize("code", range(128))
def test_ascii_text_loses_exactly_its_control_characters(code: int) -> None:
    # ASCII text takes a fast path (isprintable): every control but \t and \n goes, and
    # every other character stays, as with the full character class.
    char = chr(code)
    removed = (code < 32 and char not in "\t\n") or code == 127
    assert strip_unsafe(f"ab{char}") == ("ab" if removed else f"ab{char}")
    assert strip_unsafe(f"ab{char}é") == ("abé" if removed else f"ab{char}é")


@pytest.mark.parametrize(
    "text",
    [
        "xoxb-1234567890-abcdefgh",
        "x`ox`b-1234567890-abcdefgh",  # markup inside the token
        "*x*o*x*b*-1234567890-abcdefgh",
        "x$oxp$-1234567890-abcdefgh",
        "xa\\pp-1234567890-abcdefgh",
    ],
)
def test_a_slack_token_is_found_with_markup_anywhere_in_it(text: str) -> None:
    assert secret_kind(f"See {text} here.") == "a Slack token"


def test_text_without_an_x_holds_no_slack_token() -> None:
    assert secret_kind("XOXB-1234567890-ABCDEFGH and oxb-1234567890-abcdefgh") is None


@pytest.mark.parametrize(
    "text",
    [
        '{"abstract": "Café au lait \\ud800 A."}\n',  # not ASCII, and an escape
        '[{"abstract": "Fine."}, {"abstract": "We \\udc00 A."}]\n',  # an array
    ],
)
def test_a_lone_surrogate_escape_is_refused_in_any_json_shape(tmp_path: Path, text: str) -> None:
    path = tmp_path / "lone.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(IngestError, match="lone surrogate"):
        read_file(path)


def test_escapes_that_make_real_characters_are_read(tmp_path: Path) -> None:
    path = tmp_path / "escaped.jsonl"
    path.write_text('{"abstract": "Caf\\u00e9 and \\ud83d\\ude00 and \\\\ud800."}\n', "utf-8")
    (record,) = read_file(path)
    assert record.abstract == "Café and 😀 and \\ud800."
