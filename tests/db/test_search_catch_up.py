"""Where the product ingests (paperboy ingest, the inbox, a fetch), the search index is
brought up to date and the applied change log trimmed right after the commit, so the next
lookup does not pay for indexing the ingest and `search_changes` does not grow for ever."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from db import open_db, text_index
from db.store import Store
from tests.conftest import NOW


@pytest.fixture(autouse=True)
def _fresh_registry() -> Any:
    text_index._open.clear()
    yield
    text_index._open.clear()


def papers_file(folder: Path, name: str, count: int) -> Path:
    path = folder / name
    lines = [
        json.dumps(
            {
                "id": f"{name}-{i}",
                "title": f"Capybara grazing pattern number {i}",
                "abstract": f"Capybaras graze in groups; study {i}.",
                "venue": "X",
                "year": 2026,
            }
        )
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def caught_up(db: Store) -> bool:
    """The index on disk holds every change, and the log only the row at its watermark."""
    folder = text_index.index_folder(text_index.database_file(db))  # type: ignore[arg-type]
    meta = text_index._read_meta(folder)
    logged = db.execute("select count(*) from search_changes").fetchone()[0]
    text_index._open.clear()  # as the next process sees it: current, no rebuild due
    current = text_index._disk_seq(text_index._handle(db, writable=True), db)
    return meta is not None and current == meta["seq"] == text_index._last_seq(db) and logged == 1


def test_paperboy_ingest_brings_the_index_up_to_date(run: Any, tmp_path: Path) -> None:
    source = papers_file(tmp_path, "a.jsonl", 5)
    result = run("ingest", str(source), "--db", str(tmp_path / "p.db"))
    assert result.exit_code == 0, result.output
    assert caught_up(open_db(tmp_path / "p.db"))


def test_the_inbox_brings_the_index_up_to_date(tmp_path: Path) -> None:
    from bot.inbox import ingest_inbox

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    papers_file(inbox, "b.jsonl", 5)
    db = open_db(tmp_path / "p.db")
    result = ingest_inbox(db, inbox, NOW)
    assert result.loaded == ["b.jsonl"]
    assert caught_up(db)


def test_catch_up_never_raises_and_skips_inside_a_transaction(tmp_path: Path) -> None:
    db = open_db(tmp_path / "p.db")
    db.conn.execute("begin")
    db.execute(
        "insert into papers (id, title, abstract, abstract_text, added_at) "
        "values ('u1', 'Uncommitted', 'x', 'x', '2026')"
    )
    assert text_index.catch_up(db) is False
    assert db.conn.in_transaction  # the caller's transaction is left alone
    db.conn.rollback()
    assert text_index.catch_up(db) is True


async def test_a_fetch_brings_the_index_up_to_date(tmp_path: Path) -> None:
    from bot.fetching import FetchConfig
    from tests.fakes.arxiv_api import FakeArxiv
    from tests.fakes.fetched import add, entries, fetch
    from tests.fakes.server import serve

    fake = FakeArxiv(entries(6))
    runner, port = await serve(fake.app())
    try:
        config = FetchConfig(
            arxiv_url=f"http://127.0.0.1:{port}/api", arxiv_page_size=5, arxiv_revisions=False
        )
        path = tmp_path / "p.db"
        db = open_db(path)
        add(db, "arxiv:cs.LG")
        (outcome,) = await fetch(path, config)
        assert outcome.added == 6
        assert caught_up(db)
    finally:
        await runner.cleanup()
