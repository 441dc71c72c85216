"""Paper ids: 64-bit ids for new papers, stored 10-digit ids kept, and two
papers that share an id are never merged (collisions forced with 1- or 2-digit ids)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from db import open_db
from db.papers import add_alias, count_papers, get_paper, insert_paper, resolve_paper
from db.store import Store
from digests.enrich.paper import build_row
from digests.identity import fingerprint_hash, legacy_id, paper_id
from digests.ingest import IngestError, ingest_files, pipeline
from digests.ingest.fetched import prepare_page, store_page
from digests.lookup import resolve
from digests.records import PaperRecord
from digests.sources.records import FetchedPaper
from tests.conftest import NOW

# Two abstracts whose fingerprints share the first 10 hex digits of their SHA-256 (found
# by a birthday search over 531,434 of them): the same legacy 10-digit id, pce471a5f8c.
TWIN_A = "We study colliding ids number 403742."
TWIN_B = "We study colliding ids number 531433."
TOPICS = (
    "graph neural networks", "offline reinforcement learning", "diffusion models",
    "contrastive learning", "federated optimisation", "program synthesis",
    "speech recognition", "protein folding", "robot grasping", "causal discovery",
)  # fmt: skip


def short_ids(monkeypatch: pytest.MonkeyPatch, digits: int) -> None:
    """Ids of `digits` hex digits, to force collisions: in `identity` and in any module
    that copied the constant (a copy would give rows ids their probe sequence disagrees
    with; `identity.own_id` reads it at each call)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("digests") and hasattr(module, "ID_HEX_DIGITS"):
            monkeypatch.setattr(module, "ID_HEX_DIGITS", digits)


def abstracts(count: int) -> list[str]:
    """`count` distinct abstracts, none a title-like match of another."""
    return [
        f"We study {TOPICS[i % len(TOPICS)]} in setting {i}, and report results on "
        f"benchmark {i * 7 + 3} with a method we call Variant{i}."
        for i in range(count)
    ]


def write_jsonl(path: Path, texts: list[str], **fields: object) -> Path:
    """Title-less records with no external id: only the abstract's id can match them."""
    path.write_text(
        "".join(json.dumps({"abstract": text, **fields}) + "\n" for text in texts),
        encoding="utf-8",
    )
    return path


