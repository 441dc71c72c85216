"""Ingestion: every format, idempotency, merging, and malformed files changing nothing."""

from __future__ import annotations

import json
import queue
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db.papers import count_papers, get_paper, resolve_paper
from db.store import Store
from digests.identity import paper_id
from digests.ingest import IngestError, bulk, ingest_files
from digests.ingest.errors import FileChanged
from digests.ingest.pipeline import read_file
from tests.conftest import NOW
from tests.fakes.arxiv_feed import ARXIV_FEED

ABSTRACT_A = (
    "We propose AlphaDPO, an adaptive preference optimization framework. "
    "Code: https://github.com/example/alphadpo."
)
ABSTRACT_B = "We introduce ResDex, a novel approach that integrates residual policy learning."


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def snapshot(db: Store) -> list[dict[str, object]]:
    return list(db.query("select * from papers order by id"))


def test_seeds_give_19_papers_each_with_venue_and_year(seed_paths: list[Path]) -> None:
    icml, iclr = (read_file(path) for path in seed_paths)
    assert len(icml) == 19 and len(iclr) == 19
    assert {(r.venue, r.year) for r in icml} == {("ICML", 2025)}
    assert {(r.venue, r.year) for r in iclr} == {("ICLR", 2025)}  # "ICLR 2025 论文列表"


def test_seeds_ingest_as_38_and_again_as_0(fresh_db: Store, seed_paths: list[Path]) -> None:
    first = ingest_files(fresh_db, seed_paths, now=NOW)
    assert (first.added, first.merged, first.skipped) == (38, 0, 0)
    again = ingest_files(fresh_db, seed_paths, now=NOW + timedelta(days=1))
    assert (again.added, again.merged, again.skipped) == (0, 0, 38)
    assert "Nothing new" in again.describe()
    assert count_papers(fresh_db) == 38


def test_the_same_papers_in_a_file_of_another_name_are_already_stored_not_merged(
    fresh_db: Store, seed_paths: list[Path], tmp_path: Path
) -> None:
    # A copy of a file (or a second list of the same papers) said "19 merged", though
    # all it brought was its own file name.
    ingest_files(fresh_db, seed_paths[:1], now=NOW)
    copy = write(tmp_path, "icml2025-copy.txt", seed_paths[0].read_text(encoding="utf-8"))
    again = ingest_files(fresh_db, [copy], now=NOW + timedelta(days=1))
    assert (again.added, again.merged, again.skipped, again.restamped) == (0, 0, 19, 19)
    assert again.describe() == (
        "19 papers read from 1 file: 0 added, 0 merged, 19 skipped (already stored). Nothing new"
    )
    sources = {row["sources"] for row in fresh_db.query("select sources from papers")}
    assert sources == {json.dumps(["icml2025.txt", "icml2025-copy.txt"])}  # still recorded
    row = fresh_db.execute("select added, merged, skipped from ingests order by id desc").fetchone()
    assert row == (0, 0, 19)  # what `paperboy status` reports of it


def test_stored_paper_has_everything(fresh_db: Store, seed_paths: list[Path]) -> None:
    ingest_files(fresh_db, seed_paths, now=NOW)
    [row] = fresh_db.query("select id from papers where method = 'ExpoComm'")
    paper = get_paper(fresh_db, row["id"])
    assert paper is not None
    assert paper["venue"] == "ICLR" and paper["year"] == 2025
    assert paper["title"].startswith("ExpoComm:") and paper["title_derived"] == 1
    assert paper["code_url"] == "https://github.com/LXXXXR/ExpoComm"
    assert paper["sources"] == ["iclr2025.txt"]
    assert paper["added_at"] == NOW.isoformat(timespec="seconds")
    assert paper["tldr"]


def test_same_abstract_from_two_formats_is_one_paper_with_merged_metadata(
    fresh_db: Store, tmp_path: Path
) -> None:
    seed = write(tmp_path, "list.txt", f"ICML 2025 Papers\n\n{ABSTRACT_A}\n\n{ABSTRACT_B}\n")
    jsonl = write(
        tmp_path,
        "extra.jsonl",
        json.dumps(
            {
                "title": "AlphaDPO: Adaptive Reward Margin",
                "abstract": "  " + ABSTRACT_A.upper() + "  ",  # same words, other case
                "authors": ["Ann Author", "Bo Writer"],
                "keywords": "preference optimization, alignment",
                "url": "https://openreview.net/forum?id=abc123",
                "id": "abc123",
            }
        )
        + "\n",
    )
    ingest_files(fresh_db, [seed], now=NOW)
    summary = ingest_files(fresh_db, [jsonl], now=NOW)
    assert (summary.added, summary.merged) == (0, 1)
    paper = get_paper(fresh_db, paper_id(ABSTRACT_A))
    assert paper is not None
    assert paper["title"] == "AlphaDPO: Adaptive Reward Margin"  # a real title wins
    assert paper["title_derived"] == 0
    assert paper["venue"] == "ICML"  # kept from the first source
    assert paper["authors"] == ["Ann Author", "Bo Writer"]
    assert paper["keywords"] == ["preference optimization", "alignment"]
    assert paper["openreview_url"] == "https://openreview.net/forum?id=abc123"
    assert paper["code_url"] == "https://github.com/example/alphadpo"
    assert paper["sources"] == ["list.txt", "extra.jsonl"]
    assert resolve_paper(fresh_db, "abc123") == paper  # external id works as an alias


