"""`paperboy run` as a real process fetching from the fake arXiv (PAPERBOY_ARXIV_URL):
killed with kill -9 midway through a fetch, restarted, it resumes with no duplicate and
no gap."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web

from db import open_db
from db import sources as source_store
from digests.timestamps import stamp
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.server import ServedInThread
from tests.fakes.waiting import wait_for

COUNT = 250  # two pages of 200 in each of arXiv's two passes


def _count(db_path: Path, sql: str) -> int:
    db = open_db(db_path)
    try:
        return int(db.execute(sql).fetchone()[0])
    finally:
        db.close()


def test_kill_9_midway_through_a_fetch_then_restart(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    fake = FakeArxiv(
        [
            Entry(
                f"2511.{i:05d}",
                f"Paper {i}: a study of offline learning",
                f"We study problem number {i} of offline reinforcement learning.",
                now - timedelta(minutes=10 * i + 5),
            )
            for i in range(COUNT)
        ]
    )
    second_page = threading.Event()
    gate = threading.Event()

    async def query(request: web.Request) -> web.StreamResponse:
        if request.query.get("start", "0") != "0" and not gate.is_set():
            second_page.set()  # page 1 is stored: the fetcher asks for page 2 only after
            await asyncio.get_running_loop().run_in_executor(None, gate.wait, 60)
        return await fake.query(request)

    app = web.Application()
    app.router.add_get("/api/query", query)
    db_path = tmp_path / "paperboy.db"
    db = open_db(db_path)
    source_store.add_source(
        db, {"name": "arxiv:cs.LG", "kind": "arxiv", "value": "cs.LG", "added_at": stamp(now)}
    )
    db.close()
    with ServedInThread(app) as server:
        env = {
            **os.environ,
            "PAPERBOY_DB": str(db_path),
            "PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox"),
            "PAPERBOY_ARXIV_URL": f"http://127.0.0.1:{server.port}/api",
            "SLACK_BOT_TOKEN": "",
            "DISCORD_TOKEN": "",
        }

        def start() -> subprocess.Popen[str]:
            return subprocess.Popen(
                [sys.executable, "-m", "bot", "run"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )

        first = start()
        try:
            assert second_page.wait(60), "the fetch never reached page 2"
            first.send_signal(signal.SIGKILL)  # kill -9, mid-fetch
            first.wait(10)
        finally:
            first.kill()
        assert _count(db_path, "select count(*) from papers") == 200  # page 1, stored
        row = source_store.get_source(open_db(db_path), "arxiv:cs.LG")
        assert row is not None and row["cursor"] is None and row["last_success_at"] is None
        assert row["fetching_by"] is not None  # the dead process's claim

        gate.set()
        second = start()
        try:
            assert wait_for(
                lambda: (
                    (source_store.get_source(open_db(db_path), "arxiv:cs.LG") or {}).get(
                        "last_success_at"
                    )
                    is not None
                ),
                seconds=60,
            ), "the restarted process never finished the fetch"
            second.send_signal(signal.SIGTERM)
            assert second.wait(15) == 0
        finally:
            second.kill()
        stderr = second.stderr.read() if second.stderr else ""
    assert "Traceback" not in stderr
    assert _count(db_path, "select count(*) from papers") == COUNT  # no gap, no duplicate
    assert _count(db_path, "select count(*) from paper_aliases where alias like 'arXiv:%'") == COUNT
    row = source_store.get_source(open_db(db_path), "arxiv:cs.LG")
    assert row is not None and row["papers_added"] == COUNT - 200  # the first run's count died
    assert row["fetching_by"] is None and row["cursor"] is not None


def test_sigterm_during_a_hanging_fetch_stops_at_once(tmp_path: Path) -> None:
    asked = threading.Event()
    release = threading.Event()

    async def hang(request: web.Request) -> web.StreamResponse:
        asked.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 60)
        return web.Response(text="")

    app = web.Application()
    app.router.add_get("/api/query", hang)
    db_path = tmp_path / "paperboy.db"
    db = open_db(db_path)
    now = datetime.now(UTC)
    source_store.add_source(
        db, {"name": "arxiv:cs.LG", "kind": "arxiv", "value": "cs.LG", "added_at": stamp(now)}
    )
    db.close()
    with ServedInThread(app) as server:
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", "run"],
            env={
                **os.environ,
                "PAPERBOY_DB": str(db_path),
                "PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox"),
                "PAPERBOY_ARXIV_URL": f"http://127.0.0.1:{server.port}/api",
                "SLACK_BOT_TOKEN": "",
                "DISCORD_TOKEN": "",
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert asked.wait(60), "the fetch never started"
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            assert process.wait(15) == 0
            assert time.monotonic() - started < 10  # the run's stop budget
        finally:
            process.kill()
            release.set()
        stderr = process.stderr.read() if process.stderr else ""
    assert "Traceback" not in stderr
    row = source_store.get_source(open_db(db_path), "arxiv:cs.LG")
    assert row is not None and row["fetching_by"] is None  # the claim was released
    assert row["last_success_at"] is None and row["last_error"] is None
