"""Large ingests: a check pass first, then chunked, batched writes; a stop
part-way is recorded, said, and finished by running the ingest again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.papers import count_papers, last_ingest
from digests.ingest import IngestError, bulk, ingest_files
from digests.ingest.pipeline import IngestSummary, prepare, store_row
from tests.conftest import NOW
from tests.fakes.ingest_files import abstract, papers_file, prepared_rows, snapshot

HIDDEN_TOKEN = "[xoxb](https://a.example/x)-1234567890-1234567890123-AbCdEf"  # a link hides it


@pytest.fixture
def chunks_of_three(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)


def fail_at_line(monkeypatch: pytest.MonkeyPatch, line: int) -> None:
    """The second pass's enrichment raises at `line` (what a secret that only the
    rendered TL;DR shows would do: the first pass cannot see it)."""

    def failing(record: Any, now: Any, path: Any = None, fingerprint: Any = None) -> Any:
        if record.line == line:
            raise IngestError(str(path), line, "looks like it holds a Slack token")
        return prepare(record, now, path, fingerprint)

    monkeypatch.setattr(bulk, "prepare", failing)


@pytest.mark.usefixtures("chunks_of_three")
def test_a_large_ingest_commits_in_chunks_and_records_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions = []
    db = open_db(":memory:")
    real = db.write

    def counted() -> Any:
        transactions.append(count_papers(db))
        return real()

    monkeypatch.setattr(db, "write", counted)
    summary = ingest_files(db, [papers_file(tmp_path)], now=NOW)
    assert (summary.added, summary.merged, summary.skipped) == (10, 0, 0)
    assert transactions == [0, 3, 6, 9]  # papers stored before each chunk
    row = last_ingest(db)
    assert row is not None
    assert (row["status"], row["done"], row["total"], row["added"]) == ("complete", 10, 10, 10)


@pytest.mark.usefixtures("chunks_of_three")
def test_a_stop_part_way_keeps_the_chunks_says_so_and_a_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    path = papers_file(tmp_path)
    db_path = tmp_path / "p.db"
    db = open_db(db_path)
    with monkeypatch.context() as patch:
        fail_at_line(patch, 8)
        with pytest.raises(IngestError) as caught:
            ingest_files(db, [path], now=NOW)
    assert str(caught.value) == (
        f"{path}:8: looks like it holds a Slack token; stopped there: 6 of 10 papers before "
        "it were stored (6 added, 0 merged, 0 skipped); run the same ingest again to finish "
        "(stored papers are skipped)"
    )
    assert count_papers(db) == 6  # lines 1-6: two whole chunks
    row = last_ingest(db)
    assert row is not None
    assert (row["status"], row["done"], row["total"]) == ("stopped", 6, 10)
    assert "papers.jsonl:8: looks like it holds a Slack token" in row["error"]
    note = (
        "The last ingest (papers.jsonl, 2026-11-30 09:00 UTC) stopped part-way: 6 of 10 "
        "papers done (6 added, 0 merged, 0 skipped); run the same ingest again to finish "
        "(stored papers are skipped)."
    )
    assert note in run("status", "--db", str(db_path)).output.splitlines()
    chat = run("chat", "--channel", "local:lab", "--db", str(db_path), "status").output
    assert "  " + note in chat.splitlines()

    again = ingest_files(db, [path], now=NOW)
    assert (again.added, again.merged, again.skipped) == (4, 0, 6)
    assert count_papers(db) == 10
    fresh = open_db(":memory:")
    ingest_files(fresh, [path], now=NOW)
    assert snapshot(db) == snapshot(fresh)  # nothing twice, nothing missing
    row = last_ingest(db)
    assert row is not None and row["status"] == "complete"
    assert note not in run("status", "--db", str(db_path)).output


@pytest.mark.usefixtures("chunks_of_three")
def test_an_ingest_killed_part_way_is_reported_as_unfinished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    path = papers_file(tmp_path)
    db_path = tmp_path / "p.db"
    db = open_db(db_path)
    with monkeypatch.context() as patch:
        fail_at_line(patch, 8)
        patch.setattr(bulk.Writer, "stopped", lambda self, error: None)  # no time to say it
        with pytest.raises(IngestError):
            ingest_files(db, [path], now=NOW)
    row = last_ingest(db)
    assert row is not None and (row["status"], row["done"]) == ("running", 6)
    assert (
        "The last ingest (papers.jsonl, 2026-11-30 09:00 UTC) has not finished: 6 of 10 "
        "papers done (6 added, 0 merged, 0 skipped) so far. If it is no longer running, run "
        "the same ingest again to finish (stored papers are skipped)."
    ) in run("status", "--db", str(db_path)).output
    assert ingest_files(db, [path], now=NOW).added == 4
    assert count_papers(db) == 10


@pytest.mark.usefixtures("chunks_of_three")
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "is not valid JSON"),
        (json.dumps({"abstract": f"{abstract(8)} Log in with {HIDDEN_TOKEN}."}), "Slack token"),
        (json.dumps({"title": f"Tokens {HIDDEN_TOKEN}", "abstract": abstract(8)}), "Slack token"),
    ],
)
def test_bad_input_late_in_a_large_file_stores_nothing(
    tmp_path: Path, line: str, message: str
) -> None:
    """The first pass checks everything, including a secret that markup hides and only
    rendering shows, before the first chunk is written."""
    path = papers_file(tmp_path, bad={8: line})
    db = open_db(":memory:")
    with pytest.raises(IngestError) as caught:
        ingest_files(db, [path], now=NOW)
    assert str(caught.value).startswith(f"{path}:8: ")
    assert message in str(caught.value)
    assert "stopped there" not in str(caught.value)
    assert count_papers(db) == 0
    assert last_ingest(db) is None


def test_the_worker_processes_store_what_this_process_would(
    tmp_path: Path, seed_paths: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enrichment in worker processes (spawned: they import the module afresh, with its
    own BATCH_PAPERS of 250) gives the same store as enrichment in this process, merges
    included, in file order."""
    big = papers_file(tmp_path, count=600)
    merges = tmp_path / "merges.jsonl"
    merges.write_text(
        "".join(
            json.dumps({"id": f"2501.{n:05d}", "abstract": abstract(n), "keywords": ["rl"]}) + "\n"
            for n in (5, 300, 599)
        ),
        encoding="utf-8",
    )
    files = [*seed_paths, big, merges, big]

    def store(name: str) -> list[dict[str, Any]]:
        db = open_db(tmp_path / name)
        summary = ingest_files(db, files, now=NOW)
        assert (summary.added, summary.merged, summary.skipped) == (638, 3, 600)
        return snapshot(db)

    here = store("here.db")
    monkeypatch.setattr(bulk, "WORKER_MIN_PAPERS", 1)
    monkeypatch.setattr(bulk, "WORKERS", 2)
    started = []
    real = bulk.Workers.__init__

    def spy(self: Any, *args: Any) -> None:
        started.append(args[-1])
        real(self, *args)

    monkeypatch.setattr(bulk.Workers, "__init__", spy)
    folders = []
    real_mkstemp = bulk.tempfile.mkstemp

    def spool(**kwargs: Any) -> Any:
        folders.append(kwargs["dir"])
        return real_mkstemp(**kwargs)

    monkeypatch.setattr(bulk.tempfile, "mkstemp", spool)
    named: list[list[Path]] = []
    real_add = bulk.Writer.add

    def add(self: Any, item: Any) -> None:
        named[:] = [list(tmp_path.glob(".paperboy-ingest-*"))]  # by the last, all are open
        real_add(self, item)

    monkeypatch.setattr(bulk.Writer, "add", add)
    assert store("workers.db") == here
    assert started == [2]
    # The spools lie beside the database (TMPDIR is often a tmpfs: memory); their names
    # go once both processes hold them, so a killed ingest leaves none behind.
    assert folders == [str(tmp_path), str(tmp_path)]
    assert named == [[]]
    assert not list(tmp_path.glob(".paperboy-ingest-*"))


