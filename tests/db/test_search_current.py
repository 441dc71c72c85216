"""A lookup on a store that has not changed since its last lookup skips the index check
(the change log, the watermark file): and yet every change is seen, whoever makes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from db import open_db, text_index
from db.search import search_papers
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.search import settle
from tests.fakes.search_store import SEEDS, db_path, forget, titles, write_papers


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Store]:
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    yield db
    forget(db)


def statements(db: Store) -> list[str]:
    """Every SQL statement `db` runs from now on."""
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    return seen


def test_an_unchanged_store_is_not_checked_again(
    file_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(file_db)
    reads = []
    real = text_index._read_meta
    monkeypatch.setattr(text_index, "_read_meta", lambda f: reads.append(f) or real(f))
    seen = statements(file_db)
    for _ in range(3):
        assert search_papers(file_db, "ResDex", 1)[0].paper["method"] == "ResDex"
    assert reads == []
    assert not [s for s in seen if "search_changes" in s or "database_list" in s]


def test_a_change_committed_by_another_connection_is_seen(file_db: Store, tmp_path: Path) -> None:
    """Another process's ingest moves neither this connection's change count nor the
    index's watermark file (it does not touch the index): SQLite's data_version does."""
    settle(file_db)
    assert titles(file_db, "narwhal") == []
    other = open_db(db_path(file_db))
    paper = ("n1", "Narwhal tusks", "Narwhals dive. " * 5)
    ingest_files(other, [write_papers(tmp_path, paper)], now=NOW)
    assert titles(file_db, "narwhal") == ["Narwhal tusks"]
    other.close()


def test_a_change_on_the_same_connection_is_seen(file_db: Store, tmp_path: Path) -> None:
    settle(file_db)
    assert titles(file_db, "okapi") == []
    with file_db.conn:
        file_db.execute("update papers set title = 'Okapi stripes' where method = 'LoMAP'")
    assert titles(file_db, "okapi") == ["Okapi stripes"]


def test_an_index_folder_removed_with_no_change_to_the_store_is_made_again(
    file_db: Store,
) -> None:
    """The watermark file's identity is part of what is remembered: its folder removed
    (or the index rebuilt by another process) is noticed at the next lookup."""
    import shutil

    settle(file_db)
    folder = text_index.index_folder(db_path(file_db))
    shutil.rmtree(folder)
    for _ in range(2):  # the first from FTS5 (the handle fails and is dropped), then anew
        assert search_papers(file_db, "ResDex", 1)[0].paper["method"] == "ResDex"
    assert (folder / text_index.META).is_file()


def test_a_dropped_handle_is_not_used_again(file_db: Store) -> None:
    settle(file_db)
    handle = text_index.ready(file_db)
    text_index.forget(file_db)
    assert text_index.ready(file_db) is not handle


def test_inside_a_transaction_a_change_is_not_served_from_the_index(
    file_db: Store, tmp_path: Path
) -> None:
    settle(file_db)
    file_db.conn.execute("BEGIN")
    file_db.execute("update papers set title = 'Tapir snouts' where method = 'LoMAP'")
    with pytest.raises(text_index.IndexUnavailable):
        text_index.ready(file_db)
    assert titles(file_db, "tapir") == ["Tapir snouts"]  # FTS5 sees the uncommitted row
    file_db.conn.rollback()
    assert titles(file_db, "tapir") == []
