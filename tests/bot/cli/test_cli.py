"""The `paperboy` command line, end to end through click."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

from tests.fakes.cli import paperboy_process, read_only_runner


def test_ingest_find_show_with_db_option(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "x.db")
    result = run("ingest", *map(str, seed_paths), "--db", db)
    assert result.exit_code == 0
    assert "38 papers read from 2 files: 38 added, 0 merged, 0 skipped" in result.output
    found = run("find", "alpha", "dpo", "--json", "--limit", "3", "--db", db)
    results = json.loads(found.output)
    assert results[0]["title"].startswith("AlphaDPO")
    assert {"id", "title", "venue", "year", "tldr", "abstract", "url", "score"} <= set(results[0])
    shown = run("show", results[0]["id"][:6], "--db", db)
    assert shown.exit_code == 0
    assert "TL;DR:" in shown.output and "ICML 2025" in shown.output
    as_json = json.loads(run("show", results[0]["id"], "--json", "--db", db).output)
    assert as_json["id"] == results[0]["id"] and as_json["sources"] == ["icml2025.txt"]


def test_db_from_environment(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    env_db = tmp_path / "env.db"
    run("ingest", str(seed_paths[0]), PAPERBOY_DB=str(env_db))
    assert env_db.exists()
    assert not (tmp_path / "db" / "paperboy.db").exists()


def test_find_with_no_match_says_so(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    run("ingest", str(seed_paths[0]), "--db", str(tmp_path / "e.db"))
    result = run("find", "?!?", "--db", str(tmp_path / "e.db"))
    assert result.exit_code == 0
    assert result.output.strip() == "No matches for '?!?'."
    readable = run("find", "zzzqqq", "--db", str(tmp_path / "e.db"))
    assert "No matches" in readable.output


def test_bad_file_is_one_line_exit_2_and_nothing_stored(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "b.db")
    bad = tmp_path / "bad.csv"
    bad.write_text("title,url\nT,http://x\n")
    result = run("ingest", str(bad), "--db", db)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {bad}:1: has no 'abstract' column (columns: title, url)"
    ]
    assert "Traceback" not in result.output
    good = tmp_path / "good.txt"
    good.write_text("ICML 2025\n\nWe propose GoodNet, a method for good things.\n")
    both = run("ingest", str(good), str(bad), "--db", db)
    assert both.exit_code == 2
    from db import open_db
    from db.papers import count_papers

    assert count_papers(open_db(db)) == 0  # the good file was not stored either


def test_missing_file_is_a_clear_error(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run("ingest", str(tmp_path / "nope.txt"), "--db", str(tmp_path / "n.db"))
    assert result.exit_code == 2
    assert "nope.txt: no such file" in result.output


def test_unknown_paper_id(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    run("ingest", str(seed_paths[0]), "--db", str(tmp_path / "s.db"))
    result = run("show", "pzzzzzz", "--db", str(tmp_path / "s.db"))
    assert result.exit_code == 1
    assert "no paper with id 'pzzzzzz'" in result.output


def test_bad_setting_is_named(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run("find", "x", PAPERBOY_DIGEST_SIZE="many")
    assert result.exit_code == 2
    assert "PAPERBOY_DIGEST_SIZE='many' is not valid" in result.output


def test_unopenable_database_is_a_clear_error(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "adir"
    folder.mkdir()
    result = run("find", "x", "--db", str(folder))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    # Through the environment click cannot check it: the message says what is wrong.
    for args in (("find", "x"), ("status",), ("ingest", "nothing.txt")):
        result = run(*args, PAPERBOY_DB=str(folder))
        assert result.exit_code == 2, result.output
        assert result.output == (
            f"error: {folder} is a folder, not a database file; give the database file's "
            "path (--db or $PAPERBOY_DB), e.g. db/paperboy.db\n"
        )
    helped = run("chat", "--channel", "local:lab", "help", PAPERBOY_DB=str(folder))
    assert helped.exit_code == 0 and "Commands:" in helped.output  # help needs no database


def test_unexpected_failure_is_one_line(run, monkeypatch: pytest.MonkeyPatch, seed_paths) -> None:  # type: ignore[no-untyped-def]
    from digests import lookup

    run("ingest", str(seed_paths[0]))

    def boom(*args: object) -> None:
        raise KeyError("surprise")

    monkeypatch.setattr(lookup, "find", boom)
    result = run("find", "x")
    assert result.exit_code == 1
    assert result.output.startswith("error: unexpected failure (KeyError")
    assert "Traceback" not in result.output


def test_chat_runs_the_grammar_for_any_channel(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "c.db")
    run("ingest", *map(str, seed_paths), "--db", db)
    ok = run(
        "chat", "--channel", "slack:T1/C1", "--user", "ops", "subscribe offline-rl", "--db", db
    )
    assert ok.exit_code == 0
    assert ok.output.startswith("ops subscribed this channel to Offline RL (offline-rl).")
    listed = run("chat", "--channel", "slack:T1/C1", "list", "--db", db)
    assert "offline-rl Offline RL, by ops" in listed.output
    other = run("chat", "--channel", "discord:123456789/987654321", "list", "--db", db)
    assert "follows 0 topics" in other.output  # channels never see each other
    bad = run("chat", "--channel", "slack:T1/C1", "subscribe ofline-rl", "--db", db)
    assert bad.exit_code == 2 and "Did you mean offline-rl?" in bad.output
    wrong = run("chat", "--channel", "irc:#x", "help", "--db", db)
    assert wrong.exit_code == 2 and "is not a channel" in wrong.output


def test_digest_command_formats_and_records(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "g.db")
    run("ingest", *map(str, seed_paths), "--db", db)
    run("chat", "--channel", "local:lab", "subscribe robotics", "--db", db)
    preview = json.loads(
        run("digest", "--channel", "local:lab", "--preview", "--format", "json", "--db", db).output
    )
    assert set(preview) == {"channel", "week", "preview", "since", "items", "messages"}
    assert preview["preview"] is True and preview["items"]
    assert {
        "paper_id", "title", "authors", "venue", "year", "tldr", "url", "pdf_url", "code_url",
        "published_at", "topics", "score", "from_archive",
    } == set(preview["items"][0])  # fmt: skip
    slack_payloads = json.loads(
        run("digest", "--channel", "local:lab", "--preview", "--format", "slack", "--db", db).output
    )
    assert slack_payloads[0]["blocks"][0]["type"] == "header"
    discord_payloads = json.loads(
        run(
            "digest", "--channel", "local:lab", "--preview", "--format", "discord", "--db", db
        ).output
    )
    assert discord_payloads[0]["allowed_mentions"] == {"parse": []}
    real = run("digest", "--channel", "local:lab", "--db", db)
    assert "Paperboy digest for local:lab" in real.output
    again = json.loads(
        run("digest", "--channel", "local:lab", "--format", "json", "--db", db).output
    )
    assert again["preview"] is False
    assert [i["paper_id"] for i in again["items"]] == [i["paper_id"] for i in preview["items"]]


def test_digest_send_to_a_local_channel(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "s.db")
    run("ingest", *map(str, seed_paths), "--db", db)
    run("chat", "--channel", "local:lab", "subscribe robotics", "--db", db)
    env = {"PAPERBOY_LOCAL_DIR": str(tmp_path / "out")}
    sent = run("digest", "--channel", "local:lab", "--send", "--db", db, **env)
    assert sent.exit_code == 0 and "local:lab: 1 message sent" in sent.output
    again = run("digest", "--channel", "local:lab", "--send", "--db", db, **env)
    assert "nothing to send" in again.output
    lines = (tmp_path / "out" / "lab.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["channel"] == "local:lab"
    both = run("digest", "--channel", "local:lab", "--send", "--preview", "--db", db)
    assert both.exit_code == 2


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b2J\u202eevil\u202c\u200b\x1bP+q\x1b\\\r\x7f"


def _poison(db: str, paper_id: str) -> None:
    """Put terminal escapes and invisible characters into every text field of a paper."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute(
            "update papers set title = 'AlphaDPO ' || :h || title, tldr = :h || tldr, "
            "abstract = :h || abstract, abstract_text = :h || abstract_text, venue = :h || venue "
            "where id = :id",
            {"h": HOSTILE, "id": paper_id},
        )


