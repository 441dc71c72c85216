"""Open a source file safely and read it as lines, with bounded memory.

Only regular files are read (`O_NOFOLLOW | O_NONBLOCK`, checked again after opening): a
link, directory, FIFO, socket or device is refused by name. Text is UTF-8 (BOM optional) or
BOM-marked UTF-16, decoded in chunks; a line over the record limit stops the read (a whole
document may reach the document limit); a run of blank lines is one item. Every line is
checked for secrets (`digests.ingest.secrets`).
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

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

    def too_big(self, what: str) -> str:
        """For a whole-document format (`what`: "a JSON array") over its limit."""
        return (
            f"is {what} over {self.max_document_chars // 1_000_000} MB; "
            "split it, or use JSON Lines or TSV, which are read one paper at a time"
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
    path: Path,
    limits: Limits | None = None,
    versions: dict[str, str] | None = None,
    *,
    document: Callable[[str], str | None] | None = None,
    seen: dict[str, Stat] | None = None,
) -> Iterator[str]:
    """The file's lines, decoded, each ending in `\\n` (the last one may not). Where blank
    lines (nothing but whitespace) are most of the text, a run of them comes as one
    string, those lines joined, so that they cost little however many there are: count
    an item's lines with `lines_in`.

    Raises IngestError (naming the line) for a special, binary, undecodable, empty or
    `.env`-style file, a line over the record limit (its size measured, not held), or a
    line that holds a secret. `document(first line that is not blank)` names the
    whole-document format the file is in ("a JSON array"), if it is one: its lines may
    then be as long as the document limit (`json.dump` writes one line).

    Only the bytes present when the file was opened are read, so a file that keeps
    growing still ends. With `versions`, the content's hash is recorded there (by
    path) at the end of a first read; a later read that finds other bytes raises
    IngestError: the file changed between two passes over it. With `seen`, the file's
    size and modification time when opened (`stat_of`) are recorded there, or, if a
    caller recorded them before (the inbox, when it found the file), must be those:
    FileChanged otherwise.
    """
    limits = limits or Limits()
    shown = str(path)
    with open_regular(path) as handle:
        status = os.fstat(handle.fileno())
        if seen is not None and seen.setdefault(shown, stat_of(status)) != stat_of(status):
            raise FileChanged(shown, None, CHANGED)
        digest = hashlib.sha256()
        chunks = _chunks(handle, digest, status.st_size)
        first = next(chunks)
        if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            encoding = "utf-16"
        else:
            encoding = "utf-8-sig"
            if b"\x00" in first[:8192]:
                line = first[: first.index(b"\x00")].count(b"\n") + 1
                raise IngestError(shown, line, "looks like a binary file, not a paper list")
        decoder = codecs.getincrementaldecoder(encoding)()
        lines = _Lines(shown, limits, document)
        chunk = first
        carry = ""
        while True:
            try:
                text = carry + decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                line = lines.number + 1 + chunk[: exc.start].count(b"\n")
                name = encoding.upper().replace("-SIG", "")
                raise IngestError(shown, line, f"is not valid {name} text") from None
            carry = ""
            if text.endswith("\r") and chunk:
                text, carry = text[:-1], "\r"  # maybe half of a "\r\n"
            yield from lines.split(text.replace("\r\n", "\n").replace("\r", "\n"))
            if lines.size > lines.limit:
                lines.refuse_unfinished(None if carry else (chunks, decoder))
            if not chunk:
                break
            chunk = next(chunks)
        hashed = digest.hexdigest()
        if versions is not None and versions.setdefault(shown, hashed) != hashed:
            raise FileChanged(shown, None, CHANGED)
        yield from lines.end()


class _Lines:
    """`read_lines`' state: the lines of decoded text as it comes, checked and counted."""

    def __init__(self, path: str, limits: Limits, document: Callable[[str], str | None] | None):
        self.path, self.limits, self.document = path, limits, document
        self.limit = limits.max_record_chars  # for one line
        self.whole: str | None = None  # the whole-document format, once the first line says
        self.decided = document is None
        self.number = self.meaningful = self.env_lines = 0
        self.parts: list[str] = []  # the line that the text so far left unfinished
        self.size = 0

    def split(self, text: str) -> Iterator[str]:
        """The lines that `text` finishes; where they are blank lines mostly, a run of
        blank lines as one item."""
        pos = 0
        if self.parts:
            end = text.find("\n")
            self.parts.append(text if end < 0 else text[:end])
            self.size += len(self.parts[-1])
            if end < 0:
                return
            complete = "".join(self.parts)
            self.parts, self.size, pos = [], 0, end + 1
            if complete.strip():
                yield self._line(complete)
            else:
                self.number += 1
                yield complete + "\n"
        if text.count("\n", pos) * SHORT_LINE_CHARS > len(text) - pos:
            yield from self._runs(text, pos)
            return
        # Lines as they usually are: split at C speed, a blank one checked no further;
        # the state in locals (this loop runs once per line of every file).
        lines = text[pos:].split("\n")
        unfinished = lines.pop()
        path, number, limit = self.path, self.number, self.limit
        meaningful, env_lines = self.meaningful, self.env_lines
        for line in lines:
            number += 1
            if not line or line.isspace():
                yield line + "\n"
                continue
            if not self.decided:
                self._decide(line)
                limit = self.limit
            if len(line) > limit:
                self._refuse(number, len(line))
            meaningful, env_lines = _check(path, number, line, meaningful, env_lines)
            yield line + "\n"
        self.number, self.meaningful, self.env_lines = number, meaningful, env_lines
        if unfinished:
            self.parts, self.size = [unfinished], len(unfinished)

    def _runs(self, text: str, pos: int) -> Iterator[str]:
        """`split` for text of short lines, blank ones mostly: a run of blank lines is
        one item, found at C speed."""
        while pos < len(text):
            if text[pos].isspace():  # "\n" too
                stop = _blank_end(text, pos)
                if stop > pos:
                    run = text[pos:stop]
                    self.number += run.count("\n")
                    pos = stop
                    yield run
                    continue
            end = text.find("\n", pos)
            if end < 0:
                self.parts, self.size = [text[pos:]], len(text) - pos
                return
            yield self._line(text[pos:end])  # not blank: blank lines were taken above
            pos = end + 1

    def _line(self, line: str, ending: str = "\n") -> str:
        """A finished line that is not blank, checked."""
        self.number += 1
        self._decide(line)
        if len(line) > self.limit:
            self._refuse(self.number, len(line))
        self.meaningful, self.env_lines = _check(
            self.path, self.number, line, self.meaningful, self.env_lines
        )
        return line + ending

    def _decide(self, line: str) -> None:
        """The first line that is not blank says whether the file is a whole document."""
        if not self.decided and self.document is not None:
            self.whole, self.decided = self.document(line), True
            if self.whole:
                self.limit = self.limits.max_document_chars

    def refuse_unfinished(self, rest: tuple[Iterator[bytes], Any] | None) -> None:
        """Raise for the unfinished line, over the limit, unless the file turns out to be a
        whole document that allows it. `rest`: the chunks and decoder to measure the
        line's full length with (None: it ends where it is)."""
        if not self.decided:
            unfinished = "".join(self.parts)
            self.parts = [unfinished]
            if unfinished.strip():
                self._decide(unfinished)
                if self.size <= self.limit:
                    return
        size = self.size if rest is None or self.whole else _measure(self.size, *rest)
        self._refuse(self.number + 1, size)

    def _refuse(self, number: int, size: int) -> NoReturn:
        """A line over the limit: a whole document over its own, or one line over a
        paper's (`size`: its length, as far as it was measured)."""
        if self.whole:
            raise IngestError(self.path, None, self.limits.too_big(self.whole))
        if size > MEASURE_CHARS:
            over = self.limits.too_long("a line", MEASURE_CHARS)
            raise IngestError(self.path, number, over.replace(" is ", " is more than ", 1))
        raise IngestError(self.path, number, self.limits.too_long("a line", size))

    def end(self) -> Iterator[str]:
        """The last line if it has no line end; then the checks of the whole file."""
        if self.parts:
            pending = "".join(self.parts)
            if pending.strip():
                yield self._line(pending, "")
            else:
                self.number += 1
                yield pending
        if self.meaningful == 0:
            raise IngestError(self.path, 1, "is empty: there are no papers in it")
        if self.env_lines and self.env_lines == self.meaningful:
            raise IngestError(self.path, 1, _ENV_FILE)


