"""Paper ids under attack (issue 11 review): papers stored before issue 11 whose abstract
was replaced, and the aliases the old code made from row ids. Nothing may merge two
papers silently, and the same paper must not be stored twice."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from sqlite_utils import Database

from db.papers import add_alias, count_papers, get_paper, resolve_paper
from digests.identity import fingerprint_hash, legacy_id, paper_id
from digests.ingest import ingest_files
from digests.ingest.fetched import prepare_page, store_page
from digests.sources.records import FetchedPaper
from tests.conftest import NOW
from tests.test_ids import TWIN_B, insert_legacy, write_jsonl

V1 = "Version one: we bound the spectral gap of sparsified random walks on graphs."
V2 = "Version two: tight spectral bounds for sparsifiers of random walks, with proofs."


def replaced_legacy_paper(db: Database, authors: list[str]) -> str:
    """As the code before issue 11 left a paper whose arXiv v2 replaced its abstract: the
    row keeps the id of v1 (10 digits), holds v2's text, and v2's old id is its alias."""
    old = insert_legacy(db, V1, authors=authors)
    db.execute("update papers set abstract = ? where id = ?", [V2, old])
    add_alias(db, legacy_id(fingerprint_hash(V2)), old)
    return old


def id_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "digests.ingest.ids"]


def test_the_text_a_legacy_paper_holds_now_is_found_whatever_its_authors_look_like(
    fresh_db: Database, tmp_path: Path
) -> None:
    """v2's text again, its authors written surname first: the alias's paper holds that
    very text, so it is that paper (the author rule is for what cannot be checked)."""
    old = replaced_legacy_paper(fresh_db, ["Wei Zhang", "Min Li"])
    path = write_jsonl(tmp_path / "v2.jsonl", [V2], authors=["Zhang Wei", "Li Min"])
    summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, count_papers(fresh_db)) == (0, 1)
    assert get_paper(fresh_db, old)["authors"] == [  # type: ignore[index]
        "Wei Zhang", "Min Li", "Zhang Wei", "Li Min",
    ]  # fmt: skip


def test_a_merge_only_the_author_rule_allows_is_logged_once_then_certain(
    fresh_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """v1's text again: the stored row no longer holds it, so its 40-bit id and a shared
    surname decide. That is said (never silent), once: the merge leaves v1's `fp:`
    alias, which the next ingest of v1 finds first."""
    old = replaced_legacy_paper(fresh_db, ["Ada Lovelace"])
    path = write_jsonl(tmp_path / "v1.jsonl", [V1], authors=["A. Lovelace"])
    with caplog.at_level(logging.WARNING):
        first = ingest_files(fresh_db, [path], now=NOW)
    assert (first.added, first.merged, count_papers(fresh_db)) == (0, 1, 1)
    [line] = id_warnings(caplog)
    assert old in line and "merged" in line and "not merged" not in line
    caplog.clear()
    more = write_jsonl(tmp_path / "v1b.jsonl", [V1], authors=["A. Lovelace"], keywords=["x"])
    with caplog.at_level(logging.WARNING):
        again = ingest_files(fresh_db, [more], now=NOW + timedelta(days=1))
    assert (again.added, again.merged, count_papers(fresh_db)) == (0, 1, 1)
    assert id_warnings(caplog) == []


def test_a_merge_through_an_old_alias_that_only_authors_allow_is_logged(
    fresh_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """TWIN_B's old id is an alias (the old code merged TWIN_B into a titled paper, whose
    text is another now): TWIN_B's text again can only be matched by id and authors."""
    target = insert_legacy(
        fresh_db, "A different abstract of the titled paper.", authors=["Ada Lovelace"]
    )
    add_alias(fresh_db, legacy_id(fingerprint_hash(TWIN_B)), target)
    path = write_jsonl(tmp_path / "b.jsonl", [TWIN_B], authors=["Ada Lovelace"])
    with caplog.at_level(logging.WARNING):
        summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, count_papers(fresh_db)) == (0, 1)
    [line] = id_warnings(caplog)
    assert target in line and legacy_id(fingerprint_hash(TWIN_B)) in line


def test_a_name_suffix_or_et_al_is_no_shared_author(fresh_db: Database, tmp_path: Path) -> None:
    """ "Jr." and "et al." are no surnames: two papers with one real title and only those
    in common are two papers (a shared surname lets a title match merge them)."""
    title = "Learning to Rank Graphs with Spectral Sparsifiers"
    rows = [
        {"title": title, "abstract": V1, "authors": ["John Smith Jr.", "B. Brown et al."]},
        {"title": title, "abstract": V2, "authors": ["Mary Jones Jr.", "C. Green et al."]},
    ]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, count_papers(fresh_db)) == (2, 2)
    same = tmp_path / "same.jsonl"
    same.write_text(json.dumps({**rows[0], "abstract": "The journal version."}) + "\n")
    assert ingest_files(fresh_db, [same], now=NOW).added == 0  # "Smith Jr." is still Smith


