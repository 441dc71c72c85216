"""The local transport: `local:NAME` channels deliver into `PAPERBOY_LOCAL_DIR/NAME.jsonl`.

One JSON line per message, appended under an exclusive lock and fsynced (in a daemon
thread) before the outbox records it as sent. Every line stays valid JSON whatever fails:
an append that fails is cut back, and a line torn by a crash is cut off before the next.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import logging
import os
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.delivery import PermanentError, TransientError
from bot.services import in_daemon_thread, utcnow
from digests.channels import ChannelRef
from digests.timestamps import stamp

log = logging.getLogger(__name__)

TAIL_CHUNK = 64 * 1024
LOCK_WAIT_SECONDS = 30.0  # another process holding the file that long: a transient error
LOCK_POLL_SECONDS = 0.05
# The system calls that can fail mid-append (tests swap them for failing ones).
_open = os.open
_write = os.write
_fsync = os.fsync


class LocalPoster:
    platform = "local"

    def __init__(
        self,
        folder: Path,
        clock: Callable[[], datetime] = utcnow,
        lock_wait: float = LOCK_WAIT_SECONDS,
    ) -> None:
        self.folder = folder
        self.clock = clock
        self.lock_wait = lock_wait

    def path_for(self, channel: ChannelRef) -> Path:
        return self.folder / f"{channel.name}.jsonl"

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        message_id = uuid.uuid4().hex[:16]
        record = {
            "id": message_id,
            "channel": str(channel),
            "sent_at": stamp(self.clock()),
            "thread_of": thread_of,
            **payload,
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        path = self.path_for(channel)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = _open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                await self._lock(fd)
            except BaseException:
                os.close(fd)  # also releases the lock
                raise
            # The write and its fsync (slow on a busy or network disk) run off the event
            # loop, which must keep answering Slack and Discord. The thread owns `fd` from
            # here and closes it: a cancel (a stop, a send timeout) leaves the append to
            # finish, whole or cut back, and never closes the file under it.
            writing = asyncio.ensure_future(in_daemon_thread(_append_and_close, fd, path, line))
            writing.add_done_callback(_retrieve)
            await asyncio.shield(writing)
        except OSError as exc:
            reason = f"cannot write {path}: {exc.strerror or exc}"
            if is_permanent(exc):
                raise PermanentError(reason) from None
            raise TransientError(reason) from None
        return message_id

    async def _lock(self, fd: int) -> None:
        """Take the file's exclusive lock (one appender at a time, so the size noted before
        an append holds), waiting without blocking the event loop, at most `lock_wait`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lock_wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if loop.time() >= deadline:
                    raise OSError(errno.EAGAIN, "locked by another process") from None
                await asyncio.sleep(LOCK_POLL_SECONDS)


def _append_and_close(fd: int, path: Path, line: bytes) -> None:
    try:
        append_locked(fd, path, line)
    finally:
        os.close(fd)  # also releases the lock


def _retrieve(task: asyncio.Future[None]) -> None:
    """Consume the outcome of a write whose sender was cut off (nobody else will)."""
    if not task.cancelled():
        task.exception()


def append_locked(fd: int, path: Path, line: bytes) -> None:
    """Append one whole line to the locked file `fd` and fsync it; on any failure leave
    the file as it was."""
    size = _whole_lines_end(fd)
    if size != os.fstat(fd).st_size:
        log.warning("%s ended in a torn line (a crash mid-write): cut it off", path)
        os.ftruncate(fd, size)
    try:
        written = 0
        while written < len(line):
            written += _write(fd, line[written:])
        _fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, size)  # no partial line left for the next append to follow
        except OSError:
            log.error("could not cut %s back after a failed write", path)
        raise


def _whole_lines_end(fd: int) -> int:
    """The offset just after the file's last newline (0 if it has none)."""
    end = os.fstat(fd).st_size
    position = end
    while position > 0:
        start = max(0, position - TAIL_CHUNK)
        chunk = os.pread(fd, position - start, start)
        if position == end and chunk.endswith(b"\n"):
            return end
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0


# Errors that will not clear by themselves: a person must fix permissions, a read-only
# mount, a path that is not a folder, or an over-large file, then `resume` the channel.
# Everything else (EMFILE/ENFILE: too many open files, ENOSPC/EDQUOT: a full disk,
# ENOMEM, EIO, EAGAIN, ENOENT for a folder removed meanwhile, an unknown errno) is
# transient: retried with backoff, and given up after PAPERBOY_MAX_ATTEMPTS, never a
# pause, since pausing on a passing condition would stop the channel until someone acts.
PERMANENT_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EFBIG,
    }
)


def is_permanent(exc: OSError) -> bool:
    """Whether writing cannot work until someone acts (a pause, lifted by resume)."""
    return exc.errno in PERMANENT_ERRNOS