# Text whose lines are this short on average is blank lines mostly: `_Lines._runs`.
SHORT_LINE_CHARS = 8
_NEWLINES = re.compile(r"\n++")  # a one-character class: 10 times faster than \s
_SPACES = re.compile(r"\s++")  # what str.strip() strips, newlines too


def _blank_end(text: str, pos: int) -> int:
    """The end of the run of blank lines (whitespace only, each ending in a newline) that
    starts at `pos`, or `pos` if there is none; matched at C speed."""
    found = _NEWLINES.match(text, pos)
    stop = found.end() if found else pos
    if stop < len(text) and text[stop].isspace():
        found = _SPACES.match(text, stop)
        stop = found.end() if found else stop
    return text.rfind("\n", pos, stop) + 1 or pos


# A line's size over the limit is measured up to this many characters (read, never held).
MEASURE_CHARS = 64_000_000


def lines_in(item: str) -> int:
    """How many lines one item of `read_lines` is (a run of blank lines is many)."""
    return item.count("\n") or 1


def blank_lines(count: int) -> Iterator[str]:
    """`count` blank lines, as `read_lines` gives them (a few runs): for a reader that
    took them to see what follows, and hands them on to count."""
    while count > 0:
        run = min(count, CHUNK_BYTES)
        count -= run
        yield "\n" * run


