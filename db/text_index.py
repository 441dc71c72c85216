"""A tantivy full-text index beside the SQLite store, for ranked lookups at scale: derived
from the papers table, caught up from its change log, rebuilt at will (`rebuild`, or
`python -m db.text_index DB`); docs/explanation/architecture.md, "Lookup at scale"."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tantivy

from db import connection
from db.errors import StorageError
from db.store import Store

log = logging.getLogger(__name__)

FORMAT = 3  # bump when the schema or analyzer below changes: old indexes are rebuilt
META = "paperboy.json"
ANALYZER = "paperboy"
# The one ranked field, "text", holds each column this many times: BM25 then weighs a
# title word above an abstract word but saturates like any repeated word, as FTS5's
# column weights do (they scale term frequencies, not whole scores; boosting per-field
# BM25 scores instead ranked worse: find MAP 0.51 against 0.72).
REPEATS = {"title": 6, "names": 10, "keywords": 3, "abstract_text": 1}
TEXT = "text"
KEYS = "keys"  # a method name's lookup keys (`papers.name_keys`), for exact-name matches
OWN = "own"  # the paper's own acronyms (`own_acronyms`), the next tier of exact matches
AUTHORS = "authors"  # each author's name words and run-together name
INITIALS = "initials"  # each author's first initial + surname, for queries that hold an initial
SYNC_HEAP = 64_000_000
BUSY_WAIT_S = 2.0  # how long a lookup waits for another process's update of the index
# A catch-up of more changes than this (about 1 s of indexing, or more) or a rebuild is
# not waited for by a lookup of this process at all: it answers from FTS5 at once.
LONG_BACKLOG = 5_000
FAILURE_PAUSE_S = 30.0  # after a second failure in a row, no new attempt for this long...
FAILURE_PAUSE_MAX_S = 600.0  # ...doubling each time, up to this


class IndexUnavailable(Exception):
    """The index cannot answer now (busy writer elsewhere, read-only, open transaction);
    the caller falls back to FTS5."""


class WriterBusy(IndexUnavailable):
    """Another process holds the index's writer."""


def _analyzer() -> Any:
    # Words of letters and digits, lower-cased, accents folded; no stemming: Porter makes
    # "continual" and "continuous" one word. Over-long tokens are dropped.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(64))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


_ANALYZER = _analyzer()


def analyze(text: str) -> list[str]:
    """The index's tokens for `text`, exactly as the index makes them."""
    tokens: list[str] = _ANALYZER.analyze(text)
    return tokens


def _schema() -> Any:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(TEXT, tokenizer_name=ANALYZER, index_option="freq")
    builder.add_text_field(KEYS, tokenizer_name="whitespace", index_option="basic")
    builder.add_text_field(OWN, tokenizer_name="whitespace", index_option="basic")
    builder.add_text_field(AUTHORS, tokenizer_name=ANALYZER, index_option="freq")
    builder.add_text_field(INITIALS, tokenizer_name="whitespace", index_option="basic")
    return builder.build()


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# An acronym in parentheses ("(DPO)", "(Diffusion-QL)"); the words it stands for are
# looked for before it (a regex that scans for the words first is 100 times slower).
_DEFINED = re.compile(r"\(([A-Z][\w-]{1,15}?)s?\)")
_WORDS_BEFORE = 200  # characters before the parenthesis that may hold its words
# A title's words, hyphens kept ("Beta-DPO"), and which of them are acronyms.
_TITLE_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]*[A-Z][A-Z0-9]*")  # DPO, IQL, GPT4
_CAPITALS_TITLE = 0.8  # a title with more of its letters in capitals is shouted, not named
_GLUE = _word_set("a an and as at by for from in into of on over the to via with")
# What makes a definition the paper's own: a verb that introduces it, then only these
# words ("We propose X (X)", "We dub our method X (X)", "a method called X (X)"), not a
# method it builds on ("X (X) addresses this", "we use X (X)").
_INTRODUCING = _word_set(
    "propose proposes introduce introduces present presents develop develops dub dubs call "
    "calls term terms name names coin coins called named dubbed termed coined"
)
_FILLER = _word_set(
    "a an the our this it as new novel simple method approach algorithm framework "
    "technique objective which we"
)
# Nouns after the parenthesis: the acronym qualifies them ("a federated learning (FL)
# framework"), and is the paper's field, not its own name.
_QUALIFIED = _word_set(
    "method methods framework frameworks algorithm algorithms approach approaches model "
    "models setting settings agent agents problem problems task tasks system systems "
    "policy policies paradigm technique techniques objective based"
)
_NEXT_WORD = re.compile(r"\s*([A-Za-z]+)")
_SENTENCE_END = re.compile(r"[.!?]\s")


