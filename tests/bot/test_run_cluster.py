"""Several `paperboy run` processes on one PostgreSQL: one keeps the clock, and when it is
killed (kill -9) another takes the clock over and delivers what falls due, once."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from config.settings import load_settings
from db import open_db, processes
from db.channels import add_subscription, set_schedule
from digests.digest import ensure_channel
from digests.ingest import ingest_files
from tests.fakes import postgres
from tests.fakes.waiting import wait_for

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
HEARTBEAT = 0.5  # seconds: the clock's lease lasts three beats


def start(url: str, outbox: Path, *role: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PAPERBOY_DATABASE_URL": url,
        "PAPERBOY_LOCAL_DIR": str(outbox),
        "PAPERBOY_HEARTBEAT_SECONDS": str(HEARTBEAT),
        "SLACK_BOT_TOKEN": "",
        "DISCORD_TOKEN": "",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "run", *role],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def due_channel(url: str, channel: str, seed_paths: list[Path], due: datetime) -> None:
    db = open_db(url)
    try:
        now = datetime.now(UTC)
        if not db.execute("select count(*) from papers").fetchone()[0]:
            ingest_files(db, seed_paths, now=now - timedelta(days=2))
        ensure_channel(db, channel, load_settings({}, dotenv=None), now - timedelta(days=2))
        subscribed = (now - timedelta(days=2)).isoformat("T", "seconds")
        add_subscription(db, channel, "robotics", None, "test", subscribed)
        weekday = WEEKDAYS[due.weekday()]
        set_schedule(db, channel, weekday, due.strftime("%H:%M"), "UTC", "test", now.isoformat())
    finally:
        db.close()


def clock_holder(url: str) -> str | None:
    db = open_db(url)
    try:
        return processes.holder(db, "clock", processes.database_now(db))
    finally:
        db.close()


def live_pids(url: str) -> set[int]:
    db = open_db(url)
    try:
        now = processes.database_now(db)
        return {
            int(row["pid"]) for row in processes.live(db, now, timedelta(seconds=3 * HEARTBEAT))
        }
    finally:
        db.close()


def status(url: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "status", "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PAPERBOY_HEARTBEAT_SECONDS": str(HEARTBEAT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def written(outbox: Path, name: str) -> list[dict[str, object]]:
    lines = outbox / f"{name}.jsonl"
    return [json.loads(line) for line in lines.read_text().splitlines()] if lines.exists() else []


def test_the_clock_moves_to_a_survivor_after_kill_9(
    tmp_path: Path, seed_paths: list[Path], postgres_server: postgres.Server
) -> None:
    name = postgres_server.fresh_database()
    url = postgres_server.url(name)
    outbox = tmp_path / "outbox"
    due_channel(url, "local:first", seed_paths, datetime.now(UTC) - timedelta(hours=1))
    first = start(url, outbox)
    second = start(url, outbox)
    third = start(url, outbox, "--role", "web")  # never keeps the clock
    try:
        assert wait_for(lambda: len(live_pids(url)) == 3, 30), "not all heartbeating"
        assert wait_for(lambda: len(written(outbox, "first")) == 1, 60)
        holder = clock_holder(url)
        assert holder is not None
        keeper = first if holder.endswith(f":{first.pid}") else second
        survivor = second if keeper is first else first
        assert not holder.endswith(f":{third.pid}")
        keeper.send_signal(signal.SIGKILL)
        keeper.wait(10)
        # Fallen due while nobody holds the clock: the survivor takes it, catches up, and
        # delivers it (and not the first channel's digest again).
        due_channel(url, "local:second", seed_paths, datetime.now(UTC) - timedelta(hours=1))
        assert wait_for(lambda: (clock_holder(url) or "").endswith(f":{survivor.pid}"), 30)
        assert wait_for(lambda: len(written(outbox, "second")) == 1, 60)
        assert live_pids(url) == {survivor.pid, third.pid}
        shown = status(url)
        assert f"Processes: 2 running; the clock is with pid {survivor.pid} on " in shown
        assert f"pid {third.pid} (web): heartbeat" in shown
        assert f"gone: {socket.gethostname()} pid {keeper.pid} (all), silent since" in shown
        survivor.send_signal(signal.SIGTERM)
        assert survivor.wait(20) == 0
        assert clock_holder(url) is None  # a graceful stop lets the clock go at once
    finally:
        for process in (first, second, third):
            process.kill()
            process.wait(10)
        postgres_server.drop(name)
    assert len(written(outbox, "first")) == 1 and len(written(outbox, "second")) == 1
    errors = "".join(p.stderr.read() for p in (first, second, third) if p.stderr)
    assert "Traceback" not in errors
