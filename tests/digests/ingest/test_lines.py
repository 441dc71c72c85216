"""Lines as ingest reads them: blank lines cost little and are never held, whatever their
number and whatever the format; a whole-document format (a JSON array, an Atom feed) may
be one long line; a line over the limit is refused with its real size."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import open_db
from db.papers import count_papers
from digests.ingest import IngestError, decode, ingest_files
from digests.ingest.decode import CHUNK_BYTES, Limits, read_lines
from digests.ingest.jsonl import parse_json
from digests.ingest.pipeline import read_file, read_records
from digests.ingest.seeds import parse_seed
from digests.ingest.tabular import parse_tabular
from digests.records import PaperRecord
from digests.safe_text import strip_unsafe
from tests.conftest import NOW

BLANK_MB = 20
BLANK = "\n" * (BLANK_MB * 1_000_000)
FLAT_BYTES = 4_000_000  # a few chunks of the file, nothing in proportion to its size
ABSTRACT = "We propose BlankNet, a model that reads past any number of blank lines."


def peak_bytes(work: Callable[[], object]) -> tuple[object, int]:
    """What `work()` returns (or the IngestError it raises), and the peak of the memory
    that Python allocated meanwhile."""
    tracemalloc.start()
    try:
        outcome: object = work()
    except IngestError as exc:
        outcome = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return outcome, peak


def records_of(path: Path) -> Callable[[], object]:
    return lambda: [(r.line, r.abstract) for r in read_records(path)]


# --- blank lines ---------------------------------------------------------------------------


def test_a_file_of_blank_lines_is_empty_in_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "blank.txt"
    path.write_text(BLANK, encoding="utf-8")
    outcome, peak = peak_bytes(records_of(path))
    assert str(outcome) == f"{path}:1: is empty: there are no papers in it"
    assert peak < FLAT_BYTES


def test_blank_lines_come_as_a_few_runs_not_one_by_one(tmp_path: Path) -> None:
    """What makes them cheap: a run of blank lines is one item (about one per chunk of
    the file), not a Python object per line."""
    path = tmp_path / "blank.txt"
    path.write_text(BLANK + " \t\n" * 1_000_000 + ABSTRACT + "\n", encoding="utf-8")
    items = list(read_lines(path))
    assert len(items) <= 2 * (path.stat().st_size // CHUNK_BYTES + 1)
    assert items[-1] == ABSTRACT + "\n"
    assert sum(item.count("\n") for item in items) == BLANK_MB * 1_000_000 + 1_000_001


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("seed.txt", BLANK + ABSTRACT + "\n", BLANK_MB * 1_000_000 + 1),
        (
            "lines.jsonl",
            BLANK + json.dumps({"abstract": ABSTRACT}) + "\n",
            BLANK_MB * 1_000_000 + 1,
        ),
        (
            "rows.csv",
            "title,abstract\n" + BLANK + f'Blank,"{ABSTRACT}"\n',
            BLANK_MB * 1_000_000 + 2,
        ),
        (
            "rows.tsv",
            "title\tabstract\n" + BLANK + f"Blank\t{ABSTRACT}\n",
            BLANK_MB * 1_000_000 + 2,
        ),
        ("array.json", BLANK + json.dumps([{"abstract": ABSTRACT}]), BLANK_MB * 1_000_000 + 1),
    ],
)
def test_blank_lines_before_a_paper_are_not_held_in_any_format(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    outcome, peak = peak_bytes(records_of(path))
    assert outcome == [(line, ABSTRACT)]
    assert peak < FLAT_BYTES


def test_a_csv_header_and_blank_rows_has_no_rows_in_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("title,abstract\n" + BLANK, encoding="utf-8")
    outcome, peak = peak_bytes(records_of(path))
    assert str(outcome) == f"{path}:2: has a header but no rows"
    assert peak < FLAT_BYTES


def test_blank_rows_never_reach_the_csv_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes blank rows cheap in a CSV: csv parses a header and the rows, never a
    blank line (each was a row to parse and skip: 1.6 s of CPU per MB of them)."""
    from digests.ingest import tabular

    fed: list[str] = []
    real = tabular.csv.reader

    def counting(lines: Iterable[str], **kwargs: Any) -> Any:
        def each() -> Iterator[str]:
            for line in lines:
                fed.append(line)
                yield line

        return real(each(), **kwargs)

    monkeypatch.setattr(tabular.csv, "reader", counting)
    path = tmp_path / "rows.csv"
    blank_rows = "\n" * 1_000_000
    text = f'title,abstract\n{blank_rows} ,\t\nBlank,"{ABSTRACT}"\n{blank_rows}'
    path.write_text(text, encoding="utf-8")
    assert [(r.line, r.abstract) for r in read_records(path)] == [(1_000_003, ABSTRACT)]
    assert fed == ["title,abstract\n", " ,\t\n", f'Blank,"{ABSTRACT}"\n']


