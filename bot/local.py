"""The local transport: `local:NAME` channels deliver into `PAPERBOY_LOCAL_DIR/NAME.jsonl`.

One JSON line per message, appended and fsynced before the outbox records it as sent,
so an operator (or a test, or a mail pipe) sees exactly what was delivered.

Every line stays valid JSON whatever fails: the append happens under an exclusive lock
on the file, and on any OSError (a full disk mid-write, a failed fsync) the file is cut
back to its size before the append. A line torn by a crash (kill -9 mid-write, so never
recorded as sent) is cut off before the next append; that message is sent again.
"""

from __future__ import annotations

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
from bot.services import utcnow
from digests.channels import ChannelRef
from digests.timestamps import stamp

log = logging.getLogger(__name__)

TAIL_CHUNK = 64 * 1024
# The system calls that can fail mid-append (tests swap them for failing ones).
_write = os.write
_fsync = os.fsync


class LocalPoster:
    platform = "local"

    def __init__(self, folder: Path, clock: Callable[[], datetime] = utcnow) -> None:
        self.folder = folder
        self.clock = clock

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
            append_record(path, line)
        except OSError as exc:
            reason = f"cannot write {path}: {exc.strerror or exc}"
            if is_permanent(exc):
                raise PermanentError(reason) from None
            raise TransientError(reason) from None
        return message_id


def append_record(path: Path, line: bytes) -> None:
    """Append one whole line to `path` and fsync it; on failure leave the file as it was."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # one appender at a time, so the size below holds
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
    finally:
        os.close(fd)  # also releases the lock


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


def is_permanent(exc: OSError) -> bool:
    """Whether writing cannot work until someone acts (a pause, lifted by resume)."""
    return exc.errno not in (errno.ENOSPC, errno.EIO, errno.EAGAIN)