def own_acronyms(title: str, abstract_text: str) -> list[str]:
    """The names a paper gives as its own, folded as lookup keys: capitals in its title
    ("DPO Meets PPO"), and acronyms its abstract introduces by their words' initials,
    with those words run together ("We introduce Direct Preference Optimization (DPO),":
    "dpo", "directpreferenceoptimization")."""
    found = title_acronyms(title or "")
    text = abstract_text or ""
    for match in _DEFINED.finditer(text):
        capitals = [char for char in match.group(1) if char.isupper()]
        after = _NEXT_WORD.match(text, match.end())
        if len(capitals) < 2 or (after and after.group(1).casefold() in _QUALIFIED):
            continue
        before = text[max(0, match.start() - _WORDS_BEFORE) : match.start()]
        ends = [end.end() for end in _SENTENCE_END.finditer(before)]
        words = before[ends[-1] if ends else 0 :].split()
        size = _long_form(words, capitals)
        if size and _introduced(words[:-size]):
            found.append("".join(char for char in match.group(1).casefold() if char.isalnum()))
            found.append("".join(analyze(" ".join(words[-size:]))))
    return list(dict.fromkeys(key for key in found if len(key) >= 2))


def title_acronyms(title: str) -> list[str]:
    """The title's acronyms as lookup keys ("DPO Meets PPO": "dpo", "ppo"). An acronym
    joined to another word by a hyphen names a compound, keyed as a whole ("Beta-DPO":
    "betadpo", never "dpo"); a title of 3 words or more mostly in capitals ("ATTENTION IS
    ALL YOU NEED") has none; "SAM 2" is its own name."""
    letters = [char for char in title if char.isalpha()]
    shouted = sum(char.isupper() for char in letters) > _CAPITALS_TITLE * len(letters)
    # "SAM 2" or "DPO" alone is a name, not a shouted sentence: 3 words make one.
    if letters and shouted and sum(any(c.isalpha() for c in w) for w in title.split()) >= 3:
        return []
    found = []
    for word in _TITLE_WORD.findall(title):
        if any(_ACRONYM.fullmatch(part) for part in word.split("-")):
            found.append("".join(char for char in word.casefold() if char.isalnum()))
    return found


def _long_form(words: list[str], capitals: list[str]) -> int:
    """How many of the last `words` have `capitals` as initials (hyphens split words; a
    glue word may give a capital or not: "Learning to Rank (LTR)", "(LfHF)"); 0: none."""
    for size in range(1, min(len(words), 2 * len(capitals)) + 1):
        parts = [part for word in words[-size:] for part in word.split("-") if part]
        every = [part[0].upper() for part in parts]
        content = [part[0].upper() for part in parts if part.casefold() not in _GLUE]
        if capitals in (every, content) and parts[0].casefold() not in _GLUE:
            return size
    return 0


def _introduced(words: list[str]) -> bool:
    """Whether `words` end in an introducing verb and fillers only."""
    for count, word in enumerate(reversed(words)):
        folded = word.strip(",;:").casefold()
        if folded in _INTRODUCING:
            return True
        if folded not in _FILLER or count >= 4:
            return False
    return False


def author_text(authors: Any) -> str:
    """What the index's `AUTHORS` field holds of a paper's authors: each name's words, then
    its words run together ("sergeylevine"), so that "Sergey Levine" finds the name as one
    term."""
    parts = []
    for name in authors or []:
        words = analyze(str(name))
        parts.extend(words)
        if len(words) > 1:
            parts.append("".join(words))
    return " ".join(parts)