def _assert_inert(output: str, payload_gone: bool = True) -> None:
    for bad in ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u200b", "\r", "\x7f"):
        assert bad not in output, (bad, output)
    assert not payload_gone or "pwned" not in output  # whole sequences go, not only the ESC


def test_terminal_escapes_in_papers_never_reach_the_terminal(
    run, tmp_path: Path, seed_paths
) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "t.db")
    run("ingest", *map(str, seed_paths), "--db", db)
    paper_id = json.loads(run("find", "alphadpo", "--json", "--db", db).output)[0]["id"]
    _poison(db, paper_id)
    run("chat", "--channel", "local:lab", "subscribe rlhf", "--db", db)
    outputs = {
        "find": run("find", "alphadpo", "--db", db),
        "find --json": run("find", "alphadpo", "--json", "--db", db),
        "show": run("show", paper_id, "--db", db),
        "show --json": run("show", paper_id, "--json", "--db", db),
        "digest": run("digest", "--channel", "local:lab", "--preview", "--db", db),
        "chat show": run("chat", "--channel", "local:lab", f"show {paper_id}", "--db", db),
        "chat find": run("chat", "--channel", "local:lab", "find alphadpo", "--db", db),
        "chat digest": run("chat", "--channel", "local:lab", "digest", "--db", db),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, name
        assert "AlphaDPO" in result.output, name
        _assert_inert(result.output, payload_gone="json" not in name)
    # JSON keeps the data, written as escapes: lossless and inert.
    as_json = json.loads(outputs["show --json"].output)
    assert as_json["title"].startswith("AlphaDPO " + HOSTILE)
    assert "\\u001b]0;pwned\\u0007" in outputs["show --json"].output


def test_echoed_command_text_is_inert_too(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "u.db")
    run("ingest", str(seed_paths[0]), "--db", db)
    result = run("chat", "--channel", "local:lab", "find \x1b]0;pwned\x07zzqq\u202e", "--db", db)
    assert "No papers match “zzqq”" in result.output
    _assert_inert(result.output)


@pytest.mark.parametrize(
    "args",
    [
        ("find", "robots"),
        ("show", "p15e97bd3ed8b16b4"),
        ("status",),
        ("status", "--channel", "local:lab"),
        ("digest", "--channel", "local:lab", "--preview"),
        ("digest", "--channel", "local:lab"),
        ("chat", "--channel", "local:lab", "list"),
        ("chat", "--channel", "local:lab", "find robots"),
    ],
)
def test_a_mistyped_db_is_reported_and_nothing_is_created(run, tmp_path: Path, args) -> None:  # type: ignore[no-untyped-def]
    wrong = tmp_path / "typo" / "papers.db"
    result = run(*args, "--db", str(wrong))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: no database at {wrong}; create one with")
    assert not (tmp_path / "typo").exists()


def test_commands_that_store_things_create_the_database(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    helped = run("chat", "--channel", "local:lab", "help", "--db", str(tmp_path / "h" / "p.db"))
    assert helped.exit_code == 0 and "Commands:" in helped.output
    assert not (tmp_path / "h").exists()  # help needs no database
    first = tmp_path / "new" / "p.db"
    result = run("chat", "--channel", "local:lab", "subscribe robotics", "--db", str(first))
    assert result.exit_code == 0 and first.exists()  # a fresh install's first subscribe works
    assert run("demo", "--db", str(tmp_path / "d" / "p.db")).exit_code == 0


def test_db_before_or_after_the_command(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "b.db")
    assert run("--db", db, "ingest", str(seed_paths[0])).exit_code == 0
    assert "AlphaDPO" in run("--db", db, "find", "alphadpo").output
    assert "AlphaDPO" in run("find", "alphadpo", "--db", db).output
    assert "AlphaDPO" in run("--db", db, "find", "alphadpo", "--db", db).output
    twice = run("--db", db, "find", "alphadpo", "--db", str(tmp_path / "other.db"))
    assert twice.exit_code == 2 and "--db is given twice" in twice.output
    assert not (tmp_path / "db").exists()  # the default database was never touched


def test_undecodable_bytes_in_arguments_are_one_line_errors(
    run, tmp_path: Path, seed_paths
) -> None:  # type: ignore[no-untyped-def]
    """Bytes that are not UTF-8 in argv reach Python as lone surrogates (b"\\xff" is
    "\\udcff"), which SQLite refuses to encode: one line, not an "unexpected failure"."""
    db = str(tmp_path / "s.db")
    run("ingest", str(seed_paths[0]), "--db", db)
    shown = run("show", "\udcff", "--db", db)
    assert shown.exit_code == 1
    assert shown.output == "error: no paper with id '\\udcff'; try `paperboy find WORDS`.\n"
    user = run("chat", "--user", "\udcff", "--channel", "local:lab", "subscribe rlhf", "--db", db)
    assert user.exit_code == 2
    assert user.output == (
        "error: --user has bytes that are not valid text (UTF-8); type the name again\n"
    )
    assert "Topics: none yet" in run("status", "--channel", "local:lab", "--db", db).output


def test_a_reader_that_stops_reading_is_not_an_error(tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    """`paperboy find x | head -1`: the pipe closes under us, which is no failure to report."""
    db = str(tmp_path / "p.db")
    assert paperboy_process("ingest", *map(str, seed_paths), "--db", db).returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
    try:
        done = paperboy_process("find", "dpo", "--db", db, stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert done.stderr == ""  # no "unexpected failure (BrokenPipeError…)", no traceback


@pytest.mark.parametrize("writer_running", [False, True])
def test_find_and_status_work_on_a_read_only_database(
    run,
    seed_paths,
    writer_running: bool,  # type: ignore[no-untyped-def]
) -> None:
    """chmod'ed read-only, file and folder; with no -wal/-shm left (a WAL database in a
    read-only folder: opened immutable), or with a writer still holding them. Root ignores
    permissions, so as root the commands run without that power; others run them directly."""
    folder = Path(tempfile.mkdtemp(prefix="paperboy-ro-"))
    db = folder / "ro.db"
    writer = None
    try:
        paperboy_process("ingest", *map(str, seed_paths), "--db", str(db))
        paperboy_process("chat", "--channel", "local:lab", "subscribe robotics", "--db", str(db))
        if writer_running:
            writer = sqlite3.connect(db)
            writer.execute("insert into ingests (started_at, files) values ('2026', '[]')")
            writer.commit()  # stays in the write-ahead log while the writer is open
        left = sorted(path.name for path in folder.iterdir())
        db.chmod(0o444)
        if (
            os.geteuid() == 0
        ):  # the child is still their owner: read-only for it, as for another user
            for path in folder.glob("ro.db-*"):
                path.chmod(0o444)
        folder.chmod(0o555)

        paperboy = read_only_runner(run)
        code, output = paperboy("find", "alphadpo", "--db", str(db))
        assert code == 0 and "AlphaDPO" in output, output
        code, output = paperboy("status", "--db", str(db))
        assert code == 0 and "Papers: 38" in output and "Robotics" in output, output
        assert ("last ingest 2026 UTC" in output) == writer_running  # the WAL was read
        code, output = paperboy("status", "--channel", "local:other", "--db", str(db))
        assert code == 0 and "Topics: none yet" in output, output
        code, output = paperboy("show", "alphadpo", "--db", str(db))
        assert code == 1 and "no paper" in output, output  # an answer, not a database error
        code, output = paperboy("chat", "--channel", "local:lab", "subscribe rlhf", "--db", str(db))
        assert code == 2 and "is read-only for you, and this command needs to change it" in output
        code, output = paperboy("chat", "--channel", "local:lab", "digest", "--db", str(db))
        assert code == 0 and "This week's digest (a preview" in output  # a preview: no write
        code, output = paperboy("digest", "--channel", "local:lab", "--db", str(db))  # records
        assert code == 2 and "read-only for you" in output and "Traceback" not in output
        assert sorted(path.name for path in folder.iterdir()) == left  # nothing created
    finally:
        if writer is not None:
            writer.close()
        folder.chmod(0o755)
        shutil.rmtree(folder)  # the ingest made the search index folder too


def test_show_lists_the_papers_an_ambiguous_prefix_could_mean(
    run, tmp_path: Path, seed_paths
) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "a.db")
    run("ingest", *map(str, seed_paths), "--db", db)
    with sqlite3.connect(db) as conn:
        ids = [row[0] for row in conn.execute("select id from papers order by id limit 2")]
        for number, paper_id in enumerate(ids):
            conn.execute("update papers set id = ? where id = ?", [f"p3e9{number:06d}", paper_id])
    result = run("show", "p3e9", "--db", db)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "error: 'p3e9' matches 2 papers; use more of the id:"
    assert [line.split()[0] for line in lines[1:]] == ["p3e9000000", "p3e9000001"]
    shown = run("show", "p15e97bd3ed8b16b4", "--db", db)
    assert shown.output.count("AlphaDPO: Adaptive preference optimization framework") == 1
    assert "58.7% LC win rate" in shown.output and "\\(" not in shown.output


def test_find_takes_minus_words_as_words_not_options(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "m.db")
    run("ingest", str(Path(__file__).parents[2] / "fakes" / "search_papers.jsonl"), "--db", db)
    every = json.loads(run("find", "offline", "rl", "--json", "--db", db).output)
    assert any("Diffusion" in paper["title"] for paper in every)
    result = run("find", "offline", "rl", "-diffusion", "--json", "--db", db)
    assert result.exit_code == 0, result.output
    kept = json.loads(result.output)
    assert kept and not any("diffusion" in json.dumps(paper).lower() for paper in kept)
    only = run("find", "-diffusion", "--db", db)
    assert only.exit_code == 2
    assert only.output.strip().splitlines() == [
        "error: '-diffusion' only says what to leave out: add what to find, as in "
        "paperboy find offline rl -diffusion"
    ]


def test_find_refuses_an_unknown_double_dash_option(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Only a single-dash word is a minus word: a mistyped --option is click's error, as on
    any other command, not words to leave out."""
    db = str(tmp_path / "m.db")
    run("ingest", str(Path(__file__).parents[2] / "fakes" / "search_papers.jsonl"), "--db", db)
    for args in (("offline", "--limt", "2"), ("--limt=2", "offline"), ("offline", "--jsn")):
        result = run("find", *args, "--db", db)
        assert result.exit_code == 2, args
        name = args[1] if args[0] == "offline" else args[0].split("=")[0]
        assert f"Error: No such option '{name}'." in result.output, result.output
    assert "Did you mean '--limit'?" in run("find", "x", "--limt", "2", "--db", db).output
    assert run("find", "offline", "-limt", "--db", db).exit_code == 0  # a minus word


def test_find_refuses_more_than_eight_minus_words(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "m.db")
    run("ingest", str(Path(__file__).parents[2] / "fakes" / "search_papers.jsonl"), "--db", db)
    words = [f"-w{n}" for n in range(9)]
    assert run("find", "offline", *words[:8], "--db", db).exit_code == 0
    result = run("find", "offline", *words, "--db", db)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: at most 8 words or phrases can be left out (-word) of one find; this one has 9"
    ]
    for empty in ("-'", '-"', "—y"):
        assert "only says what to leave out" in run("find", "-x", empty, "--db", db).output
    assert run("find", "", "--db", db).output == "No matches for ''.\n"  # no minus in it
