"""The tantivy index beside the store: it follows every change, survives a crash part-way,
heals when it is missing or does not match the store, and steps aside (FTS5) when it
cannot answer at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from db import open_db, text_index
from db.search import index_terms, search_papers
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.search_store import SEEDS, db_path, forget, titles, write_papers


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Store]:
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    yield db
    forget(db)


def paper_id(db: Store, title: str) -> str:
    return str(db.execute("select id from papers where title = ?", [title]).fetchone()[0])


def delete_paper(db: Store, pid: str) -> None:
    with db.conn:
        db.execute("delete from paper_aliases where paper_id = ?", [pid])
        db.execute("delete from papers where id = ?", [pid])


def test_the_index_is_built_beside_the_file_and_trim_drops_applied_changes(
    file_db: Store,
) -> None:
    changes = file_db.execute("select count(*) from search_changes").fetchone()[0]
    assert changes > 0
    assert search_papers(file_db, "LoMAP", 1)[0].paper["method"] == "LoMAP"
    folder = text_index.index_folder(db_path(file_db))
    assert (folder / text_index.META).is_file()
    # A lookup never writes SQLite; trim does.
    assert file_db.execute("select count(*) from search_changes").fetchone()[0] == changes
    assert text_index.trim(file_db) == changes - 1  # the row at the watermark stays
    assert file_db.execute("select count(*) from search_changes").fetchone()[0] == 1
    forget(file_db)
    assert search_papers(file_db, "ResDex", 1)[0].paper["method"] == "ResDex"


def test_new_changed_and_deleted_papers_are_followed(file_db: Store, tmp_path: Path) -> None:
    assert titles(file_db, "zanzibar") == []
    ingest_files(
        file_db,
        [write_papers(tmp_path, ("z1", "Zanzibar routing for ferries", "Ferries sail. " * 5))],
        now=NOW,
    )
    assert titles(file_db, "zanzibar") == ["Zanzibar routing for ferries"]
    pid = paper_id(file_db, "Zanzibar routing for ferries")
    with file_db.conn:
        file_db.execute("update papers set title = 'Pemba routing' where id = ?", [pid])
    assert titles(file_db, "zanzibar") == []
    assert titles(file_db, "pemba") == ["Pemba routing"]
    delete_paper(file_db, pid)
    assert titles(file_db, "pemba") == []


def behind_by_one(db: Store, tmp_path: Path, paper: tuple[str, str, str]) -> text_index.TextIndex:
    """Index `db`, then ingest `paper` (id, title, abstract) that the index has not yet
    seen; returns the index's writable handle."""
    search_papers(db, "LoMAP", 1)
    ingest_files(db, [write_papers(tmp_path, paper)], now=NOW)
    return text_index._handle(db, writable=True)