def author_initials(authors: Any) -> str:
    """What the index's `INITIALS` field holds: each name's first initial with its last
    word ("slevine"), a term only a query holding an initial asks for ("S. Levine",
    "Levine, S."), so that `find kan` never finds Kai An."""
    keys = []
    for name in authors or []:
        words = analyze(str(name))
        if len(words) > 1:
            keys.append(words[0][0] + words[-1])
    return " ".join(dict.fromkeys(keys))


def _document(row: dict[str, Any]) -> Any:
    doc = tantivy.Document()
    doc.add_text("id", row["id"])
    parts = []
    for column, times in REPEATS.items():
        value = row.get(column)
        if value:
            text = _plain_keywords(value) if column == "keywords" else str(value)
            parts.extend([text] * times)
    doc.add_text(TEXT, "\n".join(parts))
    if row.get("name_keys"):
        doc.add_text(KEYS, str(row["name_keys"]))
    own = own_acronyms(str(row.get("title") or ""), str(row.get("abstract_text") or ""))
    if own:
        doc.add_text(OWN, " ".join(own))
    names = _json_list(row.get("authors"))
    authors = author_text(names)
    if authors:
        doc.add_text(AUTHORS, authors)
        doc.add_text(INITIALS, author_initials(names))
    return doc


def _json_list(value: Any) -> list[Any]:
    if not isinstance(value, str):
        return list(value or [])
    try:
        decoded = json.loads(value)
    except ValueError:
        return [value]
    return decoded if isinstance(decoded, list) else [decoded]


def _plain_keywords(value: str) -> str:
    # Stored as a JSON list; the index wants the words.
    try:
        words = json.loads(value)
    except ValueError:
        return value
    return " ".join(str(word) for word in words) if isinstance(words, list) else value


_COLUMNS = "id, title, names, name_keys, keywords, abstract_text, authors"


@dataclass
class TextIndex:
    """One database's index, shared by the threads of a process."""

    index: Any
    folder: Path | None  # None: in memory
    seq: int = 0  # the last change this process's searcher includes
    lock: threading.Lock = field(default_factory=threading.Lock)
    long_update: bool = False  # the lock's holder is rebuilding or catching up a backlog

    @property
    def schema(self) -> Any:
        return self.index.schema

    def searcher(self) -> Any:
        return self.index.searcher()


_open: dict[str, TextIndex] = {}
_memory: weakref.WeakKeyDictionary[Store, TextIndex] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Current:
    """What a connection saw when it last found its index current (see `_unchanged`)."""

    key: str | None  # the handle's key in `_open`; None: in memory
    handle: TextIndex
    marks: tuple[int, int, tuple[int, int, int] | None, int]


# Per connection: a lookup then skips the whole check (six SQLite statements, two path
# resolutions, the watermark file read and parsed) while nothing has changed.
_current: weakref.WeakKeyDictionary[Store, _Current] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()
_failures: dict[str, tuple[int, float]] = {}  # failures in a row, and no retry before
_clock = time.monotonic  # for the failure pauses (tests replace it)


def database_file(db: Store) -> Path | None:
    """The main database file of `db`, or None when it lives in memory."""
    file = connection.database_file(db)
    return Path(file) if file else None


def index_folder(db_file: Path, fmt: int | None = None) -> Path:
    # The format in the name (the current one by default): another format's is never opened.
    return db_file.with_name(f"{db_file.name}.search-v{FORMAT if fmt is None else fmt}")


def _drop_older_formats(db_file: Path) -> None:
    """Delete the indexes of earlier formats beside `db_file`: no release reads them."""
    for fmt in range(1, FORMAT):
        old = index_folder(db_file, fmt)
        if old.is_dir():
            log.info("deleting the search index of an earlier format at %s", old)
            shutil.rmtree(old, ignore_errors=True)