def test_an_authorless_list_merges_into_its_replaced_legacy_paper_and_says_so(
    fresh_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A plain list of abstracts (no authors) ingested again: v1's text finds the paper
    whose arXiv v2 replaced it. Nothing contradicts the 40-bit id, so it merges (a
    duplicate of every such paper otherwise), with a warning."""
    old = replaced_legacy_paper(fresh_db, ["Ada Lovelace"])
    path = tmp_path / "list.txt"
    path.write_text(f"{V1}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, count_papers(fresh_db)) == (0, 1)
    [line] = id_warnings(caplog)
    assert old in line and "not merged" not in line


def test_another_abstract_under_a_known_external_id_is_merged_not_skipped(
    fresh_db: Database, tmp_path: Path
) -> None:
    """A record that names a stored paper by its external id but brings another abstract
    is not 'stored unchanged': it merges, leaving its `fp:` alias, so a later title-less
    list with that abstract finds the paper instead of storing it twice."""
    base = {
        "id": "2501.00001",
        "title": "Spectral Sparsifiers of Random Walks",
        "authors": ["Ada Lovelace"],
    }
    first, second = tmp_path / "a" / "papers.jsonl", tmp_path / "b" / "papers.jsonl"
    for path in (first, second):  # one source name, so only the abstract differs
        path.parent.mkdir()
    first.write_text(json.dumps({**base, "abstract": V1}) + "\n", encoding="utf-8")
    second.write_text(json.dumps({**base, "abstract": V2}) + "\n", encoding="utf-8")
    assert ingest_files(fresh_db, [first], now=NOW).added == 1
    summary = ingest_files(fresh_db, [second], now=NOW)
    assert (summary.added, count_papers(fresh_db)) == (0, 1)
    again = ingest_files(fresh_db, [write_jsonl(tmp_path / "list.jsonl", [V2])], now=NOW)
    assert (again.added, count_papers(fresh_db)) == (0, 1)


def write_tsv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    lines = ["id\ttitle\tabstract"] + ["\t".join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_files_that_number_their_rows_alike_are_not_merged_by_that_number(
    fresh_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two exports whose `id` column is the row number: "1" of one file is no paper of
    the other (merged, the second file's abstracts were lost). The number still merges
    a record that agrees on the title: the same dataset's next version."""
    first = write_tsv(
        tmp_path / "a.tsv",
        [("1", "Alpha Study of Sparse Things", V1), ("2", "Beta Study of Sparse Things", V2)],
    )
    other = write_tsv(
        tmp_path / "b.tsv",
        [
            ("1", "Gamma Analysis of Protein Folding", "We fold proteins with a new gamma model."),
            ("2", "Delta Analysis of Robot Grasping", "We grasp objects with a new delta robot."),
        ],
    )
    ingest_files(fresh_db, [first], now=NOW)
    with caplog.at_level(logging.WARNING):
        summary = ingest_files(fresh_db, [other], now=NOW)
    assert (summary.added, summary.merged, count_papers(fresh_db)) == (2, 0, 4)
    assert len([line for line in caplog.messages if "'1' names paper" in line]) == 1
    again = ingest_files(fresh_db, [other], now=NOW)
    assert (again.added, count_papers(fresh_db)) == (0, 4)
    edited = write_tsv(
        tmp_path / "a2.tsv", [("1", "Alpha Study of Sparse Things", "An edited abstract.")]
    )
    assert ingest_files(fresh_db, [edited], now=NOW).added == 0  # same id and title


def test_one_boilerplate_abstract_under_two_arxiv_ids_is_two_papers(
    fresh_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Withdrawn arXiv papers can share their whole abstract: the same words under two
    arXiv ids are two papers (as two titles are), the second under its next probe id."""
    text = "This paper has been withdrawn by the author."
    page = [
        FetchedPaper(
            source="arxiv", title=title, abstract=text, authors=["Ada Lovelace"],
            arxiv_id=arxiv_id, arxiv_version=2,
        )
        for arxiv_id, title in (("2401.00001", "Sparse Walks"), ("2401.00002", "Dense Walks"))
    ]  # fmt: skip
    with caplog.at_level(logging.WARNING):
        first = store_page(fresh_db, prepare_page(page, NOW)[0], NOW)
    assert (first.added, count_papers(fresh_db)) == (2, 2)
    assert any("2401.00001" in line and "2401.00002" in line for line in caplog.messages)
    ids = {resolve_paper(fresh_db, f"arXiv:2401.0000{n}")["id"] for n in (1, 2)}  # type: ignore[index]
    assert len(ids) == 2 and paper_id(text) in ids
    again = store_page(fresh_db, prepare_page(page, NOW)[0], NOW + timedelta(hours=1))
    assert (again.added, again.merged, count_papers(fresh_db)) == (0, 0, 2)