def test_csv_tsv_and_header_aliases(fresh_db: Store, tmp_path: Path) -> None:
    csv_file = write(
        tmp_path,
        "papers.csv",
        'Title,Summary,Link,Venue,Year,Authors\n"T1","'
        + ABSTRACT_A.replace('"', '""')
        + '",https://x.org/1,NeurIPS,2024,"A; B"\n',
    )
    tsv_file = write(
        tmp_path,
        "papers.tsv",
        f"paper_id\ttitle\tabstract\tkeywords\nid9\tT2\t{ABSTRACT_B}\tk1, k2\n",
    )
    summary = ingest_files(fresh_db, [csv_file, tsv_file], now=NOW)
    assert summary.added == 2
    a = get_paper(fresh_db, paper_id(ABSTRACT_A))
    b = get_paper(fresh_db, paper_id(ABSTRACT_B))
    assert a and b
    assert (a["title"], a["venue"], a["year"], a["authors"]) == ("T1", "NeurIPS", 2024, ["A", "B"])
    assert (b["title"], b["keywords"]) == ("T2", ["k1", "k2"])


def test_arxiv_atom(fresh_db: Store, tmp_path: Path) -> None:
    feed = write(tmp_path, "query.xml", ARXIV_FEED)
    assert ingest_files(fresh_db, [feed], now=NOW).added == 1
    paper = resolve_paper(fresh_db, "arXiv:2502.01234")
    assert paper is not None
    assert paper["title"] == "AlphaDPO: Adaptive Reward Margin for Direct Preference Optimization"
    assert paper["method"] == "AlphaDPO"
    assert (paper["venue"], paper["year"]) == ("arXiv", 2025)
    assert paper["arxiv_url"] == "https://arxiv.org/abs/2502.01234"
    assert paper["authors"] == ["Ann Author", "Bo Writer"]
    assert paper["keywords"] == ["cs.LG", "cs.AI"]


def test_format_is_detected_without_extension_and_can_be_forced(
    fresh_db: Store, tmp_path: Path
) -> None:
    feed = write(tmp_path, "download", ARXIV_FEED)
    lines = write(tmp_path, "stream", json.dumps({"abstract": ABSTRACT_B}) + "\n")
    assert [r.venue for r in read_file(feed)] == ["arXiv"]
    assert len(read_file(lines)) == 1
    as_text = write(tmp_path, "rows.txt", f"title\tabstract\nT\t{ABSTRACT_B}\n")
    assert read_file(as_text, fmt="tsv")[0].title == "T"


def test_venue_from_file_name_or_option(tmp_path: Path) -> None:
    tsv = write(tmp_path, "iclr2021-openreview.tsv", f"title\tabstract\nT\t{ABSTRACT_B}\n")
    assert (read_file(tsv)[0].venue, read_file(tsv)[0].year) == ("ICLR", 2021)
    assert read_file(tsv, venue="NeurIPS 2020")[0].venue == "NeurIPS"