def count_enrichments(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Records enriched from now on (`is_absorbed` skips the stored ones before). Every
    module's binding of `prepare` is counted: `bulk` imports it by name, so patching
    `pipeline.prepare` alone counted nothing and these checks could not fail."""
    enriched: list[object] = []
    real = pipeline.prepare

    def counting(record, *args, **kwargs):  # type: ignore[no-untyped-def]
        enriched.append(record)
        return real(record, *args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("digests") and getattr(module, "prepare", None) is real:
            monkeypatch.setattr(module, "prepare", counting)
    return enriched


def stored(db: Store) -> list[dict[str, object]]:
    return list(db.query("select id, abstract, fingerprint from papers order by id"))


def collisions(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "held by a paper" in r.getMessage()]


def test_new_ids_have_64_bits_and_extend_the_legacy_id() -> None:
    new = paper_id(TWIN_A)
    assert len(new) == 17 and new.startswith("p") and int(new[1:], 16) >= 0
    assert legacy_id(fingerprint_hash(TWIN_A)) == new[:11] == "pce471a5f8c"
    assert paper_id(TWIN_B)[:11] == new[:11] and paper_id(TWIN_B) != new


def test_colliding_ids_store_every_paper_and_a_reingest_adds_and_merges_nothing(
    fresh_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:  # type: ignore[no-untyped-def]
    short_ids(monkeypatch, 2)  # 256 ids for 50 papers
    texts = abstracts(50)
    path = write_jsonl(tmp_path / "papers.jsonl", texts)
    with caplog.at_level(logging.WARNING):
        first = ingest_files(fresh_db, [path], now=NOW)
    assert (first.added, first.merged, first.skipped) == (50, 0, 0)
    rows = stored(fresh_db)
    assert sorted(str(row["abstract"]) for row in rows) == sorted(texts)
    assert all(row["fingerprint"] == fingerprint_hash(str(row["abstract"])) for row in rows)
    displaced = [row for row in rows if row["id"] != paper_id(str(row["abstract"]))]
    assert len(displaced) >= 5  # 50 papers in 256 ids collide, by design of the test
    warnings = collisions(caplog)
    assert len(warnings) == len(displaced)  # one line per collision, naming both ids
    for row in displaced:
        own = paper_id(str(row["abstract"]))
        assert any(own in line and str(row["id"]) in line for line in warnings)
    caplog.clear()
    enriched = count_enrichments(monkeypatch)
    again = ingest_files(fresh_db, [path], now=NOW + timedelta(days=1))
    assert (again.added, again.merged, again.skipped) == (0, 0, 50)
    assert enriched == []  # each found where its collision sent it, before enrichment
    assert stored(fresh_db) == rows and not collisions(caplog)


def test_a_paper_with_a_taken_id_is_found_again_from_another_file(
    fresh_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the full path (a new author makes the record not yet absorbed): the
    probe sequence leads to the paper, which is merged into, not duplicated."""
    short_ids(monkeypatch, 2)
    texts = abstracts(50)
    ingest_files(fresh_db, [write_jsonl(tmp_path / "a.jsonl", texts)], now=NOW)
    more = write_jsonl(tmp_path / "b.jsonl", texts, authors=["Ada Lovelace"])
    summary = ingest_files(fresh_db, [more], now=NOW + timedelta(days=1))
    assert (summary.added, summary.merged) == (0, 50)
    assert count_papers(fresh_db) == 50
    assert all(
        row["authors"] == '["Ada Lovelace"]' for row in fresh_db.query("select * from papers")
    )


def test_when_every_id_is_taken_the_ingest_stops_and_stores_nothing(
    fresh_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short_ids(monkeypatch, 1)  # 16 ids: the 17th paper has none
    path = write_jsonl(tmp_path / "papers.jsonl", abstracts(17))
    with pytest.raises(IngestError, match="no free paper id"):
        ingest_files(fresh_db, [path], now=NOW)
    assert count_papers(fresh_db) == 0


def test_an_abstract_merged_into_another_paper_is_no_alias_for_its_id_twin(
    fresh_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record merged by title leaves its abstract's alias; a different abstract with the
    same id must not follow that alias into the paper."""
    short_ids(monkeypatch, 2)
    texts = abstracts(300)
    merged, twin = next(
        (a, b) for i, a in enumerate(texts) for b in texts[i + 1 :] if paper_id(a) == paper_id(b)
    )
    title = {"title": "A Careful Study of Everything Here", "authors": ["Ada Lovelace"]}
    first = {"abstract": "The first version of this paper.", **title}
    second = {"abstract": merged, **title}
    path = tmp_path / "titled.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, count_papers(fresh_db)) == (1, 1)  # the second merged (by title)
    again = ingest_files(fresh_db, [write_jsonl(tmp_path / "m.jsonl", [merged])], now=NOW)
    assert (again.added, count_papers(fresh_db)) == (0, 1)  # found through its alias
    other = ingest_files(fresh_db, [write_jsonl(tmp_path / "t.jsonl", [twin])], now=NOW)
    assert (other.added, other.merged, count_papers(fresh_db)) == (1, 0, 2)


def insert_legacy(db: Store, abstract: str, **fields: object) -> str:
    """A paper as stored with a legacy id: 10 digits, no fingerprint."""
    record = PaperRecord(abstract=abstract, source="papers.jsonl", line=1, **fields)  # type: ignore[arg-type]
    row = build_row(record, NOW)
    row["id"] = legacy_id(fingerprint_hash(abstract))
    row.pop("fingerprint", None)
    insert_paper(db, row)
    return str(row["id"])


def test_papers_stored_under_legacy_ids_are_found_by_a_reingest(
    fresh_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = abstracts(20)
    old_ids = sorted(insert_legacy(fresh_db, text) for text in texts)
    path = write_jsonl(tmp_path / "papers.jsonl", texts)
    enriched = count_enrichments(monkeypatch)
    summary = ingest_files(fresh_db, [path], now=NOW)
    assert (summary.added, summary.merged, summary.skipped) == (0, 0, 20)
    assert enriched == []  # found under their legacy ids before enrichment
    more = write_jsonl(tmp_path / "more.jsonl", texts, keywords=["ids"])  # the full path
    summary = ingest_files(fresh_db, [more], now=NOW)
    assert (summary.added, summary.merged) == (0, 20)
    assert [row["id"] for row in stored(fresh_db)] == old_ids
    assert all(len(i) == 11 for i in old_ids)


def test_a_legacy_id_shared_by_a_different_abstract_is_not_merged_into(
    fresh_db: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = insert_legacy(fresh_db, TWIN_A)
    with caplog.at_level(logging.WARNING):
        summary = ingest_files(fresh_db, [write_jsonl(tmp_path / "b.jsonl", [TWIN_B])], now=NOW)
    assert (summary.added, summary.merged) == (1, 0)
    assert get_paper(fresh_db, old)["abstract"] == TWIN_A  # type: ignore[index]
    assert get_paper(fresh_db, paper_id(TWIN_B))["abstract"] == TWIN_B  # type: ignore[index]
    assert [line for line in collisions(caplog) if old in line] == [
        f"paper id {old} is held by a paper with a different abstract: not merged"
    ]  # once: not again by the look before enrichment
    again = ingest_files(fresh_db, [tmp_path / "b.jsonl"], now=NOW)
    assert (again.added, again.merged, count_papers(fresh_db)) == (0, 0, 2)


def test_a_legacy_paper_whose_abstract_was_replaced_needs_a_shared_author(
    tmp_path: Path,
) -> None:
    """Its original fingerprint is unknown (a newer arXiv version replaced the abstract):
    its id alone is 40 bits, so an author surname must agree too."""
    for authors, added in ((["Alan Turing"], 1), (["A. Lovelace"], 0)):
        db = open_db(":memory:")
        old = insert_legacy(db, TWIN_A, authors=["Ada Lovelace"])
        db.execute("update papers set abstract = 'A revised text.' where id = ?", [old])
        path = write_jsonl(tmp_path / "p.jsonl", [TWIN_A], authors=authors)
        assert ingest_files(db, [path], now=NOW).added == added, authors
        assert count_papers(db) == 1 + added


def test_a_64_bit_id_and_its_prefixes_resolve(fresh_db: Store, tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    ingest_files(fresh_db, [write_jsonl(tmp_path / "p.jsonl", abstracts(5))], now=NOW)
    [row] = fresh_db.query("select id from papers where abstract like '%setting 3,%'")
    full = str(row["id"])
    assert len(full) == 17
    for ref in (full, full.upper(), full[:11], full[:6]):
        assert resolve_paper(fresh_db, ref)["id"] == full  # type: ignore[index]
        assert resolve(fresh_db, ref).paper["id"] == full  # type: ignore[index]
    path = write_jsonl(tmp_path / "one.jsonl", abstracts(5))
    assert run("ingest", str(path)).exit_code == 0
    shown = run("show", full)
    assert shown.exit_code == 0 and full in shown.output and "setting 3" in shown.output


def test_fetched_papers_with_colliding_ids_are_stored_apart_and_found_again(
    fresh_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source's page takes the same path (`fetched.store_page` -> `store_row`)."""
    short_ids(monkeypatch, 2)
    page = [
        FetchedPaper(source="feed:lab", title=f"Findings of study number {i}", abstract=text)
        for i, text in enumerate(abstracts(50))
    ]
    prepared, _ = prepare_page(page, NOW)
    first = store_page(fresh_db, prepared, NOW)
    assert (first.added, count_papers(fresh_db)) == (50, 50)
    prepared, _ = prepare_page(page, NOW)
    again = store_page(fresh_db, prepared, NOW + timedelta(hours=1))
    assert (again.added, again.merged, count_papers(fresh_db)) == (0, 0, 50)


# --- Paper ids under attack: legacy papers whose abstract was replaced, and the aliases
# an older Paperboy made from row ids. Nothing may merge two papers silently, and the same
# paper must not be stored twice.

V1 = "Version one: we bound the spectral gap of sparsified random walks on graphs."
V2 = "Version two: tight spectral bounds for sparsifiers of random walks, with proofs."


def replaced_legacy_paper(db: Store, authors: list[str]) -> str:
    """As the legacy-id code left a paper whose arXiv v2 replaced its abstract: the
    row keeps the id of v1 (10 digits), holds v2's text, and v2's old id is its alias."""
    old = insert_legacy(db, V1, authors=authors)
    db.execute("update papers set abstract = ? where id = ?", [V2, old])
    add_alias(db, legacy_id(fingerprint_hash(V2)), old)
    return old


def id_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "digests.ingest.ids"]


def test_the_text_a_legacy_paper_holds_now_is_found_whatever_its_authors_look_like(
    fresh_db: Store, tmp_path: Path
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
    fresh_db: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
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
    fresh_db: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """TWIN_B's old id is an alias (an older Paperboy merged TWIN_B into a titled paper, whose
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


def test_a_name_suffix_or_et_al_is_no_shared_author(fresh_db: Store, tmp_path: Path) -> None:
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
    fresh_db: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
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
    fresh_db: Store, tmp_path: Path
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
    fresh_db: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two exports whose `id` column is the row number: "1" of one file is no paper of
    the other (merged, the second file's abstracts would be lost). The number still merges
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
    fresh_db: Store, caplog: pytest.LogCaptureFixture
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