def test_a_chunk_stores_what_row_by_row_would(tmp_path: Path) -> None:
    """`store_chunk` (batched inserts for new papers, `store_row` for any that a stored or
    earlier paper may be) against `store_row` for each row."""
    text = "\n".join(
        [
            "id\ttitle\tabstract\tauthors",
            f"or1\tMethod1: Learning Task 1 Offline\t{abstract(1)}\tAnn",
            f"or2\tA Second Paper About Things\t{abstract(2)}\tBo",
            f"or1\t\t{abstract(1)} Revised.\tAnn",  # the same external id
            f"\tA Second Paper About Things\t{abstract(3)}\tBo; Cy",  # same title, author
            f"\t\t{abstract(2)}\t",  # the same abstract, untitled
            f"or4\tSomething Else Entirely New\t{abstract(4)}\tDi",
            f"or4\tSomething Else Entirely New\t{abstract(4)}\tDi",  # twice
        ]
    )
    rows = prepared_rows(tmp_path / "mix.tsv", text)

    def outcome(batched: bool) -> tuple[list[dict[str, Any]], tuple[int, int, int]]:
        db = open_db(":memory:")
        first = IngestSummary()
        store_row(db, rows[-1][0], rows[-1][1], NOW, first)  # one paper stored before
        summary = IngestSummary()
        if batched:
            bulk.store_chunk(db, rows, NOW, summary)
        else:
            for row, external_id in rows:
                store_row(db, row, external_id, NOW, summary)
        return snapshot(db), (summary.added, summary.merged, summary.skipped)

    batched, counts = outcome(batched=True)
    assert (batched, counts) == outcome(batched=False)
    assert counts == (2, 1, 4)  # merged: the second's author (or1's longer abstract is no cut one)