def test_blank_lines_before_a_csv_header_are_skipped(tmp_path: Path) -> None:
    """They were the header: "has no 'abstract' column (columns: none)"."""
    path = tmp_path / "rows.csv"
    path.write_text(f'\n \ntitle,abstract\nBlank,"{ABSTRACT}"\n', encoding="utf-8")
    assert [(r.line, r.abstract) for r in read_records(path)] == [(4, ABSTRACT)]


def test_the_inbox_says_a_blank_file_is_empty(tmp_path: Path) -> None:
    from bot.inbox import ingest_inbox

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "blank.txt").write_text("\n" * 2_000_000, encoding="utf-8")
    db = open_db(tmp_path / "p.db")
    result = ingest_inbox(db, inbox, NOW)
    assert result.failed == ["blank.txt: is empty: there are no papers in it"]
    assert count_papers(db) == 0


# The reference for the property below: the parsers given one line per item (no runs),
# which is how they were given lines before.
PARSERS: dict[str, Callable[[list[str], str], list[PaperRecord]]] = {
    "seed.txt": lambda lines, path: list(parse_seed(lines, source="f", path=path)),
    "lines.jsonl": lambda lines, path: list(parse_json(lines, source="f", path=path)),
    "rows.csv": lambda lines, path: list(
        parse_tabular(lines, delimiter=",", source="f", path=path, limits=Limits())
    ),
}
PIECES = {
    "seed.txt": ["", " ", "\t", "  \t ", "ICLR 2021", "We propose A.", "It works well.", " x"],
    "lines.jsonl": ["", " ", "\t ", json.dumps({"abstract": "We propose A."}), '{"abstract": "B"}'],
    "rows.csv": ["", " ", " \t", "T,We propose A.", 'Q,"We\n', "\n", " \n", 'quote."', ",x"],
}


