"""`paperboy saved --user KEY --format bibtex|json`, and `paperboy chat` with a reply's
attachment."""

from __future__ import annotations

import json
from pathlib import Path

import bibtexparser

from db import open_db
from db.papers import get_paper, insert_paper
from db.saved import save
from digests.bibtex import cite_key
from tests.conftest import seed_paper_id

ALICE = "slack:T0123/U0456"


def saved_db(run, tmp_path: Path, seed_paths: list[Path]) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "s.db")
    assert run("ingest", *map(str, seed_paths), "--db", db).exit_code == 0
    store = open_db(db)
    ids = [seed_paper_id(store, "LoMAP"), seed_paper_id(store, "AlphaDPO")]
    save(store, ALICE, ids[0], "2026-11-30T08:00:00+00:00", "slack:T0123/C1")
    save(store, ALICE, ids[1], "2026-11-30T09:00:00+00:00")
    save(store, "discord:123456789012", ids[0], "2026-11-30T09:00:00+00:00")
    store.close()
    return db, ids


def test_saved_prints_bibtex_that_parses(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db, ids = saved_db(run, tmp_path, seed_paths)
    result = run("saved", "--user", ALICE, "--db", db)
    assert result.exit_code == 0, result.output
    library = bibtexparser.parse_string(result.output)
    assert not library.failed_blocks
    store = open_db(db)
    papers = [store.sqlite["papers"].get(paper_id) for paper_id in ids[::-1]]  # newest first
    assert [e.key for e in library.entries] == [cite_key(dict(p)) for p in papers]


def test_saved_as_json(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db, ids = saved_db(run, tmp_path, seed_paths)
    result = run("saved", "--user", ALICE, "--format", "json", "--db", db)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [row["paper_id"] for row in rows] == ids[::-1]
    assert rows[1]["saved_from"] == "slack:T0123/C1"
    assert rows[0]["saved_at"] == "2026-11-30T09:00:00+00:00"
    assert rows[0]["bibtex_key"].startswith("alphadpo2025_")
    other = run("saved", "--user", "discord:123456789012", "--format", "json", "--db", db)
    assert [row["paper_id"] for row in json.loads(other.output)] == [ids[0]]


def test_saved_of_nobody_and_bad_keys(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db, _ = saved_db(run, tmp_path, seed_paths)
    empty = run("saved", "--user", "local:nobody", "--db", db)
    assert empty.exit_code == 0
    assert empty.stdout == "" and "local:nobody has no saved papers." in empty.stderr
    assert (
        json.loads(run("saved", "--user", "local:nobody", "--format", "json", "--db", db).output)
        == []
    )
    for bad in ("alice", "@alice", "slack:U0456", "slack:T0123/U0456/x", "discord:abc", "irc:x"):
        result = run("saved", "--user", bad, "--db", db)
        assert result.exit_code != 0
        assert "is not a user key" in result.output
    missing = run("saved", "--user", ALICE, "--db", str(tmp_path / "none.db"))
    assert missing.exit_code != 0 and "no database at" in missing.output
    assert not (tmp_path / "none.db").exists()


def test_chat_prints_an_attachment_and_knows_the_local_user(
    run, tmp_path: Path, seed_paths
) -> None:  # type: ignore[no-untyped-def]
    db, ids = saved_db(run, tmp_path, seed_paths)
    store = open_db(db)
    save(store, "local:ops", ids[0], "2026-11-30T10:00:00+00:00")
    store.close()
    result = run("chat", "--channel", "local:lab", "--user", "ops", "saved export", "--db", db)
    assert result.exit_code == 0, result.output
    head, _, body = result.output.partition("\n\n")
    assert head == "1 saved paper as BibTeX (paperboy-saved.bib)."
    (entry,) = bibtexparser.parse_string(body).entries
    assert entry.key.startswith("lomap2025_")


def test_chat_saved_with_a_user_name_that_cannot_be_a_key_says_so(
    run, tmp_path: Path, seed_paths
) -> None:  # type: ignore[no-untyped-def]
    # It answered "I can't tell who you are here ... use /papers saved in Slack or Discord".
    db, _ = saved_db(run, tmp_path, seed_paths)
    result = run("chat", "--channel", "local:lab", "--user", "Ana María", "saved", "--db", db)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --user 'Ana María' cannot name a saved list (local:NAME): use letters, digits, "
        "'.', '_' or '-'"
    ]
    other = run("chat", "--channel", "local:lab", "--user", "Ana María", "topics", "--db", db)
    assert other.exit_code == 0, other.output  # a name for other commands is any text


def test_json_bibtex_keys_are_the_keys_of_the_bibtex(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    # Two saved papers whose short keys clash (same author, year, word and first six hex
    # digits of their ids) take the long key in the BibTeX; the JSON said the short one,
    # which names no entry of the export.
    db, ids = saved_db(run, tmp_path, seed_paths)
    store = open_db(db)
    seed = get_paper(store, ids[0])
    assert seed is not None
    for number, title in ((1, "Conservative policies"), (2, "Conservative estimates")):
        twin = f"p111111000000000{number}"
        insert_paper(store, seed | {"id": twin, "title": title, "title_key": twin,
                                    "authors": ["Aviral Kumar"], "year": 2020})  # fmt: skip
        save(store, ALICE, twin, f"2026-12-0{number}T08:00:00+00:00")
    store.close()
    exported = run("saved", "--user", ALICE, "--db", db)
    listed = run("saved", "--user", ALICE, "--format", "json", "--db", db)
    assert exported.exit_code == listed.exit_code == 0, exported.output + listed.output
    keys = [entry.key for entry in bibtexparser.parse_string(exported.output).entries]
    assert len(set(keys)) == 4
    assert "kumar2020conservative_1111110000000002" in keys
    assert [row["bibtex_key"] for row in json.loads(listed.output)] == keys