def test_a_crash_before_the_watermark_is_written_replays_the_changes(
    file_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    behind_by_one(file_db, tmp_path, ("q1", "Quokka habitats", "Quokkas live. " * 5))

    def crash(*args: object) -> None:
        raise KeyboardInterrupt  # the process dies after tantivy committed

    monkeypatch.setattr(text_index, "_write_meta", crash)
    with pytest.raises(KeyboardInterrupt):
        search_papers(file_db, "quokka", 1)
    monkeypatch.undo()
    forget(file_db)
    with file_db.conn:  # and the paper changes again before anyone looks
        file_db.execute("update papers set title = 'Quokka homes' where title = 'Quokka habitats'")
    assert titles(file_db, "quokka") == ["Quokka homes"]
    assert len(search_papers(file_db, "quokka", 10)) == 1  # applied twice, indexed once


def test_a_crash_before_tantivy_commits_loses_nothing(
    file_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    behind_by_one(file_db, tmp_path, ("w1", "Wombat burrows", "Wombats dig. " * 5))
    real = text_index._document

    def crash(row: dict[str, object]) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(text_index, "_document", crash)
    with pytest.raises(KeyboardInterrupt):
        search_papers(file_db, "wombat", 1)
    monkeypatch.setattr(text_index, "_document", real)
    forget(file_db)
    assert titles(file_db, "wombat") == ["Wombat burrows"]


def test_a_missing_index_is_rebuilt_from_the_store(file_db: Store) -> None:
    search_papers(file_db, "LoMAP", 1)
    folder = text_index.index_folder(db_path(file_db))
    (folder / text_index.META).unlink()
    forget(file_db)
    assert search_papers(file_db, "LoMAP", 1)[0].paper["method"] == "LoMAP"


def test_an_index_folder_removed_under_a_running_process_is_made_again(
    file_db: Store, tmp_path: Path
) -> None:
    import shutil

    search_papers(file_db, "LoMAP", 1)
    shutil.rmtree(text_index.index_folder(db_path(file_db)))
    ingest_files(
        file_db, [write_papers(tmp_path, ("m1", "Marmot calls", "Marmots whistle. " * 5))], now=NOW
    )
    assert titles(file_db, "marmot") == ["Marmot calls"]
    assert titles(file_db, "marmot") == ["Marmot calls"]
    handle = text_index.ready(file_db)
    assert handle.searcher().num_docs == 39
    assert text_index._disk_seq(handle) == text_index._last_seq(file_db)


def test_a_copied_database_gets_its_own_full_index(file_db: Store, tmp_path: Path) -> None:
    search_papers(file_db, "LoMAP", 1)
    text_index.trim(file_db)
    from bench.corpus import copy_db

    path = Path(str(file_db.execute("pragma database_list").fetchone()[2]))
    copy = open_db(copy_db(path, tmp_path / "copy.db"))
    assert search_papers(copy, "ResDex", 1)[0].paper["method"] == "ResDex"
    assert text_index.ready(copy).searcher().num_docs == 38


def test_a_store_restored_from_a_backup_gets_its_index_rebuilt(
    file_db: Store, tmp_path: Path
) -> None:
    from bench.corpus import copy_db

    search_papers(file_db, "LoMAP", 1)
    backup = copy_db(db_path(file_db), tmp_path / "backup.db")
    ingest_files(
        file_db, [write_papers(tmp_path, ("g1", "Gecko feet", "Geckos cling. " * 5))], now=NOW
    )
    assert titles(file_db, "gecko") == ["Gecko feet"]  # the index has it now
    file_db.close()
    forget(file_db)
    copy_db(backup, tmp_path / "p.db")  # the backup is restored over the store
    restored = open_db(tmp_path / "p.db")
    assert titles(restored, "gecko") == []
    assert text_index.ready(restored).searcher().num_docs == 38


def test_inside_a_transaction_the_lookup_uses_fts5_and_indexes_nothing_uncommitted(
    tmp_path: Path,
) -> None:
    db = open_db(":memory:")
    ingest_files(db, SEEDS, now=NOW)
    assert titles(db, "LoMAP", 1)
    db.conn.execute("begin")
    db.execute(
        "insert into papers (id, title, abstract, abstract_text, added_at) "
        "values ('u1', 'Uncommitted narwhal', 'x', 'x', '2026')"
    )
    assert titles(db, "narwhal") == ["Uncommitted narwhal"]  # FTS5 sees its own transaction
    db.conn.rollback()
    assert titles(db, "narwhal") == []
    assert text_index.ready(db).searcher().num_docs == 38


def test_a_busy_index_writer_falls_back_to_fts5(
    file_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_index, "BUSY_WAIT_S", 0.2)
    handle = behind_by_one(file_db, tmp_path, ("o1", "Okapi stripes", "Okapis hide. " * 5))
    writer = handle.index.writer(15_000_000, 1)  # another process would hold this lock
    try:
        assert titles(file_db, "okapi") == ["Okapi stripes"]  # from FTS5
        assert text_index._disk_seq(handle) < text_index._last_seq(file_db)
    finally:
        del writer
    assert titles(file_db, "okapi") == ["Okapi stripes"]
    assert text_index._disk_seq(handle) == text_index._last_seq(file_db)


def test_a_lookup_waits_briefly_for_another_writer_of_the_index(
    file_db: Store, tmp_path: Path
) -> None:
    import threading

    handle = behind_by_one(file_db, tmp_path, ("e1", "Echidna spines", "Echidnas roll. " * 5))
    held = [handle.index.writer(15_000_000, 1)]
    threading.Timer(0.3, held.clear).start()  # the other writer finishes
    assert titles(file_db, "echidna") == ["Echidna spines"]
    assert not held
    assert text_index._disk_seq(handle) == text_index._last_seq(file_db)  # not FTS5


def test_a_lookup_does_not_wait_for_a_whole_rebuild_in_another_thread(
    file_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_index, "BUSY_WAIT_S", 0.2)
    handle = behind_by_one(file_db, tmp_path, ("t1", "Tapir snouts", "Tapirs browse. " * 5))
    with handle.lock:  # another thread is rebuilding the index
        assert titles(file_db, "tapir") == ["Tapir snouts"]  # from FTS5, without waiting
    assert text_index._disk_seq(handle) < text_index._last_seq(file_db)
    assert titles(file_db, "tapir") == ["Tapir snouts"]
    assert text_index._disk_seq(handle) == text_index._last_seq(file_db)


def test_the_index_does_not_stem_continual_into_continuous(tmp_path: Path) -> None:
    db = open_db(":memory:")
    ingest_files(
        db,
        [
            write_papers(
                tmp_path,
                ("c1", "Continual learning without forgetting", "We learn tasks in turn. " * 3),
                ("c2", "Continuous control from pixels", "Robots move smoothly. " * 3),
                ("c3", "Élan vital of café networks", "Accents fold. " * 3),
            )
        ],
        now=NOW,
    )
    assert titles(db, "continual") == ["Continual learning without forgetting"]
    assert titles(db, "cafe elan") == ["Élan vital of café networks"]


def test_a_rare_word_wins_over_many_common_ones(tmp_path: Path) -> None:
    """Top-k pruning keeps the paper that matches the rare word, among 300 matching the
    common one only."""
    db = open_db(":memory:")
    common = [
        (f"n{i}", f"Learning networks number {i}", f"Learning networks learn {i} times. " * 4)
        for i in range(300)
    ]
    rare = ("r1", "Learning with axolotl regeneration", "Axolotls regrow limbs. " * 4)
    ingest_files(db, [write_papers(tmp_path, *common[:150], rare, *common[150:])], now=NOW)
    hits = search_papers(db, "learning axolotl", 5)
    assert hits[0].paper["title"] == "Learning with axolotl regeneration"
    assert len(hits) == 5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_index_terms_match_the_index_tokens() -> None:
    assert index_terms("Alpha-DPO café") == [
        "alpha",
        "dpo",
        "cafe",
        "alphadpo",
        "dpocafe",
        "alphadpocafe",
    ]
    assert index_terms("!!!") == []


def test_a_reader_that_may_not_write_reads_the_index_or_falls_back(
    file_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's lookup: it never builds or updates the owner's index."""
    from db.connection import open_read_only

    path = db_path(file_db)
    folder = text_index.index_folder(path)
    reader = open_read_only(path)
    monkeypatch.setattr(text_index, "may_write", lambda db: db is file_db)
    assert titles(reader, "ResDex")  # no index yet: FTS5, and none is made
    assert not folder.exists()
    search_papers(file_db, "LoMAP", 1)  # the owner's lookup builds it
    forget(file_db)
    assert search_papers(reader, "ResDex", 1)[0].paper["method"] == "ResDex"
    ingest_files(
        file_db, [write_papers(tmp_path, ("k1", "Kakapo nights", "Kakapos climb. " * 5))], now=NOW
    )
    before = sorted(p.name for p in folder.iterdir())
    assert titles(reader, "kakapo") == ["Kakapo nights"]  # the index is behind: FTS5
    assert sorted(p.name for p in folder.iterdir()) == before
