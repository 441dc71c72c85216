"""The index check skipped while nothing changed (db/text_index.py): every way another
process, a restore, a rollback or a checkpoint can change the store or its index under a
connection that remembered its index as current is still seen by that connection's next
lookup. Real processes, real files."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from db import open_db, text_index
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.search import settle
from tests.fakes.search_store import SEEDS, db_path, forget, titles, write_papers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Store]:
    db = open_db(tmp_path / "p.db")
    ingest_files(db, SEEDS, now=NOW)
    settle(db)
    yield db
    forget(db)


def in_another_process(code: str) -> None:
    """Run `code` in a new Python process (the repo importable), which must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def retitle_elsewhere(path: Path, method: str, title: str) -> None:
    in_another_process(
        f"""
        import sqlite3
        conn = sqlite3.connect({str(path)!r}, timeout=10)
        with conn:
            conn.execute("update papers set title = ? where method = ?", ({title!r}, {method!r}))
        conn.close()
        """
    )


def freeze_watermark_stat(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make text_index's stat of the watermark file stand still at its present value (a
    file system with coarse timestamps that reuses inodes), so only other checks can see
    the index move."""
    folder = text_index.index_folder(path)
    frozen = os.stat(folder / text_index.META)
    real_stat = os.stat

    def stat(target: object, *args: object, **kwargs: object) -> os.stat_result:
        if Path(str(target)) == folder / text_index.META:
            return frozen
        return real_stat(target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(text_index, "os", types.SimpleNamespace(**{**vars(os), "stat": stat}))


def back_up(path: Path, backup: Path) -> Path:
    """`backup`, a copy of the store at `path` made with SQLite's backup API."""
    source = sqlite3.connect(path)
    target = sqlite3.connect(backup)
    source.backup(target)
    target.close()
    source.close()
    return backup


def test_a_same_size_change_by_another_process_at_once_is_seen(file_db: Store) -> None:
    """A write of the same size, in the same second, by another process: no file size or
    mtime is relied on, SQLite's data_version moves."""
    path = db_path(file_db)
    old = str(file_db.execute("select title from papers where method = 'LoMAP'").fetchone()[0])
    new = ("Okapi " + old)[: len(old)]
    assert titles(file_db, "okapi") == []
    retitle_elsewhere(path, "LoMAP", new)
    assert titles(file_db, "okapi") == [new]
    assert titles(file_db, "okapi") == [new]  # and from the index, remembered again
    assert text_index._current[file_db].handle.seq == text_index._last_seq(file_db)


def test_a_backup_restored_over_the_live_store_by_another_process_is_seen(
    file_db: Store, tmp_path: Path
) -> None:
    """`sqlite3 p.db ".restore backup.db"` (the backup API writing the live file): the
    store goes back to the backup's papers; the index, ahead of it, is rebuilt."""
    path = db_path(file_db)
    backup = back_up(path, tmp_path / "backup.db")
    with file_db.conn:
        file_db.execute("update papers set title = 'Okapi stripes' where method = 'LoMAP'")
    assert titles(file_db, "okapi") == ["Okapi stripes"]
    assert titles(file_db, "okapi") == ["Okapi stripes"]  # remembered as current
    in_another_process(
        f"""
        import sqlite3
        source = sqlite3.connect({str(backup)!r})
        live = sqlite3.connect({str(path)!r}, timeout=10)
        source.backup(live)
        live.close()
        source.close()
        """
    )
    assert (
        file_db.execute("select count(*) from papers where title like 'Okapi%'").fetchone()[0] == 0
    )
    assert titles(file_db, "okapi") == []
    assert titles(file_db, "LoMAP")  # the restored title is found again


def test_a_backup_copied_over_the_file_is_seen_by_a_new_connection(
    file_db: Store, tmp_path: Path
) -> None:
    """A backup moved over the database file (a new inode): a connection opened after
    it (this process's index handle still open) gets the backup's papers, not the
    index's."""
    path = db_path(file_db)
    backup = back_up(path, tmp_path / "backup.db")
    with file_db.conn:
        file_db.execute("update papers set title = 'Okapi stripes' where method = 'LoMAP'")
    assert titles(file_db, "okapi") == ["Okapi stripes"]
    file_db.close()
    backup.replace(path)
    again = open_db(path)
    try:
        assert titles(again, "okapi") == []
        assert titles(again, "okapi") == []
    finally:
        again.close()