def skip_blank(lines: Iterable[str]) -> tuple[int, str | None, Iterator[str]]:
    """(the number of blank lines at the start, the first line that is not blank or None,
    the lines after it), holding none of the blank lines."""
    stream = iter(lines)
    blank = 0
    for line in stream:
        if line.strip():
            return blank, line, stream
        blank += lines_in(line)
    return blank, None, stream


def _measure(size: int, chunks: Iterator[bytes], decoder: Any) -> int:
    """The length of a line of which `size` characters are read, reading on (up to
    MEASURE_CHARS past it, holding nothing) to its end: the rest of `chunks`, decoded."""
    while size <= MEASURE_CHARS:
        chunk = next(chunks)
        try:
            text: str = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            return size  # the read stops here anyway
        ends = [end for end in (text.find("\n"), text.find("\r")) if end >= 0]
        if ends:
            return size + min(ends)
        size += len(text)
        if not chunk:
            return size
    return size


def _chunks(handle: BinaryIO, digest: Any, left: int) -> Iterator[bytes]:
    """The file's bytes in chunks, up to `left` (its size when opened), then b"" for ever."""
    while left > 0:
        chunk = handle.read(min(CHUNK_BYTES, left))
        if not chunk:
            break  # truncated meanwhile
        left -= len(chunk)
        digest.update(chunk)
        yield chunk
    while True:
        yield b""


# A file's version as far as its status tells: (size, modification time in ns).
Stat = tuple[int, int]


def stat_of(status: os.stat_result) -> Stat:
    return status.st_size, status.st_mtime_ns


def check_unchanged(seen: dict[str, Stat]) -> None:
    """Raise FileChanged for the first file of `seen` whose size or modification time is
    not what was seen (or that is gone): it is being written, or was replaced."""
    for shown, then in seen.items():
        try:
            now: Stat | None = stat_of(os.lstat(shown))
        except OSError:
            now = None
        if now != then:
            raise FileChanged(shown, None, CHANGED)


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