def _new_index(folder: Path | None) -> Any:
    schema = _schema()
    if folder is None:
        index = tantivy.Index(schema)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        index = tantivy.Index(schema, path=str(folder), reuse=True)
    index.register_tokenizer(ANALYZER, _ANALYZER)
    return index


def _read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return None
    if not isinstance(meta.get("seq"), int):
        return None
    return meta


def _write_meta(folder: Path, seq: int, last: str | None = None) -> None:
    # `last`: the paper id logged at change `seq`, so a store that is not the one this
    # index followed (a backup restored under the same path, then written to past the
    # watermark) is told apart by more than its change count.
    partial = folder / (META + ".part")
    partial.write_text(json.dumps({"format": FORMAT, "seq": seq, "last": last}))
    with partial.open("rb") as handle:
        os.fsync(handle.fileno())
    partial.replace(folder / META)


def may_write(db: Store) -> bool:
    """Whether this connection may create or update the index: an in-memory database, or
    a file this process may write, in its folder, through a WAL connection as `open_db`
    makes (a read-only open is immutable, or has no WAL to write). A lookup by another
    user so leaves nothing behind: a folder it made would be its own, and the owner's
    next update of the index would fail."""
    file = database_file(db)
    if file is None:
        return True
    if not (os.access(file, os.W_OK) and os.access(file.parent, os.W_OK)):
        return False
    return bool(db.execute("pragma journal_mode").fetchone()[0] == "wal")


def _handle(db: Store, writable: bool) -> TextIndex:
    file = database_file(db)
    with _registry_lock:
        if file is None:
            found = _memory.get(db)
            if found is None:
                found = _memory[db] = TextIndex(_new_index(None), None)
                found.seq = -1  # never synced: build on first use
            return found
        key = str(file.resolve())
        found = _open.get(key)
        if found is None:
            folder = index_folder(file)
            if not writable:
                found = _open[key] = TextIndex(_open_for_reading(folder), folder, seq=-1)
                return found
            try:
                index = _new_index(folder)
            except (OSError, ValueError) as exc:
                # Corrupt files, an index of a tantivy version this one cannot read, or a
                # folder we cannot use. It is derived data: make it again (the lookup then
                # rebuilds it), else every lookup would use slow FTS5 for ever.
                log.warning("search index at %s cannot be opened, making it again: %s", folder, exc)
                try:
                    shutil.rmtree(folder)
                    index = _new_index(folder)
                except (OSError, ValueError) as again:
                    raise IndexUnavailable(f"cannot open {folder}: {again}") from again
            found = _open[key] = TextIndex(index, folder, seq=-1)
            _drop_older_formats(file)
        return found


def _open_for_reading(folder: Path) -> Any:
    """The index in `folder` for a connection that may not write the store: never made,
    never repaired. Whatever stops it (no index yet; a folder or files this user may not
    read, as tantivy writes its meta.json owner-only; a lock file it may not take, as
    tantivy takes one even to read) is `IndexUnavailable`: the lookup answers from FTS5,
    with no warning and no failure pause, as this is how things are, not a failure."""
    try:
        if not (folder / META).is_file():  # PermissionError from an unreadable folder
            raise IndexUnavailable(f"no search index at {folder}, and none may be made")
        return _new_index(folder)
    except (OSError, ValueError) as exc:
        raise IndexUnavailable(f"cannot open {folder}: {exc}") from exc


def _last_seq(db: Store) -> int:
    row = db.execute("select max(seq) from search_changes").fetchone()
    if row[0] is not None or db.dialect != "sqlite":
        return int(row[0] or 0)
    row = db.execute("select seq from sqlite_sequence where name = 'search_changes'").fetchone()
    return int(row[0]) if row else 0