def test_writes_rolled_back_or_released_in_savepoints_are_never_served(
    file_db: Store,
) -> None:
    for rollback in (
        lambda: file_db.conn.rollback(),
        lambda: file_db.conn.execute("rollback to sp"),
    ):
        file_db.conn.execute("BEGIN")
        file_db.conn.execute("savepoint sp")
        file_db.execute("update papers set title = 'Tapir snouts' where method = 'LoMAP'")
        rollback()
        if file_db.conn.in_transaction:
            file_db.conn.execute("release sp")
            file_db.conn.commit()
        assert titles(file_db, "tapir") == []
        assert titles(file_db, "tapir") == []
    with file_db.conn:
        file_db.conn.execute("savepoint sp")
        file_db.execute("update papers set title = 'Tapir snouts' where method = 'LoMAP'")
        file_db.conn.execute("release sp")
    assert titles(file_db, "tapir") == ["Tapir snouts"]


def test_a_checkpoint_then_a_change_by_other_processes_is_seen(file_db: Store) -> None:
    """A TRUNCATE checkpoint restarts the WAL: the next writer's frames land where old
    ones were. data_version still moves."""
    path = db_path(file_db)
    in_another_process(
        f"""
        import sqlite3
        conn = sqlite3.connect({str(path)!r}, timeout=10)
        conn.execute("pragma wal_checkpoint(TRUNCATE)")
        conn.close()
        """
    )
    assert titles(file_db, "LoMAP")
    retitle_elsewhere(path, "LoMAP", "Quokka smiles")
    assert titles(file_db, "quokka") == ["Quokka smiles"]


def test_the_index_rebuilt_by_another_process_then_a_change_is_seen(
    file_db: Store,
) -> None:
    path = db_path(file_db)
    in_another_process(
        f"""
        import logging, sys
        from db.text_index import main
        sys.exit(main([{str(path)!r}]))
        """
    )
    assert titles(file_db, "LoMAP")
    retitle_elsewhere(path, "LoMAP", "Quokka smiles")
    assert titles(file_db, "quokka") == ["Quokka smiles"]
    assert titles(file_db, "quokka") == ["Quokka smiles"]


def test_a_connection_with_an_attached_store_sees_changes_to_its_own(
    file_db: Store, tmp_path: Path
) -> None:
    """Writes to an attached database move this connection's change count (a check more,
    harmless); another process's commit to the main one is still seen."""
    other = open_db(tmp_path / "other.db")
    ingest_files(other, [write_papers(tmp_path, ("z1", "Zebra Crossing", "Zebras. " * 5))], now=NOW)
    other.close()
    file_db.execute(f"attach database '{tmp_path / 'other.db'}' as other")
    assert titles(file_db, "zebra") == []
    with file_db.conn:
        file_db.execute("update other.papers set title = 'Zebra Okapi' where id = 'z1'")
    assert titles(file_db, "okapi") == []
    retitle_elsewhere(db_path(file_db), "LoMAP", "Okapi stripes")
    assert titles(file_db, "okapi") == ["Okapi stripes"]


def test_a_reader_threads_connection_sees_a_writer_threads_commits(
    file_db: Store, tmp_path: Path
) -> None:
    """As in bot/services.py: each thread its own connection (and its own remembered
    marks); the writer thread's ingest is seen by the reader thread's next lookup.
    The index handle is shared by the process's threads; the marks are not."""
    path = db_path(file_db)
    found: list[list[str]] = []

    def reader(step: threading.Event, done: threading.Event) -> None:
        db = open_db(path)
        try:
            found.append(titles(db, "narwhal"))
            found.append(titles(db, "narwhal"))
            step.set()
            done.wait(60)
            found.append(titles(db, "narwhal"))
        finally:
            db.close()

    step, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=reader, args=(step, done))
    thread.start()
    assert step.wait(60)

    def writer() -> None:
        db = open_db(path)
        paper = ("n1", "Narwhal tusks", "Narwhals dive. " * 5)
        ingest_files(db, [write_papers(tmp_path, paper)], now=NOW)  # no catch-up: the
        db.close()  # reader's lookup brings the shared index up to date

    writing = threading.Thread(target=writer)
    writing.start()
    writing.join(60)
    done.set()
    thread.join(60)
    assert found == [[], [], ["Narwhal tusks"]]


