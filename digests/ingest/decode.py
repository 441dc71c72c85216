"""Open a source file safely and read it as lines, with bounded memory.

- Only regular files are read: a symbolic link, a directory, a FIFO, a socket or a
  device is refused by name (issue 9, items 5 and 17: a symlink to `.env` was
  ingested, `ingest /dev/zero` read until MemoryError, a FIFO hung forever). The file
  is opened with `O_NOFOLLOW | O_NONBLOCK` and checked again after opening, so a path
  swapped in between cannot slip through or block.
- Text is UTF-8 (BOM optional) or BOM-marked UTF-16, decoded in chunks; line ends
  become `\\n`; a line longer than the record limit stops the read at once.
- Every line is checked for secrets (`digests.ingest.secrets`); a `.env`-style file is
  refused.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from digests.ingest.errors import FileChanged, IngestError
from digests.ingest.secrets import ENV_LINES_TO_REFUSE, is_env_line, refuse_secrets

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 16
DEFAULT_MAX_RECORD_KB = 100


@dataclass(frozen=True)
class Limits:
    """Size limits for one source. A record (a row, a paragraph, a JSON object) and a
    line may not exceed `max_record_chars`; a format read as one document (a JSON
    array, an Atom feed) may not exceed `max_document_chars`."""

    max_record_chars: int = DEFAULT_MAX_RECORD_KB * 1000
    max_document_chars: int = 64_000_000

    @classmethod
    def from_kb(cls, max_record_kb: int) -> Limits:
        return cls(max_record_chars=max_record_kb * 1000)

    def too_long(self, what: str, size: int) -> str:
        return (
            f"{what} is {size // 1000:,} KB, over the {self.max_record_chars // 1000:,} KB limit "
            "for one paper (PAPERBOY_MAX_RECORD_KB)"
        )


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "is a symbolic link; refusing to follow it (give the file itself)"
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file; refusing to read it"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file; refusing to read it"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file; refusing to read it"
    return "is not a regular file; refusing to read it"


def check_regular(path: Path) -> os.stat_result:
    """The path's own status (a link is not followed). Raises IngestError unless it is a
    regular file."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        raise IngestError(str(path), None, "no such file") from None
    except OSError as exc:
        raise IngestError(str(path), None, f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(status.st_mode):
        raise IngestError(str(path), None, _kind(status.st_mode))
    return status


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading, refusing anything else (see the module doc)."""
    before = check_regular(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno is not None and os.path.islink(path):
            raise IngestError(str(path), None, _kind(stat.S_IFLNK)) from None
        raise IngestError(str(path), None, f"cannot be read ({exc.strerror})") from None
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (
        before.st_dev,
        before.st_ino,
    ):
        os.close(fd)
        raise IngestError(str(path), None, "changed while it was being opened; try again")
    return os.fdopen(fd, "rb")


def read_lines(
    path: Path, limits: Limits | None = None, versions: dict[str, str] | None = None
) -> Iterator[str]:
    """The file's lines, each ending in `\\n` (the last one may not), decoded.

    Raises IngestError (naming the line) for a special, binary, undecodable, empty or
    `.env`-style file, a line over the record limit, or a line that holds a secret.

    Only the bytes present when the file was opened are read, so a file that keeps
    growing still ends. With `versions`, the content's hash is recorded there (by
    path) at the end of a first read; a later read that finds other bytes raises
    IngestError: the file changed between two passes over it.
    """
    limits = limits or Limits()
    shown = str(path)
    with open_regular(path) as handle:
        digest = hashlib.sha256()
        chunks = _chunks(handle, digest)
        first = next(chunks)
        if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            encoding = "utf-16"
        else:
            encoding = "utf-8-sig"
            if b"\x00" in first[:8192]:
                line = first[: first.index(b"\x00")].count(b"\n") + 1
                raise IngestError(shown, line, "looks like a binary file, not a paper list")
        decoder = codecs.getincrementaldecoder(encoding)()
        number, env_lines, meaningful = 0, 0, 0
        pending = ""
        chunk = first
        while True:
            try:
                text = decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                line = number + pending.count("\n") + chunk[: exc.start].count(b"\n") + 1
                name = encoding.upper().replace("-SIG", "")
                raise IngestError(shown, line, f"is not valid {name} text") from None
            pending = (pending + text).replace("\r\n", "\n")
            if pending.endswith("\r") and chunk:
                pending, carry = pending[:-1], "\r"  # maybe half of a "\r\n"
            else:
                carry = ""
            pending = pending.replace("\r", "\n")
            lines = pending.split("\n")
            pending = lines.pop() + carry
            if len(pending) > limits.max_record_chars:
                raise IngestError(
                    shown, number + len(lines) + 1, limits.too_long("a line", len(pending))
                )
            for complete in lines:
                number += 1
                if len(complete) > limits.max_record_chars:
                    raise IngestError(shown, number, limits.too_long("a line", len(complete)))
                meaningful, env_lines = _check(shown, number, complete, meaningful, env_lines)
                yield complete + "\n"
            if not chunk:
                break
            chunk = next(chunks)
        if versions is not None:
            seen = versions.setdefault(shown, digest.hexdigest())
            if seen != digest.hexdigest():
                raise FileChanged(shown, None, CHANGED)
        if pending:
            number += 1
            meaningful, env_lines = _check(shown, number, pending, meaningful, env_lines)
            yield pending
        if meaningful == 0:
            raise IngestError(shown, 1, "is empty: there are no papers in it")
        if env_lines and env_lines == meaningful:
            raise IngestError(shown, 1, _ENV_FILE)


def _chunks(handle: BinaryIO, digest: Any) -> Iterator[bytes]:
    """The file's bytes in chunks, up to its size when opened, then b"" for ever."""
    left = os.fstat(handle.fileno()).st_size
    while left > 0:
        chunk = handle.read(min(CHUNK_BYTES, left))
        if not chunk:
            break  # truncated meanwhile
        left -= len(chunk)
        digest.update(chunk)
        yield chunk
    while True:
        yield b""


CHANGED_PART = "changed while it was being ingested (is it still being written?)"
CHANGED = f"{CHANGED_PART}; nothing was stored; try again once it is complete"
_ENV_FILE = "looks like a .env file of NAME=value settings, not a paper list; refusing it"


def _check(path: str, number: int, line: str, meaningful: int, env_lines: int) -> tuple[int, int]:
    """Refuse secrets and `.env` files; count the lines that say something."""
    refuse_secrets([line], path, number)
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return meaningful, env_lines
    if meaningful == env_lines and is_env_line(line):
        env_lines += 1
        if env_lines >= ENV_LINES_TO_REFUSE:
            raise IngestError(path, number, _ENV_FILE)
    return meaningful + 1, env_lines