@pytest.mark.parametrize(
    ("name", "content", "line", "words"),
    [
        ("empty.txt", "", 1, "is empty"),
        ("blank.txt", "\n\n  \n", 1, "is empty"),
        ("binary.txt", b"PK\x03\x04\x00\x00binary", 1, "binary"),
        ("latin1.txt", "ICML 2025\n\nline two\n\ncaf\xe9".encode("latin-1"), 5, "not valid UTF-8"),
        ("noabstract.csv", "title,url\nT,http://x\n", 1, "no 'abstract' column"),
        ("ragged.tsv", f"title\tabstract\nT\t{ABSTRACT_A}\textra\n", 2, "3 fields"),
        ("broken.jsonl", json.dumps({"abstract": "x"}) + "\n{not json\n", 2, "not valid JSON"),
        ("nofield.jsonl", json.dumps({"title": "T"}) + "\n", 1, "no 'abstract' field"),
        (
            "broken.xml",
            "<feed xmlns='http://www.w3.org/2005/Atom'>\n<entry>\n",
            3,
            "not well-formed",
        ),
        ("header-only.txt", "ICML 2025 Papers\n", 1, "no abstracts"),
        ("badyear.csv", f'abstract,year\n"{ABSTRACT_B}",soon\n', 2, "year 'soon'"),
    ],
)
def test_malformed_files_stop_the_run_and_change_nothing(
    fresh_db: Store,
    tmp_path: Path,
    seed_paths: list[Path],
    name: str,
    content: str | bytes,
    line: int,
    words: str,
) -> None:
    ingest_files(fresh_db, seed_paths[:1], now=NOW)
    before = snapshot(fresh_db)
    good = write(tmp_path, "good.txt", f"NeurIPS 2024\n\n{ABSTRACT_A}\n")
    bad = write(tmp_path, name, content)
    with pytest.raises(IngestError) as caught:
        ingest_files(fresh_db, [good, bad], now=NOW)
    message = str(caught.value)
    assert message.startswith(f"{bad}:{line}: "), message
    assert words in message
    assert "\n" not in message
    assert snapshot(fresh_db) == before