def test_inside_a_read_transaction_an_index_moved_by_another_thread_is_not_served(
    file_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read transaction sees its snapshot: data_version and the change count stand
    still in it. Another thread's ingest and catch-up move the process's shared index
    past that snapshot; only the watermark file's identity says so, and it need not (a
    file system with coarse timestamps that reuses inodes, as ext4 does for the
    watermark's two files in turn: simulated here by a stat that stands still). The
    lookup must not serve the index's newer hits with the snapshot's older rows: a lookup
    inside a transaction always checks (FTS5 then), and the handle's own watermark is
    part of what is remembered."""
    path = db_path(file_db)
    freeze_watermark_stat(path, monkeypatch)
    file_db.conn.execute("BEGIN")
    assert titles(file_db, "okapi") == []  # the snapshot starts here
    other = open_db(path)
    with other.conn:
        other.execute("update papers set title = 'Okapi stripes' where method = 'LoMAP'")
    assert text_index.catch_up(other)
    other.close()
    assert titles(file_db, "okapi") == []  # the snapshot's rows: no Okapi yet
    file_db.conn.rollback()
    assert titles(file_db, "okapi") == ["Okapi stripes"]


def test_a_snapshot_held_by_an_unfinished_statement_gets_no_newer_hits(
    file_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement not read to its end holds its read snapshot with no transaction open
    (`in_transaction` is false): the same as above, through the handle's watermark."""
    path = db_path(file_db)
    freeze_watermark_stat(path, monkeypatch)
    cursor = file_db.conn.execute("select id from papers")
    assert cursor.fetchone() is not None and not file_db.conn.in_transaction
    other = open_db(path)
    with other.conn:
        other.execute("update papers set title = 'Okapi stripes' where method = 'LoMAP'")
    assert text_index.catch_up(other)
    other.close()
    assert titles(file_db, "okapi") == []  # the snapshot has no Okapi
    cursor.close()
    assert titles(file_db, "okapi") == ["Okapi stripes"]


def test_inside_a_read_transaction_an_index_moved_by_another_process_is_not_served(
    file_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, the index moved by another process: this process's handle keeps its
    watermark, but tantivy's reader reloads by itself when the index's files change on
    disk (its meta watcher; done here at once). Inside the transaction the lookup checks,
    and answers from FTS5 over its snapshot."""
    path = db_path(file_db)
    freeze_watermark_stat(path, monkeypatch)
    file_db.conn.execute("BEGIN")
    assert titles(file_db, "okapi") == []  # the snapshot starts here
    retitle_elsewhere(path, "LoMAP", "Okapi stripes")
    in_another_process(
        f"""
        from db import open_db, text_index
        assert text_index.catch_up(open_db({str(path)!r}))
        """
    )
    text_index.ready.__globals__["_open"][str(path.resolve())].index.reload()
    assert titles(file_db, "okapi") == []  # the snapshot's rows: no Okapi yet
    file_db.conn.rollback()
    assert titles(file_db, "okapi") == ["Okapi stripes"]


def test_a_lookup_does_not_wait_for_another_threads_long_catch_up(
    file_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backlog of more than LONG_BACKLOG changes (another process's big ingest) is
    caught up by one thread; the lookups of the others answer from FTS5 at once instead
    of each waiting BUSY_WAIT_S for it. A short one is still waited for."""
    monkeypatch.setattr(text_index, "LONG_BACKLOG", 0)
    monkeypatch.setattr(text_index, "BUSY_WAIT_S", 0.2)
    go, syncing = threading.Event(), threading.Event()
    real_sync = text_index._sync

    def slow_sync(db: Store, handle: text_index.TextIndex, since: int) -> int:
        syncing.set()
        assert go.wait(30)
        return real_sync(db, handle, since)

    monkeypatch.setattr(text_index, "_sync", slow_sync)
    path = db_path(file_db)
    retitle_elsewhere(path, "LoMAP", "Okapi stripes")

    def catch_up() -> None:
        db = open_db(path)
        text_index.catch_up(db)
        db.close()

    thread = threading.Thread(target=catch_up)
    thread.start()
    try:
        assert syncing.wait(30)
        with pytest.raises(text_index.WriterBusy, match="building"):
            text_index.ready(file_db)
        assert titles(file_db, "okapi") == ["Okapi stripes"]  # FTS5
    finally:
        go.set()
        thread.join(30)
    assert titles(file_db, "okapi") == ["Okapi stripes"]