def _disk_seq(handle: TextIndex, db: Store | None = None) -> int:
    """The last change the index on disk holds; -1 when it must be rebuilt: no or bad
    watermark, or (given `db`) the change logged at the watermark is not the one the
    index applied there (a restored backup that was then written to)."""
    if handle.folder is None:
        return handle.seq
    seen = None
    for _ in range(3):  # another process may move the watermark and trim meanwhile
        meta = _read_meta(handle.folder)
        if meta is None:
            return -1
        if db is None or meta.get("last") is None:
            return int(meta["seq"])
        if _change_at(db, meta["seq"]) == meta["last"]:
            return int(meta["seq"])
        if meta["seq"] == seen:
            break
        seen = meta["seq"]
    log.warning("search index does not match the store's change log: rebuilding it")
    return -1


def _change_at(db: Store, seq: int) -> str | None:
    row = db.execute("select paper_id from search_changes where seq = ?", [seq]).fetchone()
    return str(row[0]) if row else None


def ready(db: Store) -> TextIndex:
    """The index of `db`, caught up with every committed change to its papers: the change
    log (`search_changes`, filled by migration m012's triggers) applied as idempotent
    upserts, the watermark (`paperboy.json`) written after tantivy commits, so a crash
    only replays changes. An index whose watermark is missing, ahead of the log or not the
    change the log holds at that number (a restored backup), or that tantivy cannot open,
    is rebuilt. A connection that found it current checks again only once something that
    could make it stale moved (`data_version`, `total_changes`, the watermark file), and
    always inside a transaction. In memory for an in-memory database; else the folder
    `index_folder(database file)`.

    Raises `IndexUnavailable` when it cannot be brought up to date now: the connection
    is inside a transaction (uncommitted rows must not enter the index), another process
    holds the index's writer, or this connection may not write (`may_write`), or the
    index failed (its folder removed under a running process, a full disk): the handle is
    then dropped, so the next lookup opens or rebuilds it afresh.
    """
    current = _current.get(db)
    # Not inside a transaction: its snapshot holds data_version and the change count
    # still while another thread or process moves the index past it.
    if current is not None and not db.in_transaction and _unchanged(db, current):
        return current.handle
    key = _failure_key(db)
    failed = _failures.get(key)
    if failed is not None and _clock() < failed[1]:
        raise IndexUnavailable(f"search index failed {failed[0]} times in a row; retried later")
    try:
        handle = _ready(db)
    except IndexUnavailable:
        raise
    except (OSError, ValueError) as exc:  # tantivy reports its I/O errors as these
        # A failure that repeats (a full disk) would otherwise make every lookup pay a
        # rebuild up to the failure (a minute at 1M papers) before answering from FTS5:
        # after the second in a row, wait before trying again, longer each time.
        count = failed[0] + 1 if failed else 1
        pause = 0.0 if count == 1 else min(FAILURE_PAUSE_MAX_S, FAILURE_PAUSE_S * 2 ** (count - 2))
        _failures[key] = (count, _clock() + pause)
        log.warning("search index failed, lookups use FTS5 until it is rebuilt: %s", exc)
        _drop(db)
        raise IndexUnavailable(f"search index failed: {exc}") from exc
    _failures.pop(key, None)
    return handle


def _marks(db: Store, handle: TextIndex) -> tuple[int, int, tuple[int, int, int] | None, int]:
    """What moves whenever the index may no longer be current for `db`'s connection:
    SQLite's data_version (another connection committed), this connection's own change
    count, the watermark file's identity (another process updated the index) and the
    handle's own watermark (another thread of this process updated it: the file's
    identity alone may repeat, as its inode is reused and timestamps can be coarse)."""
    # PostgreSQL has no data_version: the change log's last number moves on every commit.
    version = (
        int(db.execute("pragma data_version").fetchone()[0])
        if db.dialect == "sqlite"
        else _last_seq(db)
    )
    meta = None
    if handle.folder is not None:
        stat = os.stat(handle.folder / META)  # FileNotFoundError: a folder removed
        meta = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return version, _total_changes(db), meta, handle.seq


def _unchanged(db: Store, current: _Current) -> bool:
    handle = current.handle
    registered = _memory.get(db) if current.key is None else _open.get(current.key)
    if registered is not handle:  # dropped (failed, forgotten) since
        return False
    try:
        return _marks(db, handle) == current.marks
    except (OSError, StorageError):
        return False


