"""A second record of a stored paper: what it keeps (another page, a whole abstract, a new
name of the method) and what the summary says of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from db.papers import count_papers, get_paper
from db.store import Store
from digests import lookup
from digests.enrich.paper import MAX_OTHER_PAGES
from digests.ingest import ingest_files
from tests.conftest import NOW

TITLE = "Sparse Mixtures of Adapters for Continual Learning"
SHORT = "We propose sparse mixtures of adapters that let a model learn new tasks without forg..."
WHOLE = (
    "We propose sparse mixtures of adapters that let a model learn new tasks without "
    "forgetting old ones. On ten benchmarks, our method matches full fine-tuning while "
    "training two percent of the weights."
)
OTHER = (
    "Continual learning suffers from forgetting. We route each task through a sparse "
    "mixture of small adapters, and match full fine-tuning on ten benchmarks."
)
OPENREVIEW = "https://openreview.net/forum?id=abc123"
PMLR = "https://proceedings.mlr.press/v202/lee23a.html"


def jsonl(tmp_path: Path, name: str, **fields: Any) -> Path:
    record = {"title": TITLE, "authors": ["Ann Lee", "Bo Chen"]} | fields
    path = tmp_path / name
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def only_paper(db: Store) -> dict[str, Any]:
    assert count_papers(db) == 1
    (row,) = db.query("select id from papers")
    paper = get_paper(db, row["id"])
    assert paper is not None
    return paper


def test_another_sources_page_is_kept_among_the_links_and_counted_merged(
    fresh_db: Store, tmp_path: Path
) -> None:
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=WHOLE, url=OPENREVIEW)], now=NOW)
    second = ingest_files(fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=WHOLE, url=PMLR)], now=NOW)
    # Another page is something a reader sees: merged, and kept.
    assert second.describe() == (
        "1 paper read from 1 file: 0 added, 1 merged, 0 skipped (already stored)"
    )
    paper = only_paper(fresh_db)
    assert paper["url"] == OPENREVIEW  # the first page stays the one a title links to
    assert {"url": PMLR, "kind": "page", "text": ""} in paper["links"]
    shown = lookup.full_result(paper)
    assert PMLR in [link["url"] for link in shown["links"]]  # show --json
    assert f"  page: {PMLR}" in lookup.format_paper(shown).splitlines()  # show
    again = ingest_files(fresh_db, [tmp_path / "b.jsonl"], now=NOW)
    assert again.describe().endswith("1 skipped (already stored). Nothing new")
    assert [link["url"] for link in only_paper(fresh_db)["links"]].count(PMLR) == 1


def test_a_feed_whose_links_change_each_time_adds_a_few_pages_at_most(
    fresh_db: Store, tmp_path: Path
) -> None:
    """A tracking query that changes on every fetch must not grow the links for ever."""
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=WHOLE, url=OPENREVIEW)], now=NOW)
    for n in range(MAX_OTHER_PAGES + 3):
        page = jsonl(tmp_path, f"f{n}.jsonl", abstract=WHOLE, url=f"{PMLR}?utm_source=feed{n}")
        ingest_files(fresh_db, [page], now=NOW)
    pages = [link for link in only_paper(fresh_db)["links"] if link["url"].startswith(PMLR)]
    assert len(pages) == MAX_OTHER_PAGES


def test_a_file_read_again_with_another_page_is_not_skipped_unread(
    fresh_db: Store, tmp_path: Path
) -> None:
    """The early skip of unchanged records (`is_absorbed`) knows another page is news."""
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=WHOLE, url=OPENREVIEW)], now=NOW)
    edited = jsonl(tmp_path, "a.jsonl", abstract=WHOLE, url=PMLR)
    assert ingest_files(fresh_db, [edited], now=NOW).merged == 1
    assert PMLR in [link["url"] for link in only_paper(fresh_db)["links"]]


def test_the_whole_abstract_replaces_one_cut_short_and_the_id_stays(
    fresh_db: Store, tmp_path: Path
) -> None:
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=SHORT, url=OPENREVIEW)], now=NOW)
    before = only_paper(fresh_db)
    second = ingest_files(fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=WHOLE)], now=NOW)
    assert (second.added, second.merged, second.other_abstracts) == (0, 1, 0)
    paper = only_paper(fresh_db)
    assert paper["abstract"] == WHOLE and paper["abstract_text"] == WHOLE
    assert (paper["id"], paper["fingerprint"]) == (before["id"], before["fingerprint"])
    assert before["tldr"].endswith("without forg...")  # derived again, from the whole text
    assert paper["tldr"].endswith("without forgetting old ones.")
    # The cut one again is that paper, and brings nothing: the whole abstract stays.
    again = ingest_files(fresh_db, [tmp_path / "a.jsonl"], now=NOW)
    assert again.describe() == (
        "1 paper read from 1 file: 0 added, 0 merged, 1 skipped (already stored). Nothing new"
    )
    assert only_paper(fresh_db)["abstract"] == WHOLE


@pytest.mark.parametrize(
    ("stored", "later"),
    [
        # Text added to an abstract that was never cut: no completion, whoever sends it.
        (WHOLE, WHOLE + " Buy cheap pills at spam dot example today zzqx."),
        # A cut head too short to say which paper: another paper's text starts so too.
        ("We propose sparse…", "We propose sparse autoencoders for a different paper entirely."),
    ],
)
def test_only_a_cut_abstract_with_a_telling_head_is_completed(
    fresh_db: Store, tmp_path: Path, stored: str, later: str
) -> None:
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=stored)], now=NOW)
    second = ingest_files(fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=later)], now=NOW)
    assert second.other_abstracts == 1
    assert only_paper(fresh_db)["abstract"] == stored


def test_a_title_derived_from_the_cut_abstract_is_derived_again(
    fresh_db: Store, tmp_path: Path
) -> None:
    for name, abstract in (("a.jsonl", SHORT), ("b.jsonl", WHOLE)):
        record = {"id": "sparse-1", "authors": ["Ann Lee"], "abstract": abstract}
        (tmp_path / name).write_text(json.dumps(record) + "\n", encoding="utf-8")
    ingest_files(fresh_db, [tmp_path / "a.jsonl"], now=NOW)
    cut_title = only_paper(fresh_db)["title"]
    ingest_files(fresh_db, [tmp_path / "b.jsonl"], now=NOW)
    paper = only_paper(fresh_db)
    assert paper["abstract"] == WHOLE and paper["title_derived"]
    assert paper["title"] != cut_title and "forg" not in paper["title"].split()[-1]


def test_a_feed_s_bracketed_cut_is_completed(fresh_db: Store, tmp_path: Path) -> None:
    cut = SHORT.removesuffix("...") + " […]"
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=cut)], now=NOW)
    ingest_files(fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=WHOLE)], now=NOW)
    assert only_paper(fresh_db)["abstract"] == WHOLE


def test_links_the_abstract_gives_leave_room_for_other_pages(
    fresh_db: Store, tmp_path: Path
) -> None:
    bare = " ".join(f"https://example.org/extra{n}" for n in range(MAX_OTHER_PAGES))
    ingest_files(
        fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=f"{WHOLE} {bare}", url=OPENREVIEW)], now=NOW
    )
    ingest_files(
        fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=f"{WHOLE} {bare}", url=PMLR)], now=NOW
    )
    assert PMLR in [link["url"] for link in only_paper(fresh_db)["links"]]


def test_a_different_abstract_is_not_stored_and_the_summary_says_so(
    fresh_db: Store, tmp_path: Path
) -> None:
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=WHOLE, url=OPENREVIEW)], now=NOW)
    before = only_paper(fresh_db)
    second = ingest_files(fresh_db, [jsonl(tmp_path, "c.jsonl", abstract=OTHER)], now=NOW)
    # An abstract not stored is said, never hidden behind "Nothing new".
    assert second.describe() == (
        "1 paper read from 1 file: 0 added, 0 merged, 1 skipped (already stored); "
        "1 with a different abstract (the stored one kept)"
    )
    paper = only_paper(fresh_db)
    assert paper["abstract"] == WHOLE and paper["id"] == before["id"]
    # Counted with the merged too: here it brings another page as well.
    third = ingest_files(fresh_db, [jsonl(tmp_path, "d.jsonl", abstract=OTHER, url=PMLR)], now=NOW)
    assert third.describe() == (
        "1 paper read from 1 file: 0 added, 1 merged, 0 skipped (already stored); "
        "1 with a different abstract (the stored one kept)"
    )


def test_a_new_name_of_the_method_is_counted_merged(fresh_db: Store, tmp_path: Path) -> None:
    ingest_files(
        fresh_db, [jsonl(tmp_path, "a.jsonl", title=f"SMA: {TITLE}", abstract=WHOLE)], now=NOW
    )
    assert not lookup.find(fresh_db, "SpaMix")
    second = ingest_files(
        fresh_db, [jsonl(tmp_path, "b.jsonl", title=f"SpaMix: {TITLE}", abstract=WHOLE)], now=NOW
    )
    # A new name is searchable (`find SpaMix` finds it): merged, not skipped.
    assert (second.merged, second.skipped) == (1, 0)
    paper = only_paper(fresh_db)
    assert paper["method"] == "SMA" and paper["title"] == f"SMA: {TITLE}"  # kept
    assert [hit["id"] for hit in lookup.find(fresh_db, "SpaMix")] == [paper["id"]]


def test_a_paper_with_no_page_gets_the_record_s_as_its_own(fresh_db: Store, tmp_path: Path) -> None:
    """No stored url: the record's page is the paper's url, not one more link."""
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=WHOLE)], now=NOW)
    ingest_files(fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=WHOLE, url=PMLR)], now=NOW)
    paper = only_paper(fresh_db)
    assert paper["url"] == PMLR
    assert PMLR not in [link["url"] for link in paper["links"]]


def test_a_paper_stored_without_a_fingerprint_keeps_its_cut_abstract(
    fresh_db: Store, tmp_path: Path
) -> None:
    """A paper of an older store has no fingerprint to keep finding it by its first
    abstract: its abstract is never replaced."""
    ingest_files(fresh_db, [jsonl(tmp_path, "a.jsonl", abstract=SHORT)], now=NOW)
    with fresh_db.conn:
        fresh_db.execute("update papers set fingerprint = null")
    ingest_files(fresh_db, [jsonl(tmp_path, "b.jsonl", abstract=WHOLE)], now=NOW)
    assert only_paper(fresh_db)["abstract"] == SHORT