def test_a_failure_while_storing_rolls_everything_back(
    fresh_db: Store, seed_paths: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest that fits in one chunk (`bulk.CHUNK_PAPERS`) is one transaction."""
    from digests.ingest import bulk

    real = bulk.papers.insert_papers

    def failing(db: Store, rows: list[dict[str, object]]) -> None:
        real(db, rows)  # some rows are in, then the disk fails
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bulk.papers, "insert_papers", failing)
    with pytest.raises(RuntimeError):
        ingest_files(fresh_db, seed_paths, now=NOW)
    assert count_papers(fresh_db) == 0
    assert list(fresh_db.query("select * from ingests")) == []


@pytest.mark.parametrize(
    "content",
    [
        ABSTRACT_A,  # a single paragraph, no header
        f"ICML 2025 Papers\r\n\r\n{ABSTRACT_A}\r\n\r\n{ABSTRACT_B}\r\n",  # CRLF
        "ICML 2025\n\n" + "We propose LongNet, a method. " + "word " * 4000,  # ~20,000 chars
        "ICML 2025\n\nWe propose EmojiNet 🚀🤖, a framework for fun 🎉 and profit.",
        "ICML 2025\n\nאנו מציעים שיטה חדשה ללמידת חיזוק. نقترح طريقة جديدة للتعلم المعزز.",
        "\ufeffICML 2025 Papers\n\n" + ABSTRACT_B,  # a byte-order mark
    ],
)
def test_odd_but_valid_input_ingests(fresh_db: Store, tmp_path: Path, content: str) -> None:
    path = write(tmp_path, "odd.txt", content)
    summary = ingest_files(fresh_db, [path], now=NOW)
    assert summary.added >= 1
    for row in fresh_db.query("select title from papers"):
        assert row["title"] and len(row["title"]) <= 120


def test_utf16_with_bom_ingests(fresh_db: Store, tmp_path: Path) -> None:
    path = write(tmp_path, "wide.txt", ("ICML 2025\n\n" + ABSTRACT_A).encode("utf-16"))
    assert ingest_files(fresh_db, [path], now=NOW).added == 1


def test_rows_without_abstract_are_counted_not_stored(fresh_db: Store, tmp_path: Path) -> None:
    path = write(tmp_path, "gaps.tsv", f"title\tabstract\nT1\t{ABSTRACT_A}\nT2\t \n")
    summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, summary.without_abstract) == (1, 1)
    assert "1 without an abstract" in summary.describe()


def test_iclr2021_corpus_ingests_as_2966(fresh_db: Store, iclr2021: Path) -> None:
    assert ingest_files(fresh_db, [iclr2021], now=NOW).added == 2966
    assert ingest_files(fresh_db, [iclr2021], now=NOW).added == 0
    paper = resolve_paper(fresh_db, "1Fqg133qRaI")
    assert paper is not None
    assert paper["title"].startswith("Towards Faster and Stabilized GAN Training")
    assert (paper["venue"], paper["year"]) == ("ICLR", 2021)
    assert "generative adversarial network" in paper["keywords"]


def test_the_search_index_follows_merges(fresh_db: Store, tmp_path: Path) -> None:
    from db.search import search_papers

    ingest_files(fresh_db, [write(tmp_path, "a.txt", f"ICML 2025\n\n{ABSTRACT_B}\n")], now=NOW)
    assert search_papers(fresh_db, "Zanzibar", 5) == []
    titled = write(tmp_path, "b.tsv", f"title\tabstract\nZanzibar Grasping\t{ABSTRACT_B}\n")
    ingest_files(fresh_db, [titled], now=NOW)
    [hit] = search_papers(fresh_db, "Zanzibar", 5)
    assert hit.paper["title"] == "Zanzibar Grasping"
    rows = list(fresh_db.query("select count(*) as n from papers_fts"))
    assert rows[0]["n"] == 1


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from bot.cli import ingest as cli
    from digests.records import PaperRecord

    records = [PaperRecord(abstract=f"a{i}", source="s", line=i) for i in range(300)]
    assert cli.progress(records) is records  # not a TTY under pytest: no bar at all

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(cli.sys, "stderr", terminal)
    assert list(cli.progress(records)) == records
    assert "Ingesting" in terminal.getvalue()
    assert cli.progress(records[:10]) == records[:10]  # small files: no bar


# --- venues, summaries, and re-ingests that skip enrichment ------------------------------


@pytest.mark.parametrize(
    ("venue", "year", "stored"),
    [
        ("ICLR 2021", "2021", ("ICLR", 2021)),  # was shown as "ICLR 2021 2021"
        ("ICLR 2021", "", ("ICLR", 2021)),  # the year comes from the venue
        ("NeurIPS  2024", "2024", ("NeurIPS", 2024)),
        ("ICML 2020", "2021", ("ICML 2020", 2021)),  # they disagree: keep what was said
        ("ICLR", "2021", ("ICLR", 2021)),
        ("Workshop 2021 on Robots", "2021", ("Workshop 2021 on Robots", 2021)),
    ],
)
def test_a_venue_that_carries_its_year_is_split(
    fresh_db: Store, tmp_path: Path, venue: str, year: str, stored: tuple[str, int]
) -> None:
    path = write(tmp_path, "papers.csv", f'abstract,venue,year\n"{ABSTRACT_B}",{venue},{year}\n')
    ingest_files(fresh_db, [path], now=NOW)
    paper = get_paper(fresh_db, paper_id(ABSTRACT_B))
    assert paper is not None
    assert (paper["venue"], paper["year"]) == stored


def test_one_paper_is_one_paper_in_the_summary(fresh_db: Store, tmp_path: Path) -> None:
    path = write(tmp_path, "one.txt", f"ICML 2025\n\n{ABSTRACT_A}\n")
    assert ingest_files(fresh_db, [path], now=NOW).describe() == (
        "1 paper read from 1 file: 1 added, 0 merged, 0 skipped (already stored)"
    )
    again = ingest_files(fresh_db, [path, path], now=NOW).describe()
    assert again.startswith("2 papers read from 2 files: 0 added")


def _counting_build_row(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from digests.ingest import pipeline

    calls = [0]
    real = pipeline.build_row

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "build_row", counted)
    return calls


def test_unchanged_records_are_skipped_before_enrichment(
    fresh_db: Store, seed_paths: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_files(fresh_db, seed_paths, now=NOW)
    calls = _counting_build_row(monkeypatch)
    again = ingest_files(fresh_db, seed_paths, now=NOW)
    assert (again.added, again.merged, again.skipped) == (0, 0, 38)
    assert calls[0] == 0  # nothing derived again


def test_the_corpus_reingests_without_enrichment(
    fresh_db: Store, iclr2021: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_files(fresh_db, [iclr2021], now=NOW)
    calls = _counting_build_row(monkeypatch)
    assert ingest_files(fresh_db, [iclr2021], now=NOW).skipped == 2966
    assert calls[0] == 0


def test_skipping_early_changes_nothing_that_merging_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same sequence of ingests, with and without the early skip, stores the same."""
    from digests.ingest import bulk

    untitled = write(tmp_path, "list.txt", f"ICML 2025\n\n{ABSTRACT_A}\n\n{ABSTRACT_B}\n")
    titled = write(
        tmp_path,
        "titled.tsv",
        "id\ttitle\tabstract\tauthors\turl\n"
        f"or1\tAlphaDPO: Adaptive Margins\t{ABSTRACT_A}\tAnn\thttps://openreview.net/forum?id=or1\n"
        f"or2\tResidual Dexterity\t{ABSTRACT_B}\tBo; Cy\t\n",
    )
    more = write(
        tmp_path,
        "more.jsonl",
        json.dumps({"abstract": ABSTRACT_A, "authors": ["Ann", "Di"], "keywords": "dpo"})
        + "\n"
        + json.dumps({"abstract": ABSTRACT_B, "title": "Another Title", "id": "or2"})
        + "\n",
    )
    order = [untitled, titled, untitled, more, titled, more, untitled]

    def run() -> list[dict[str, object]]:
        db = open_db(":memory:")
        for path in order:
            ingest_files(db, [path], now=NOW)
        return snapshot(db) + list(db.query("select * from paper_aliases order by alias"))

    with_skip = run()
    monkeypatch.setattr(bulk, "is_absorbed", lambda db, record, fingerprint: False)
    assert run() == with_skip


# --- Guards of the chunked ingest: each test below fails when its guard is removed.


def ten_papers(tmp_path: Path) -> Path:
    lines = [
        json.dumps({"id": f"2508.{n:05d}", "abstract": f"We study problem {n} with method {n}."})
        for n in range(10)
    ]
    path = tmp_path / "ten.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_file_the_worker_read_differently_from_the_check_is_refused() -> None:
    """The worker's read is compared with the check pass's when it ends: what was checked
    (secrets, format) must be what is stored."""

    class Alive:
        exitcode = None

        def is_alive(self) -> bool:
            return True

    workers = bulk.Workers.__new__(bulk.Workers)
    messages: queue.Queue[Any] = queue.Queue()
    messages.put(("end", {"papers.jsonl": "hash of what the worker read"}))
    workers.queues = [messages]  # type: ignore[list-item]
    workers.processes = [Alive()]  # type: ignore[list-item]
    with pytest.raises(FileChanged):
        list(workers.batches({"papers.jsonl": "hash of what the check pass read"}))


def test_a_worker_failing_after_its_first_batch_stops_the_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enriching in this process instead is only for workers that sent nothing: after a
    batch, starting over would hand the writer those papers twice (done > total)."""
    monkeypatch.setattr(bulk, "CHUNK_PAPERS", 3)
    monkeypatch.setattr(bulk, "BATCH_PAPERS", 2)
    monkeypatch.setattr(bulk, "WORKER_MIN_PAPERS", 1)
    monkeypatch.setattr(bulk, "MIN_PAPER_BYTES", 1)

    class DiesAfterTwoBatches:
        def __init__(self, db_path: str, paths: Any, *args: Any) -> None:
            self.db, self.paths, self.args = open_db(Path(db_path)), paths, args

        def batches(self, versions: dict[str, str]) -> Any:
            fmt, venue, limits, now, _ = self.args
            own: dict[str, str] = {}
            for number, batch in enumerate(
                bulk.prepared_items(self.db, self.paths, fmt, venue, limits, own, now)
            ):
                if number == 2:
                    raise bulk.WorkerFailed("an enrichment worker stopped (exit code -9)")
                yield batch

        def stop(self) -> None:
            self.db.close()

    monkeypatch.setattr(bulk, "Workers", DiesAfterTwoBatches)
    path = ten_papers(tmp_path)
    db = open_db(tmp_path / "p.db")
    with pytest.raises(IngestError, match="stopped there: 3 of 10 papers"):
        ingest_files(db, [path], now=NOW)
    assert count_papers(db) == 3


def test_papers_stored_before_titles_were_keyed_are_keyed_before_the_first_chunk(
    tmp_path: Path,
) -> None:
    """A store from before title keys: its papers get keys in the first chunk's
    transaction, so a new version of a paper (same title and authors, edited abstract)
    merges into it instead of being stored as a second paper."""
    db = open_db(tmp_path / "p.db")
    old = tmp_path / "old.jsonl"
    paper = {
        "title": "Sparse Reward Shaping for Offline Robot Grasping",
        "abstract": "We shape sparse rewards for offline grasping and beat the baselines.",
        "authors": ["Ann Writer", "Bo Common"],
    }
    old.write_text(json.dumps(paper) + "\n", encoding="utf-8")
    ingest_files(db, [old], now=NOW)
    db.execute("update papers set title_key = null")  # as stored before the keys
    db.conn.commit()
    new = tmp_path / "new.jsonl"
    edited = paper | {"abstract": paper["abstract"] + " Code is released."}
    new.write_text(json.dumps(edited) + "\n", encoding="utf-8")
    summary = ingest_files(db, [new], now=NOW)
    # One paper, found again by its title; text added to a whole abstract is not taken.
    assert (summary.added, summary.skipped, count_papers(db)) == (0, 1, 1)
    assert summary.other_abstracts == 1
    assert [row["abstract"] for row in db.query("select abstract from papers")] == [
        paper["abstract"]
    ]