def test_workers_that_cannot_start_leave_the_work_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker that dies before its first batch (a program read from stdin cannot be
    spawned) is no failure: this process enriches instead."""

    def no_processes(self: Any, *args: Any) -> None:
        self.queues, self.processes, self.spools = [], [], []

    def dead(self: Any, versions: dict[str, str]) -> Any:
        raise bulk.WorkerFailed("an enrichment worker stopped (exit code 1)")
        yield  # a generator, as the real one

    monkeypatch.setattr(bulk, "WORKER_MIN_PAPERS", 1)
    monkeypatch.setattr(bulk.Workers, "__init__", no_processes)
    monkeypatch.setattr(bulk.Workers, "batches", dead)
    db = open_db(tmp_path / "p.db")
    assert ingest_files(db, [papers_file(tmp_path)], now=NOW).added == 10
    assert "enriching in this process instead" in caplog.text


@pytest.mark.usefixtures("chunks_of_three")
def test_a_file_changed_between_the_passes_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its size or time differs at the first commit: not even the first chunk, read from
    the bytes that changed, is stored."""
    path = papers_file(tmp_path)
    real = bulk.check_files

    def then_change(*args: Any) -> int:
        count = real(*args)
        papers_file(tmp_path, bad={10: json.dumps({"abstract": abstract(11)})})
        return count

    monkeypatch.setattr(bulk, "check_files", then_change)
    db = open_db(":memory:")
    with pytest.raises(IngestError) as caught:
        ingest_files(db, [path], now=NOW)
    assert str(caught.value) == (
        f"{path}: changed while it was being ingested (is it still being written?); "
        "nothing was stored; try again once it is complete"
    )
    assert count_papers(db) == 0
    monkeypatch.setattr(bulk, "check_files", real)
    ingest_files(db, [path], now=NOW)
    assert count_papers(db) == 10


@pytest.mark.usefixtures("chunks_of_three")
def test_a_file_changed_after_a_chunk_is_reported_with_what_was_stored(
    tmp_path: Path,
) -> None:
    path = papers_file(tmp_path)

    def change_after_the_first_chunk(items: Any) -> Any:
        for number, item in enumerate(items):
            if number == 4:  # the first chunk (3 papers) is committed
                with path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps({"abstract": "We propose Net30, a model for t"}))
            yield item

    db = open_db(":memory:")
    with pytest.raises(IngestError) as caught:
        ingest_files(db, [path], now=NOW, progress=change_after_the_first_chunk)
    assert str(caught.value) == (
        f"{path}: changed while it was being ingested (is it still being written?); "
        "stopped there: 3 of 10 papers before it were stored (3 added, 0 merged, 0 skipped); "
        "run the same ingest again to finish (stored papers are skipped)"
    )
    assert count_papers(db) == 3
