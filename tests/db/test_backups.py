"""The backup and restore commands of docs/how-to/backups.md, run as written: a backup
taken while a writer holds changes in the WAL has them all; a restore brings back exactly
the backup, and its lookups answer from it."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from db import open_db
from digests.ingest import ingest_files
from tests.conftest import NOW, ROOT
from tests.fakes.search_store import SEEDS, forget, titles, write_papers

PAGE = ROOT / "docs" / "how-to" / "backups.md"
STORE = Path("db/paperboy.db")
BACKUP = Path("db/paperboy-backup.db")
LATE = ("late-a", "Zanzibar ferry routing", "Ferries of Zanzibar sail on time. " * 4)
LOST = ("late-b", "Quokka habitat mapping", "Quokkas live on islands off Perth. " * 4)


def section_commands(title: str) -> list[str]:
    """The lines of the ```bash blocks under the heading `title` of the page."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end > 0 else None]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


BACKUP_COMMANDS = section_commands("Backing the database up")


def shell(command: str, cwd: Path) -> None:
    if command.startswith("sqlite3 ") and shutil.which("sqlite3") is None:
        pytest.skip("no sqlite3 command here")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if command.startswith("python "):  # the docs' `python` is the one of Paperboy's .venv
        command = f"{sys.executable} {command.removeprefix('python ')}"
    subprocess.run(["bash", "-c", command], cwd=cwd, env=env, check=True, timeout=120)


def table_rows(path: Path) -> dict[str, Counter[tuple[object, ...]]]:
    """Every row of every ordinary table of the database file at `path`, read as it is."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        names = [
            row[0]
            for row in conn.execute(
                "select name from sqlite_master where type = 'table' and sql not like "
                "'CREATE VIRTUAL%' and name not like 'sqlite_%'"
            )
        ]
        return {name: Counter(conn.execute(f'select * from "{name}"')) for name in names}
    finally:
        conn.close()


def stored_titles(path: Path) -> set[str]:
    """The titles of the papers in the database file at `path`, read as it is."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return {row[0] for row in conn.execute("select title from papers")}
    except sqlite3.OperationalError:  # no papers table: the file holds no schema yet
        return set()
    finally:
        conn.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """The store at tmp_path/db/paperboy.db, every change of it still in its WAL, and a
    second connection holding a write transaction open, as a busy `paperboy run` may."""
    db = open_db(tmp_path / STORE)
    db.execute("pragma wal_autocheckpoint = 0")  # keep every change in the WAL
    ingest_files(db, SEEDS, now=NOW)
    ingest_files(db, [write_papers(tmp_path, LATE)], now=NOW)
    writer = sqlite3.connect(tmp_path / STORE, isolation_level=None)
    writer.execute("begin immediate")
    writer.execute("insert into app_state (key, value) values ('uncommitted', 'x')")
    yield writer
    writer.execute("rollback")
    writer.close()
    forget(db)
    db.close()


@pytest.mark.parametrize("command", BACKUP_COMMANDS)
def test_a_documented_backup_has_what_the_wal_holds_while_a_writer_works(
    live: sqlite3.Connection, tmp_path: Path, command: str
) -> None:
    assert (tmp_path / "db/paperboy.db-wal").stat().st_size > 0
    plain = tmp_path / "plain-copy.db"
    shutil.copy(tmp_path / STORE, plain)
    assert LATE[1] not in stored_titles(plain)  # what the page warns of: a copy of the file

    shell(command, tmp_path)

    backup = tmp_path / BACKUP
    assert not backup.with_name(backup.name + "-wal").exists()
    assert LATE[1] in stored_titles(backup)
    assert len(stored_titles(backup)) == 39
    live.execute("rollback")  # the writer's open transaction was never part of it
    assert table_rows(backup) == table_rows_now(tmp_path / STORE)
    live.execute("begin immediate")


def table_rows_now(path: Path) -> dict[str, Counter[tuple[object, ...]]]:
    """`table_rows` of the store as a new connection sees it (its WAL included)."""
    snapshot = path.with_name("snapshot.db")
    source = sqlite3.connect(path)
    target = sqlite3.connect(snapshot)
    source.backup(target)
    source.close()
    target.close()
    return table_rows(snapshot)


def write_and_die(store: Path) -> None:
    """Another paper stored and the late one renamed, then looked up (so the search index
    holds both changes), by a process that is then killed: its WAL and -shm stay."""
    code = f"""
import os
from db import open_db
from db.search import search_papers
from digests.ingest import ingest_files
from tests.conftest import NOW
from tests.fakes.search_store import write_papers
db = open_db({str(store)!r})
db.execute("pragma wal_autocheckpoint = 0")
ingest_files(db, [write_papers(__import__("pathlib").Path({str(store.parent)!r}), {LOST!r})], now=NOW)
db.execute("update papers set title = 'Walrus tusk survey' where title = {LATE[1]!r}")
db.conn.commit()
assert search_papers(db, "quokka", 1) and search_papers(db, "walrus", 1)
os._exit(0)
"""
    subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=120,
    )


def test_the_documented_restore_brings_back_exactly_the_backup(tmp_path: Path) -> None:
    db = open_db(tmp_path / STORE)
    ingest_files(db, SEEDS, now=NOW)
    ingest_files(db, [write_papers(tmp_path, LATE)], now=NOW)
    assert titles(db, "zanzibar") == [LATE[1]]  # the index is built beside the store
    shell(BACKUP_COMMANDS[0], tmp_path)
    expected = table_rows(tmp_path / BACKUP)
    forget(db)
    db.close()
    write_and_die(tmp_path / STORE)
    assert (tmp_path / "db/paperboy.db-wal").stat().st_size > 0

    restore, *rebuild = section_commands("Restoring a backup")
    assert restore.startswith("cp ") and rebuild[0].startswith("rm ")
    for command in [restore, rebuild.pop(0)]:
        shell(command, tmp_path)

    restored = open_db(tmp_path / STORE, create=False)
    try:
        assert table_rows_now(tmp_path / STORE) == expected
        # The index followed the store that was lost: it rebuilds itself on a lookup.
        assert titles(restored, "zanzibar") == [LATE[1]]
        assert titles(restored, "quokka") == titles(restored, "walrus") == []
        forget(restored)
        (command,) = rebuild  # the page's way to make it ahead of time
        shell(command, tmp_path)
        assert titles(restored, "zanzibar") == [LATE[1]]
        assert titles(restored, "quokka") == titles(restored, "walrus") == []
    finally:
        forget(restored)
        restored.close()
