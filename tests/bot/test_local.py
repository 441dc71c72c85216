"""The local transport: every line of NAME.jsonl stays valid JSON whatever fails."""

from __future__ import annotations

import errno
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

import bot.local as local
from bot.delivery import deliver_channel, queue_digest
from bot.local import LocalPoster
from db import open_db
from db.channels import add_subscription, get_channel
from db.store import Store
from digests.channels import parse_channel
from digests.digest import build_digest, ensure_channel
from digests.ingest import ingest_files
from digests.topics import Catalog
from tests.conftest import NOW

CHANNEL = "local:lab"


@pytest.fixture
def db(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, settings):  # type: ignore[no-untyped-def]
    database = open_db(tmp_path / "paperboy.db")
    ingest_files(database, seed_paths, now=NOW - timedelta(days=1))
    ensure_channel(database, CHANNEL, settings, NOW)
    add_subscription(database, CHANNEL, "robotics", None, "test", NOW.isoformat())
    digest = build_digest(database, CHANNEL, NOW, catalog=catalog, settings=settings)
    queue_digest(database, digest, [({"text": "part 1"}, []), ({"text": "part 2"}, [])], NOW)
    return database


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def half_then_enospc(fd: int, data: bytes) -> int:
    """A disk that fills up mid-record: half the bytes land, then ENOSPC."""
    os.write(fd, data[: len(data) // 2])
    raise OSError(errno.ENOSPC, "No space left on device")


async def test_a_full_disk_mid_write_leaves_no_partial_line(
    db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    poster = LocalPoster(tmp_path / "out", lambda: NOW)
    path = tmp_path / "out" / "lab.jsonl"
    monkeypatch.setattr(local, "_write", half_then_enospc)
    first = await deliver_channel(db, poster, CHANNEL, NOW)
    assert first.state == "retrying" and "No space left on device" in (first.reason or "")
    assert not path.exists() or path.read_bytes() == b""  # cut back to where it was
    monkeypatch.setattr(local, "_write", os.write)
    later = NOW + timedelta(hours=1)
    second = await deliver_channel(db, poster, CHANNEL, later)
    assert second.state == "done" and second.sent == 2
    assert [line["text"] for line in lines(path)] == ["part 1", "part 2"]
    # the disk fills again in the middle of a later record: earlier lines stay whole
    monkeypatch.setattr(local, "_write", half_then_enospc)
    with pytest.raises(Exception, match="No space left"):
        await poster.send(parse_channel(CHANNEL), {"text": "part 3"}, None)
    assert [line["text"] for line in lines(path)] == ["part 1", "part 2"]
    assert path.read_bytes().endswith(b"\n")


async def test_a_failed_fsync_takes_the_whole_record_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    poster = LocalPoster(tmp_path, lambda: NOW)
    path = tmp_path / "lab.jsonl"
    await poster.send(parse_channel(CHANNEL), {"text": "kept"}, None)

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(local, "_fsync", failing_fsync)
    with pytest.raises(Exception, match="Input/output error"):
        await poster.send(parse_channel(CHANNEL), {"text": "not durable"}, None)
    assert [line["text"] for line in lines(path)] == ["kept"]


@pytest.mark.parametrize(
    "torn",
    [
        b'{"id": "abc", "text": "tor',
        # valid JSON, but no newline: the append stopped one byte short, and the crash
        # came before the outbox recorded it as sent, so that message goes out again
        b'{"id": "abc", "text": "torn"}',
    ],
)
async def test_a_line_torn_by_a_crash_is_cut_before_the_next_append(
    tmp_path: Path, torn: bytes
) -> None:
    poster = LocalPoster(tmp_path, lambda: NOW)
    path = tmp_path / "lab.jsonl"
    await poster.send(parse_channel(CHANNEL), {"text": "whole"}, None)
    with path.open("ab") as file:  # kill -9 in the middle of the next append
        file.write(torn)
    await poster.send(parse_channel(CHANNEL), {"text": "after"}, None)
    assert [line["text"] for line in lines(path)] == ["whole", "after"]


@pytest.mark.parametrize(
    ("code", "paused"),
    [
        (errno.EMFILE, False),  # too many open files: passes when connections close
        (errno.ENFILE, False),
        (errno.ENOSPC, False),
        (errno.EDQUOT, False),
        (errno.ENOMEM, False),
        (errno.EIO, False),
        (errno.EACCES, True),  # permissions: someone must act
        (errno.EROFS, True),
        (errno.ENOTDIR, True),
    ],
)
async def test_only_errors_that_need_a_person_pause_the_channel(
    db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, paused: bool
) -> None:
    def failing_open(*args: object, **kwargs: object) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(local, "_open", failing_open)
    result = await deliver_channel(db, LocalPoster(tmp_path / "out", lambda: NOW), CHANNEL, NOW)
    assert result.state == ("paused" if paused else "retrying")
    assert bool(get_channel(db, CHANNEL)["paused"]) is paused


async def test_a_slow_disk_never_blocks_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The append and its fsync ran on the event loop: a slow disk (a network mount)
    froze every Slack and Discord answer, and the SIGTERM handler, for as long."""
    import asyncio
    import threading

    release, released = threading.Event(), []

    def slow_fsync(fd: int) -> None:
        released.append(release.wait(5))  # True only if the loop set it meanwhile
        os.fsync(fd)

    monkeypatch.setattr(local, "_fsync", slow_fsync)
    poster = LocalPoster(tmp_path, lambda: NOW)
    sending = asyncio.create_task(poster.send(parse_channel(CHANNEL), {"text": "slow"}, None))
    await asyncio.sleep(0)  # the send starts; the loop must stay free while it syncs
    release.set()
    await sending
    assert released == [True]
    assert [line["text"] for line in lines(tmp_path / "lab.jsonl")] == ["slow"]


async def test_a_send_cut_off_mid_write_leaves_whole_lines_and_frees_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import fcntl
    import threading

    from tests.fakes.waiting import eventually

    entered, release = threading.Event(), threading.Event()

    def slow_fsync(fd: int) -> None:
        entered.set()
        release.wait(10)
        os.fsync(fd)

    poster = LocalPoster(tmp_path, lambda: NOW)
    path = tmp_path / "lab.jsonl"
    await poster.send(parse_channel(CHANNEL), {"text": "before"}, None)
    monkeypatch.setattr(local, "_fsync", slow_fsync)
    sending = asyncio.create_task(poster.send(parse_channel(CHANNEL), {"text": "cut"}, None))
    assert await eventually(entered.is_set)
    sending.cancel()  # a stop, or the send timeout
    with pytest.raises(asyncio.CancelledError):
        await sending
    release.set()

    def free() -> bool:
        with path.open("rb") as file:
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

    assert await eventually(free)  # the write finished and closed (and unlocked) the file
    assert [line["text"] for line in lines(path)] == ["before", "cut"]