def _failure_key(db: Store) -> str:
    file = database_file(db)
    return str(file.resolve()) if file is not None else f"memory:{id(db)}"


def forget(db: Store) -> None:
    """Close this process's handle on the index of `db` (after it failed): the next
    `ready` opens it again, or rebuilds it."""
    _drop(db)


def _drop(db: Store) -> None:
    file = database_file(db)
    with _registry_lock:
        if file is None:
            _memory.pop(db, None)
        else:
            _open.pop(str(file.resolve()), None)


def _ready(db: Store) -> TextIndex:
    writable = may_write(db)
    handle = _handle(db, writable)
    # Read before the checks below: a change made meanwhile moves them, so the next
    # lookup checks again.
    try:
        marks = _marks(db, handle)
    except OSError:
        marks = None
    disk_seq = _disk_seq(handle, db)
    last = _last_seq(db)
    if disk_seq == last:
        if disk_seq != handle.seq:  # another process committed: see its changes
            handle.index.reload()
            handle.seq = disk_seq
        if marks is not None and not db.in_transaction:
            file = database_file(db)
            key = None if file is None else str(file.resolve())
            _current[db] = _Current(key, handle, marks)
        return handle
    if db.in_transaction:
        raise IndexUnavailable("inside a transaction")
    if not writable:
        raise IndexUnavailable("the search index is not current, and may not be updated here")
    # Another thread or process updating the index: wait a little for it (a sync of new
    # papers takes well under a second) rather than answer from slow FTS5, but not for a
    # whole rebuild (minutes at 1M papers).
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        if handle.long_update:  # minutes at 1M papers: no lookup waits for it
            raise WriterBusy("another thread is building the search index")
        if not handle.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise WriterBusy("another thread is updating the search index")
        try:
            _catch_up(db, handle)
            return handle
        except WriterBusy:
            if time.monotonic() >= deadline:
                raise
        finally:
            handle.lock.release()
        time.sleep(0.05)


def _catch_up(db: Store, handle: TextIndex) -> None:
    disk_seq = _disk_seq(handle, db)
    last = _last_seq(db)
    handle.long_update = disk_seq < 0 or disk_seq > last or last - disk_seq > LONG_BACKLOG
    try:
        _apply(db, handle, disk_seq, last)
    finally:
        handle.long_update = False


def _apply(db: Store, handle: TextIndex, disk_seq: int, last: int) -> None:
    if disk_seq < 0:
        rebuild(db, handle)
    elif disk_seq > last:
        # The index holds changes this store never made: a store restored from a
        # backup, or replaced, under the same path.
        log.warning("search index is ahead of the store (%d > %d): rebuilding", disk_seq, last)
        rebuild(db, handle)
    elif disk_seq < last:
        _sync(db, handle, disk_seq)
    elif disk_seq != handle.seq:  # another process caught it up meanwhile
        handle.index.reload()
        handle.seq = disk_seq


@contextlib.contextmanager
def _writer(handle: TextIndex, heap: int = SYNC_HEAP) -> Iterator[Any]:
    if handle.folder is not None and not handle.folder.is_dir():
        raise OSError(f"the search index folder {handle.folder} is gone")
    try:
        writer = handle.index.writer(heap, 1)
    except (OSError, ValueError) as exc:  # LockBusy: another process is writing it
        raise WriterBusy(f"index writer busy: {exc}") from exc
    try:
        yield writer
    except BaseException:
        writer.rollback()
        # Drop it now: the exception's traceback keeps this frame, and so the writer and
        # its lock, alive; every update of the index then waited for it and gave up.
        writer.wait_merging_threads()
        raise
    finally:
        del writer  # releases tantivy's writer lock


def _total_changes(db: Store) -> int:
    """The rows this connection changed since it opened (SQLite's count; PostgreSQL has none:
    -1, so every lookup there looks at the change log)."""
    return db.conn.total_changes if isinstance(db.conn, sqlite3.Connection) else -1


