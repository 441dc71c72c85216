"""A real process killed (SIGKILL) part-way through bringing the search index up to date,
at each step: adding documents, after tantivy's commit but before the watermark, during a
rebuild. The next process's lookups must then return exactly what SQLite holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tantivy import Query

from db import open_db, text_index
from db.search import search_papers
from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW, ROOT, SAMPLES

CHILD = """
import sys, time
from pathlib import Path
from db import open_db, text_index
from db.search import search_papers

stage, path, marker = sys.argv[1:4]
db = open_db(Path(path))


def pause(*args):
    Path(marker).write_text(stage)
    time.sleep(120)  # killed here


if stage in ("adding", "rebuilding"):
    real = text_index._document
    count = [0]

    def document(row):
        count[0] += 1
        if count[0] == 150:
            pause()
        return real(row)

    text_index._document = document
elif stage == "committed":
    text_index._write_meta = pause
search_papers(db, "anything at all", 1)
"""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    text_index._open.clear()
    db = open_db(tmp_path / "p.db")
    ingest_files(db, [SAMPLES / "icml2025.txt"], now=NOW)
    search_papers(db, "learning", 1)  # the index is built and current
    yield db
    text_index._open.clear()


def change_papers(db: Store) -> tuple[str, str]:
    """A backlog: 400 new papers, one retitled, one deleted. Returns (retitled, deleted)."""
    retitled, deleted = (
        row[0] for row in db.execute("select id from papers order by id limit 2").fetchall()
    )
    with db.conn:
        db.conn.executemany(
            "insert into papers (id, title, abstract, abstract_text, added_at) "
            "values (?, ?, 'Words.', 'Words.', '2026-01-01')",
            [(f"n{i}", f"Numbat {i} tunnels") for i in range(400)],
        )
        db.execute("update papers set title = 'Quoll dens' where id = ?", [retitled])
        db.execute("delete from paper_aliases where paper_id = ?", [deleted])
        db.execute("delete from papers where id = ?", [deleted])
    return retitled, deleted


def kill_mid_update(db: Store, stage: str, tmp_path: Path) -> None:
    marker = tmp_path / f"{stage}.reached"
    path = text_index.database_file(db)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, stage, str(path), str(marker)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the child ended before the step it is killed at"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()


def indexed_ids(db: Store) -> list[str]:
    handle = text_index.ready(db)
    searcher = handle.searcher()
    hits = searcher.search(Query.all_query(), 100_000).hits
    return sorted(searcher.doc(address).get_first("id") for _, address in hits)


def assert_same_as_sqlite(db: Store, retitled: str, deleted: str) -> None:
    text_index._open.clear()  # what the next process sees
    stored = sorted(row[0] for row in db.execute("select id from papers").fetchall())
    assert indexed_ids(db) == stored  # nothing lost, nothing twice, nothing deleted left
    assert [h.paper["id"] for h in search_papers(db, "quoll", 5)] == [retitled]
    assert len(search_papers(db, "numbat", 500)) == 400
    assert deleted not in {h.paper["id"] for h in search_papers(db, "learning", 500)}
    assert text_index._disk_seq(text_index.ready(db)) == text_index._last_seq(db)


@pytest.mark.parametrize("stage", ["adding", "committed"])
def test_a_sync_killed_part_way_leaves_lookups_exact(
    store: Store, tmp_path: Path, stage: str
) -> None:
    retitled, deleted = change_papers(store)
    kill_mid_update(store, stage, tmp_path)
    assert_same_as_sqlite(store, retitled, deleted)


def test_a_rebuild_killed_part_way_leaves_lookups_exact(store: Store, tmp_path: Path) -> None:
    retitled, deleted = change_papers(store)
    (text_index.index_folder(tmp_path / "p.db") / text_index.META).unlink()  # needs a rebuild
    kill_mid_update(store, "rebuilding", tmp_path)
    assert_same_as_sqlite(store, retitled, deleted)


WRITER = """
import sys
from pathlib import Path
from db import open_db, text_index

db = open_db(Path(sys.argv[1]))
for batch in range(15):
    with db.conn:
        db.conn.executemany(
            "insert into papers (id, title, abstract, abstract_text, added_at) "
            "values (?, ?, 'Words.', 'Words.', '2026-01-01')",
            [(f"b{batch}-{i}", f"Bandicoot {batch} {i}") for i in range(40)],
        )
        db.execute("update papers set title = 'Bilby ' || ? where id like 'b0-%'", [str(batch)])
    text_index.catch_up(db)  # as a fetch does
"""

READER = """
import sys
from pathlib import Path
from db import open_db
from db.search import search_papers

db = open_db(Path(sys.argv[1]))
for _ in range(60):
    search_papers(db, "bandicoot bilby", 10)
"""


def test_a_writer_and_lookups_in_other_processes_at_once_stay_exact(
    store: Store, tmp_path: Path
) -> None:
    """paperboy run (ingest, then catch up) and paperboy find (lookups that sync) at once:
    neither fails, and the index ends equal to SQLite."""
    path = str(text_index.database_file(store))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code, path], cwd=ROOT, env=env, stderr=subprocess.PIPE
        )
        for code in (WRITER, READER, READER)
    ]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
        assert b"Traceback" not in err
    text_index._open.clear()
    stored = sorted(row[0] for row in store.execute("select id from papers").fetchall())
    assert indexed_ids(store) == stored
    assert len(search_papers(store, "bilby", 100)) == 40
    assert len(search_papers(store, "bandicoot", 1000)) == 560
