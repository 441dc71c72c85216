"""`paperboy run` as a real process: local-only mode, catch-up, kill -9, restart, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from config.settings import load_settings
from db import open_db
from db.channels import add_subscription, set_schedule
from digests.digest import ensure_channel
from digests.ingest import ingest_files
from tests.fakes.waiting import wait_for

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def start(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "run"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _env(db_path: Path, outbox: Path) -> dict[str, str]:
    """Local channels only: no platform token."""
    return {
        "PAPERBOY_DB": str(db_path),
        "PAPERBOY_LOCAL_DIR": str(outbox),
        "SLACK_BOT_TOKEN": "",
        "DISCORD_TOKEN": "",
    }


def test_run_catches_up_survives_kill_9_and_posts_nothing_twice(
    tmp_path: Path, seed_paths: list[Path]
) -> None:
    db_path, outbox = tmp_path / "paperboy.db", tmp_path / "outbox"
    now = datetime.now(UTC)
    db = open_db(db_path)
    ingest_files(db, seed_paths, now=now - timedelta(days=2))
    settings = load_settings({}, dotenv=None)
    ensure_channel(db, "local:lab", settings, now - timedelta(days=2))
    add_subscription(
        db,
        "local:lab",
        "robotics",
        None,
        "test",
        (now - timedelta(days=2)).isoformat(timespec="seconds"),
    )
    due = now - timedelta(hours=1)  # its digest fell due an hour ago, while "down"
    set_schedule(
        db,
        "local:lab",
        WEEKDAYS[due.weekday()],
        due.strftime("%H:%M"),
        "UTC",
        "test",
        now.isoformat(),
    )
    db.close()
    env = _env(db_path, outbox)
    lines = outbox / "lab.jsonl"

    first = start(env)
    try:
        assert wait_for(lambda: lines.exists() and lines.read_text().count("\n") >= 1), (
            "no digest written"
        )
        # Kill once the outbox has recorded it (a kill between the write and the record
        # may repeat that one message: tests/bot/test_scheduler.py covers that case).
        assert wait_for(lambda: _sent(db_path) == 1)
        first.send_signal(signal.SIGKILL)  # kill -9
        first.wait(10)
    finally:
        first.kill()
    [record] = [json.loads(line) for line in lines.read_text().splitlines()]
    assert record["channel"] == "local:lab" and "Paperboy digest for local:lab" in record["text"]
    # Papers, not the one-line empty digest: the seeds (stored two days ago) are new to a
    # first digest, which looks back PAPERBOY_FIRST_DIGEST_DAYS (7).
    assert "Nothing new" not in record["text"] and " new paper" in record["text"], record["text"]

    second = start(env)
    try:
        stderr: list[str] = []
        assert wait_for(lambda: _read_until(second, stderr, "scheduler:")), "".join(stderr)
        time.sleep(0.5)
        second.send_signal(signal.SIGTERM)
        assert second.wait(15) == 0  # a graceful stop
    finally:
        second.kill()
    rest = "".join(stderr) + (second.stderr.read() if second.stderr else "")
    assert "running for local: channels only" in rest
    assert lines.read_text().count("\n") == 1  # restarted: nothing written twice
    assert "Traceback" not in rest


def _read_until(process: subprocess.Popen[str], seen: list[str], marker: str) -> bool:
    assert process.stderr is not None
    line = process.stderr.readline()
    if line:
        seen.append(line)
    return any(marker in text for text in seen)


def _sent(db_path: Path) -> int:
    db = open_db(db_path)
    try:
        return int(db.execute("select count(*) from outbox where state = 'sent'").fetchone()[0])
    finally:
        db.close()


def _states(db_path: Path, channel: str) -> list[str]:
    db = open_db(db_path)
    try:
        rows = db.execute("select state from outbox where channel = ? order by id", [channel])
        return [str(row[0]) for row in rows.fetchall()]
    finally:
        db.close()


def _due_channel(db_path: Path, channel: str, now: datetime, settings: object) -> None:
    db = open_db(db_path)
    ensure_channel(db, channel, settings, now - timedelta(days=2))  # type: ignore[arg-type]
    add_subscription(
        db, channel, "robotics", None, "test", (now - timedelta(days=2)).isoformat("T", "seconds")
    )
    due = now - timedelta(hours=1)
    set_schedule(
        db, channel, WEEKDAYS[due.weekday()], due.strftime("%H:%M"), "UTC", "test", now.isoformat()
    )
    db.close()


def test_sigterm_exits_promptly_while_a_channel_hangs(
    tmp_path: Path, seed_paths: list[Path]
) -> None:
    """A hanging channel holds up neither the healthy ones nor SIGTERM: channels are
    independent in catch-up, and a stop is prompt."""
    import fcntl

    db_path, outbox = tmp_path / "paperboy.db", tmp_path / "outbox"
    now = datetime.now(UTC)
    ingest_files(open_db(db_path), seed_paths, now=now - timedelta(days=2))
    settings = load_settings({}, dotenv=None)
    for channel in ("local:hang", "local:lab"):  # catch-up order: hang first
        _due_channel(db_path, channel, now, settings)
    outbox.mkdir()
    # another process holds the hang channel's file: its send cannot finish
    held = (outbox / "hang.jsonl").open("a")
    fcntl.flock(held.fileno(), fcntl.LOCK_EX)
    env = _env(db_path, outbox)
    lines = outbox / "lab.jsonl"
    process = start(env)
    try:
        assert wait_for(lambda: lines.exists() and lines.read_text().count("\n") == 1), (
            "the healthy channel waited for the hanging one"
        )
        # the hang channel's send is under way (claimed, waiting for the file's lock)
        assert wait_for(lambda: _states(db_path, "local:hang") == ["sending"])
        _sigterm_exits_cleanly_within_10_s(process)
    finally:
        process.kill()
        held.close()
    assert (outbox / "hang.jsonl").read_text() == ""
    db = open_db(db_path)
    [row] = db.query("select state from outbox where channel = 'local:hang'")
    assert row["state"] == "pending"  # cut off by the stop: sent after the next start


HANGING_INGEST = """
import sys, time
from pathlib import Path
import bot.scheduler

MARKER = Path(sys.argv[1])

def hanging_ingest(db, folder, now, **_):  # an inbox file that takes an hour to ingest
    MARKER.write_text("ingesting")
    time.sleep(3600)

bot.scheduler.ingest_inbox = hanging_ingest
sys.argv[1:] = ["run"]
from bot.cli import main
main()
"""


def test_sigterm_exits_promptly_during_a_long_inbox_ingest(
    tmp_path: Path, seed_paths: list[Path]
) -> None:
    """An inbox ingest runs in a worker thread; a 60 MB file takes over a minute. The
    interpreter joined that thread at exit, so SIGTERM waited for the whole ingest."""
    db_path, outbox, marker = tmp_path / "paperboy.db", tmp_path / "outbox", tmp_path / "marker"
    now = datetime.now(UTC)
    ingest_files(open_db(db_path), seed_paths, now=now - timedelta(days=2))
    _due_channel(db_path, "local:lab", now, load_settings({}, dotenv=None))
    process = subprocess.Popen(
        [sys.executable, "-c", HANGING_INGEST, str(marker)],
        env={**os.environ, **_env(db_path, outbox)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(marker.exists), "the catch-up never reached the inbox"
        _sigterm_exits_cleanly_within_10_s(process)
    finally:
        process.kill()


def _sigterm_exits_cleanly_within_10_s(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    began = time.monotonic()
    assert process.wait(30) == 0
    assert time.monotonic() - began < 10
    stderr = process.stderr.read() if process.stderr else ""
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