def outcome_of(read: Callable[[], list[PaperRecord]]) -> object:
    try:
        return [(r.line, strip_unsafe(r.abstract)) for r in read()]
    except IngestError as exc:
        return str(exc)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(PARSERS)),
    picks=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=30),
    crlf=st.booleans(),
    short=st.sampled_from([0, 10**9]),
)
def test_runs_of_blank_lines_read_as_the_lines_one_by_one(
    tmp_path: Path, name: str, picks: list[int], crlf: bool, short: int
) -> None:
    """Same papers, same line numbers, same errors as one line per item, for files
    mixing blank, whitespace-only and paper lines (CSV: a quoted field across blank
    lines too), whichever way read_lines splits them (`short`: every text read as lines
    as they usually are, or as blank lines mostly)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decode, "SHORT_LINE_CHARS", short)
        check_runs_read_as_one_by_one(tmp_path, name, picks, crlf)


def check_runs_read_as_one_by_one(tmp_path: Path, name: str, picks: list[int], crlf: bool) -> None:
    pieces = PIECES[name]
    text = "".join(pieces[pick % len(pieces)] + "\n" for pick in picks)
    if name == "rows.csv":
        text = "title,abstract\n" + text
    path = tmp_path / name
    path.write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode("utf-8"))
    if text.strip():
        one_by_one = [line + "\n" for line in text.split("\n")[:-1]]
        expected = outcome_of(lambda: PARSERS[name](one_by_one, str(path)))
    else:
        expected = f"{path}:1: is empty: there are no papers in it"
    assert outcome_of(lambda: read_file(path)) == expected


@pytest.mark.parametrize("short", [0, 10**9])
@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("SLACK_BOT_TOKEN=xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "token"),
        ("y" * 150_000, "a line is 150 KB"),
    ],
)
def test_a_line_refused_after_runs_of_blank_lines_is_named_by_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: int, bad: str, says: str
) -> None:
    monkeypatch.setattr(decode, "SHORT_LINE_CHARS", short)
    path = tmp_path / "seed.txt"
    path.write_text("\n" * 200_000 + " \t\n" * 5 + ABSTRACT + "\n\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(IngestError) as caught:
        read_file(path)
    assert str(caught.value).startswith(f"{path}:200008: ")
    assert says in str(caught.value)


# --- long lines ----------------------------------------------------------------------------


def many_papers(count: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"2507.{n:05d}",
            "title": f"Model{n} Reads One Long Line",
            "abstract": f"We propose Model{n}, a method for task {n} that reads one long line.",
            "authors": [f"Ann Writer{n}"],
        }
        for n in range(count)
    ]


def test_a_json_array_on_one_line_as_json_dump_writes_it_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "papers.json"
    with path.open("w", encoding="utf-8") as out:
        json.dump(many_papers(2_000), out)
    assert path.stat().st_size > 3 * Limits().max_record_chars
    assert path.read_text(encoding="utf-8").count("\n") == 0
    db = open_db(tmp_path / "p.db")
    assert ingest_files(db, [path], now=NOW).added == 2_000
    assert count_papers(db) == 2_000


def test_an_atom_feed_on_one_line_is_read_whole(tmp_path: Path) -> None:
    entries = "".join(
        f"<entry><id>http://arxiv.org/abs/2507.{n:05d}v1</id><title>Model{n} Reads</title>"
        f"<summary>We propose Model{n}, a method for task {n} on one line.</summary></entry>"
        for n in range(2_000)
    )
    path = tmp_path / "feed.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<feed xmlns="http://www.w3.org/2005/Atom">{entries}</feed>',
        encoding="utf-8",
    )
    assert len(read_file(path)) == 2_000


def test_a_one_line_array_over_the_document_limit_is_refused_as_a_document(
    tmp_path: Path,
) -> None:
    path = tmp_path / "papers.json"
    path.write_text(json.dumps(many_papers(10_000)), encoding="utf-8")
    with pytest.raises(IngestError) as caught:
        read_file(path, limits=Limits(max_document_chars=1_000_000))
    assert str(caught.value) == (
        f"{path}: is a JSON array over 1 MB; split it, or use JSON Lines or TSV, which are "
        "read one paper at a time"
    )


def test_json_lines_keep_the_line_limit_after_a_first_line_that_is_an_object(
    tmp_path: Path,
) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_text(
        json.dumps({"abstract": ABSTRACT}) + "\n" + json.dumps(many_papers(2_000)) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(IngestError, match=r":2: a line is \d+ KB, over the 100 KB limit"):
        read_file(path)


@pytest.mark.parametrize("end", ["\n", "\r\n", ""])
@pytest.mark.parametrize("name", ["long.jsonl", "long.txt"])
def test_a_line_over_the_limit_is_refused_with_its_real_size(
    tmp_path: Path, name: str, end: str
) -> None:
    """The size is the line's, measured past the limit (it was the part read so far: two
    64 KB chunks, "131 KB", for a 207 KB line)."""
    path = tmp_path / name
    if name.endswith(".jsonl"):
        first, long = json.dumps({"abstract": ABSTRACT}), json.dumps({"abstract": "y" * 206_986})
    else:
        first, long = ABSTRACT, "We propose a very long line. " * 7_138
    assert len(long) in (207_000, 207_002)
    path.write_text(f"{first}\n{long}{end}{first}\n", encoding="utf-8")
    with pytest.raises(IngestError) as caught:
        read_file(path)
    assert str(caught.value) == (
        f"{path}:2: a line is 207 KB, over the 100 KB limit for one paper (PAPERBOY_MAX_RECORD_KB)"
    )


def test_a_line_too_long_to_measure_says_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "MEASURE_CHARS", 300_000)
    path = tmp_path / "endless.txt"
    path.write_text("a" * 1_000_000, encoding="utf-8")
    with pytest.raises(IngestError) as caught:
        read_file(path)
    assert str(caught.value) == (
        f"{path}:1: a line is more than 300 KB, over the 100 KB limit for one paper "
        "(PAPERBOY_MAX_RECORD_KB)"
    )