@contextlib.contextmanager
def _read_transaction(db: Store) -> Iterator[None]:
    # One read transaction, so the watermark and the rows read agree.
    db.conn.execute("BEGIN" if db.dialect == "sqlite" else "BEGIN ISOLATION LEVEL REPEATABLE READ")
    try:
        yield
    finally:
        db.conn.rollback()


def _sync(db: Store, handle: TextIndex, since: int) -> int:
    """Apply the changes after `since`: each changed paper deleted, then added again as
    it is now (unless it is gone). Streams in chunks, so a big ingest's backlog is never
    all in memory; one tantivy commit at the end."""
    with _writer(handle) as writer, _read_transaction(db):
        seq = _last_seq(db)
        last = _change_at(db, seq)
        changed = [
            row[0]
            for row in db.execute(
                "select distinct paper_id from search_changes where seq > ? and seq <= ?",
                [since, seq],
            ).fetchall()
        ]
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for paper_id in chunk:
                writer.delete_documents_by_term("id", paper_id)
            for row in db.query(f"select {_COLUMNS} from papers where id in ({marks})", chunk):
                writer.add_document(_document(row))
        writer.commit()
        # Under the writer's lock, so the watermark never moves back (a slower process
        # writing an older one after a trim of the rows past it).
        _committed(handle, seq, last)
    log.info("search index: %d changed papers applied (up to change %d)", len(changed), seq)
    return len(changed)


def _committed(handle: TextIndex, seq: int, last: str | None) -> None:
    if handle.folder is not None:
        _write_meta(handle.folder, seq, last)
    handle.index.reload()
    handle.seq = seq


def trim(db: Store) -> int:
    """Delete the change-log rows the index has applied; the number deleted. A write: call
    it where waiting for the write lock is fine (the rebuild command, after an ingest),
    never from a lookup. An untrimmed log costs only disk (about 40 bytes a change).
    The row at the watermark stays: it tells this store from a restored copy."""
    handle = _handle(db, writable=True)
    seq = _disk_seq(handle, db)
    if seq < 0:
        return 0
    return db.execute("delete from search_changes where seq < ?", [seq]).rowcount


def catch_up(db: Store) -> bool:
    """Bring the index up to date with what `db` committed, then trim the applied log:
    call it after an ingest or a fetch commits, so the next lookup does not pay the
    backlog (150k new papers: about 20 s) and the log does not grow for ever. Never
    raises for the index: when it cannot be updated now (another process updating it,
    a reader that may not write, a full disk) it logs why and the next lookup or
    catch-up does the work. Returns whether the index is current. Must not be called
    inside a transaction (it is then a no-op)."""
    if db.in_transaction:
        return False
    try:
        if not may_write(db):
            return False
        ready(db)
        trim(db)
    except IndexUnavailable as exc:
        log.info("search index not brought up to date now: %s", exc)
        return False
    except (OSError, ValueError, StorageError) as exc:
        log.warning("search index not brought up to date now: %s", exc)
        return False
    return True


def rebuild(db: Store, handle: TextIndex | None = None) -> int:
    """Index every paper again from SQLite (crash-safe: tantivy commits atomically and the
    watermark is written after). Returns the number of papers indexed."""
    if handle is None:
        handle = _handle(db, writable=True)
    count = 0
    with _writer(handle, 256_000_000) as writer:
        writer.delete_all_documents()
        with _read_transaction(db):
            seq = _last_seq(db)
            last = _change_at(db, seq)
            for row in db.iterate(f"select {_COLUMNS} from papers"):
                writer.add_document(_document(row))
                count += 1
        writer.commit()
        _committed(handle, seq, last)
    log.info("search index rebuilt: %d papers", count)
    return count


def main(argv: list[str] | None = None) -> int:
    """`python -m db.text_index DB`: rebuild DB's search index now."""
    import argparse

    from db.connection import open_db

    parser = argparse.ArgumentParser(description="Rebuild a Paperboy database's search index.")
    parser.add_argument("db", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    db = open_db(args.db, create=False)
    count = rebuild(db)
    trim(db)
    print(f"search index of {args.db}: {count} papers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
