"""What ingest refuses: links, special files, secrets, oversized records. Each refusal is
one line that names the file (and line), never the secret, and stores nothing."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.inbox import ingest_inbox
from db import open_db
from db.papers import count_papers
from db.search import search_papers
from db.store import Store
from digests.ingest import IngestError, ingest_files
from digests.ingest.decode import Limits
from digests.ingest.pipeline import read_records
from tests.conftest import NOW

BOT_TOKEN = "xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SIGNING = "8f14e45fceea167a5a36dedd4bea2543"
# base64url("123456789012345678") . 6 chars . 27 chars: the shape of a Discord bot token
DISCORD = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0"
ENV_FILE = f"SLACK_BOT_TOKEN={BOT_TOKEN}\nSLACK_SIGNING_SECRET={SIGNING}\nPAPERBOY_DB=db/x.db\n"
ABSTRACT = "We propose GraspAll, a method for grasping anything with one robot hand."


@pytest.fixture
def env_file(tmp_path: Path) -> Path:
    path = tmp_path / "private" / ".env"
    path.parent.mkdir()
    path.write_text(ENV_FILE, encoding="utf-8")
    return path


def refusal(path: Path, **kwargs: object) -> str:
    with pytest.raises(IngestError) as caught:
        ingest_files(open_db(":memory:"), [path], now=NOW, **kwargs)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    for secret in (BOT_TOKEN, SIGNING, DISCORD, "xoxb-1234"):
        assert secret not in message
    return message


def nothing_found(db: Store) -> None:
    assert count_papers(db) == 0
    assert search_papers(db, "xoxb", 5) == []


# --- links and special files ---------------------------------------------------------------


def test_a_symlink_in_the_inbox_to_a_env_file_is_refused(tmp_path: Path, env_file: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "papers.txt").symlink_to(env_file)
    db = open_db(tmp_path / "paperboy.db")
    result = ingest_inbox(db, inbox, NOW)
    assert result.loaded == []
    [failure] = result.failed
    assert failure.startswith("papers.txt: ") and "symbolic link" in failure
    assert BOT_TOKEN not in failure and SIGNING not in failure
    nothing_found(db)
    again = ingest_inbox(db, inbox, NOW)  # reported once per version, not every run
    assert (again.loaded, again.failed) == ([], [])


def test_ingest_refuses_a_symlink_and_stores_nothing(tmp_path: Path, env_file: Path) -> None:
    link = tmp_path / "papers.txt"
    link.symlink_to(env_file)
    db_path = tmp_path / "paperboy.db"
    result = CliRunner().invoke(main, ["ingest", str(link), "--db", str(db_path)])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: {link}: is a symbolic link; refusing to follow it (give the file itself)"
    )
    nothing_found(open_db(db_path))
    found = CliRunner().invoke(main, ["find", "xoxb", "--db", str(db_path), "--json"])
    assert json.loads(found.output) == []


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "papers.tsv"
    os.mkfifo(fifo)
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(refusal(fifo)), daemon=True)
    thread.start()
    thread.join(10)
    assert outcome == [f"{fifo}: is a FIFO (named pipe), not a regular file; refusing to read it"]


@pytest.mark.parametrize(
    ("path", "words"),
    [("/dev/zero", "is a device"), ("/dev/null", "is a device"), ("/tmp", "is a directory")],
)
def test_devices_and_directories_are_refused(path: str, words: str) -> None:
    if not Path(path).exists():
        pytest.skip(f"{path} is not on this system")
    assert words in refusal(Path(path))


# --- secrets --------------------------------------------------------------------------------


def test_a_env_file_itself_is_refused(env_file: Path) -> None:
    message = refusal(env_file)
    assert message.startswith(f"{env_file}:1: looks like it holds ")


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("slack.tsv", f"title\tabstract\nT\t{ABSTRACT} Token: {BOT_TOKEN}\n", "a Slack token"),
        (
            "app.jsonl",
            json.dumps({"abstract": f"{ABSTRACT} xapp-1-A0123456789-0123456789-abcdef"}) + "\n",
            "a Slack token",
        ),
        (
            "discord.jsonl",
            json.dumps({"abstract": ABSTRACT}) + "\n" + json.dumps({"abstract": DISCORD}) + "\n",
            "a Discord bot token",
        ),
        ("signing.txt", f"ICML 2025\n\n{ABSTRACT}\n\nsigning secret: {SIGNING}\n", "signing"),
        ("env-line.txt", f"ICML 2025\n\n{ABSTRACT}\n\nDISCORD_TOKEN=abc.def.ghi\n", "NAME=value"),
        ("plain.env", "PAPERBOY_DB=db/x.db\nPAPERBOY_INBOX=inbox\n", ".env file"),
    ],
)
def test_text_that_looks_like_a_secret_is_refused(
    tmp_path: Path, name: str, content: str, kind: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    message = refusal(path)
    assert kind in message
    assert message.startswith(f"{path}:")


def test_ordinary_abstracts_about_tokens_and_secrets_still_ingest(
    fresh_db: Store, tmp_path: Path
) -> None:
    path = tmp_path / "fine.txt"
    path.write_text(
        "ICML 2025\n\n"
        "We study token budgets and secret sharing. Tokenization with BPE; commit "
        "8f14e45fceea167a5a36dedd4bea2543 of github.com/a.b/c. E = mc^2 holds.\n\n"
        "LR=0.001 and BATCH=32 gave the best results for our model.\n\n"
        # Sentences that start like a setting (`NAME: value`, `ENV NAME value`):
        "TOKEN: a new method for budgeted decoding, which we call TokenNet.\n\n"
        "ENV TOKEN_LIMIT of 5 is what we use for the environment budget in ProcGen.\n\n"
        "AUTH: we propose AuthNet, learned authentication from logs.\n",
        encoding="utf-8",
    )
    assert ingest_files(fresh_db, [path], now=NOW).added == 5


# --- huge files and records, bounded memory -------------------------------------------------

SMALL = Limits(max_record_chars=2_000, max_document_chars=50_000)


def test_a_line_over_the_limit_stops_the_file_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(
        json.dumps({"abstract": ABSTRACT}) + "\n" + json.dumps({"abstract": "x" * 5000}) + "\n"
    )
    assert refusal(path, limits=SMALL) == (
        f"{path}:2: a line is 5 KB, over the 2 KB limit for one paper (PAPERBOY_MAX_RECORD_KB)"
    )


def test_a_line_with_no_end_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "endless.txt"
    path.write_text("a" * 300_000)  # no newline at all
    records = read_records(path, limits=SMALL)
    with pytest.raises(IngestError, match=r":1: a line is \d+ KB, over the 2 KB limit"):
        next(records)


def test_an_open_quote_in_a_csv_is_refused_at_the_row_that_opened_it(tmp_path: Path) -> None:
    path = tmp_path / "open.csv"
    path.write_text(f'title,abstract\nA,"{ABSTRACT}"\nB,"never closed\n' + "more text\n" * 500)
    message = refusal(path, limits=SMALL)
    assert message.startswith(f"{path}:3: a row is ")
    assert "quote left open" in message


def test_a_paragraph_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("ICML 2025\n\n" + ABSTRACT + "\n\n" + "word and more\n" * 400)
    assert refusal(path, limits=SMALL).startswith(f"{path}:5: a paragraph is ")


def test_a_whole_document_format_over_its_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps([{"abstract": ABSTRACT}] * 2000, indent=1))
    assert "a JSON array over" in refusal(path, limits=SMALL)


def test_records_are_read_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader hands out the first record without reading the whole file."""
    import digests.ingest.decode as decode

    path = tmp_path / "many.tsv"
    with path.open("w") as out:
        out.write("title\tabstract\n")
        for n in range(50_000):
            out.write(f"T{n}\t{ABSTRACT} Variant {n}.\n")
    opened = []
    real = decode.open_regular

    def spy(p: Path):  # type: ignore[no-untyped-def]
        handle = real(p)
        opened.append(handle)
        return handle

    monkeypatch.setattr(decode, "open_regular", spy)
    records = read_records(path)
    assert next(records).title == "T0"
    assert opened[0].tell() < path.stat().st_size / 10
    records.close()


def test_the_default_limit_comes_from_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"abstract": "word " * 600}) + "\n")
    db_path = tmp_path / "paperboy.db"
    runner = CliRunner()
    result = runner.invoke(
        main, ["ingest", str(path), "--db", str(db_path)], env={"PAPERBOY_MAX_RECORD_KB": "2"}
    )
    assert result.exit_code == 2
    assert "over the 2 KB limit" in result.output
    ok = runner.invoke(main, ["ingest", str(path), "--db", str(db_path)])
    assert ok.exit_code == 0, ok.output


# --- control, bidi and invisible characters are stripped at ingest --------------------------

UNSAFE = "\x1b]0;pwned\x07\x1b[2J\u202e\u2066\u200b\ufeff\x07\x9b\x00"
INVISIBLE = "\x1b\x07\u202e\u2066\u200b\ufeff\x9b\x00"


def test_stored_text_has_no_control_bidi_or_invisible_characters(
    fresh_db: Store, tmp_path: Path
) -> None:
    path = tmp_path / "dirty.jsonl"
    path.write_text(
        json.dumps(
            {
                "title": f"Grasp{UNSAFE}All",
                "abstract": f"We propose Grasp{UNSAFE}All, a method for\tgrasping{UNSAFE}.",
                "authors": [f"Ann{UNSAFE}", UNSAFE],
                "venue": f"ICRA{UNSAFE}",
                "keywords": f"robots{UNSAFE}",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    ingest_files(fresh_db, [path], now=NOW)
    [row] = fresh_db.query("select * from papers")
    for column, value in row.items():
        if isinstance(value, str):
            assert not any(char in value for char in INVISIBLE), (column, value)
            assert "pwned" not in value  # the escape sequence went whole
    assert row["title"] == "GraspAll"
    assert row["abstract"] == "We propose GraspAll, a method for\tgrasping."
    assert json.loads(row["authors"]) == ["Ann"]
    assert row["venue"] == "ICRA"


def test_an_invisible_character_does_not_hide_a_token(tmp_path: Path) -> None:
    path = tmp_path / "hidden.tsv"
    hidden = BOT_TOKEN[:2] + "\u200b" + BOT_TOKEN[2:]
    path.write_text(f"title\tabstract\nT\t{ABSTRACT} {hidden}\n", encoding="utf-8")
    assert "a Slack token" in refusal(path)


# --- secrets in disguise: other token kinds, glued to a word, split by markup --------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("xoxe-1-My0xLTEyMzQ1Njc4OTAtYWJjZGVmZ2hpams", "a Slack refresh token (xoxe-)"),
        ("xoxe.xoxp-1-My0xLTEyMzQ1Njc4OTAtYWJj", "a rotated user token"),
        ("xoxc-1234567890-1234567890-abcdefabcdef", "a Slack client token (xoxc-)"),
        ("config_xoxb-1234567890-1234567890123-AbCd", "a token glued to a word by _"),
        ("xo**xb**-1234567890-1234567890123-AbCdEf", "split by Markdown emphasis"),
        ("xox`b`-1234567890-1234567890123-AbCdEf", "split by a code span"),
        ("$xoxb$-1234567890-1234567890123-AbCdEf", "split by maths"),
        ("xoxb\\-1234567890-1234567890123-AbCdEf", "split by a Markdown escape"),
        ("[xoxb](https://a.example/x)-1234567890-1234567890123-AbCdEf", "split by a link"),
        ("client_secret: dGhpc2lzYWNsaWVudHNlY3JldDEyMzQ1", "a base64-ish client secret"),
        ('"signing_secret": "8F14E45FCEEA167A5A36DEDD4BEA2543"', "an upper-case signing secret"),
        ("https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdEFGHijklMNOPqrstUVWX", "hook"),
        ("https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz", "hook"),
    ],
)
def test_hidden_and_other_shaped_secrets_are_refused(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "paper.txt"
    path.write_text(f"ICML 2025\n\n{ABSTRACT} We log in with {text} daily.\n", encoding="utf-8")
    message = refusal(path)
    assert message.startswith(f"{path}:3: looks like it holds "), why
    assert text not in message


@pytest.mark.parametrize(
    "line",
    [
        "set OPENAI_API_KEY=sk-abc123",  # Windows
        "setenv DISCORD_TOKEN abc123",  # csh
        "ENV SLACK_SIGNING_SECRET abc123",  # Dockerfile
        '$env:SLACK_BOT_TOKEN="abc123"',  # PowerShell
        "SLACK_APP_TOKEN: abc123",  # YAML
    ],
)
def test_credential_settings_in_other_shells_are_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "paper.txt"
    path.write_text(f"ICML 2025\n\n{ABSTRACT}\n\n{line}\n", encoding="utf-8")
    assert refusal(path) == (
        f"{path}:5: looks like it holds a credential setting (NAME=value); refusing the file"
    )


def test_a_refusal_is_one_line_on_the_terminal(tmp_path: Path) -> None:
    """The CLI says it once: no warning log line on top of the error."""
    path = tmp_path / "paper.tsv"
    path.write_text(f"title\tabstract\nT\t{ABSTRACT} {BOT_TOKEN}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["ingest", str(path), "--db", str(tmp_path / "p.db")])
    assert result.exit_code == 2
    assert (
        result.output == f"error: {path}:2: looks like it holds a Slack token; refusing the file\n"
    )


def test_a_refused_file_leaves_no_new_database_behind(tmp_path: Path, env_file: Path) -> None:
    db_path = tmp_path / "new" / "folder" / "paperboy.db"
    result = CliRunner().invoke(main, ["ingest", str(env_file), "--db", str(db_path)])
    assert result.exit_code == 2
    assert not (tmp_path / "new").exists()
    # An existing database is kept, papers and all, whatever is refused.
    good = tmp_path / "good.txt"
    good.write_text(f"ICML 2025\n\n{ABSTRACT}\n", encoding="utf-8")
    assert CliRunner().invoke(main, ["ingest", str(good), "--db", str(db_path)]).exit_code == 0
    assert CliRunner().invoke(main, ["ingest", str(env_file), "--db", str(db_path)]).exit_code == 2
    assert count_papers(open_db(db_path)) == 1


def test_a_new_database_someone_started_using_is_kept(tmp_path: Path) -> None:
    from db.fresh import NewDatabase

    path = tmp_path / "shared.db"
    new = NewDatabase(path)
    db = open_db(path)
    db.execute("insert into app_state (key, value, updated_at) values ('k', 'v', 'now')")
    db.conn.commit()
    new.discard(db)  # another process wrote to it meanwhile: not ours to remove
    assert path.exists()
    dangling = tmp_path / "link.db"
    dangling.symlink_to(tmp_path / "elsewhere" / "target.db")
    assert not NewDatabase(dangling).fresh  # a link someone made is never removed


# --- a file that changes while it is read ---------------------------------------------------


def test_a_file_changed_between_the_two_passes_is_refused(fresh_db: Store, tmp_path: Path) -> None:
    """The check pass and the store pass must see the same bytes: a file still being
    written (or edited) would otherwise be stored as a half that was never checked
    whole, e.g. a truncated last abstract stored as a paper of its own."""
    path = tmp_path / "papers.tsv"
    path.write_text(f"title\tabstract\nA\t{ABSTRACT}\n", encoding="utf-8")

    def edit_between_passes(records):  # type: ignore[no-untyped-def]
        with path.open("a", encoding="utf-8") as out:
            out.write("B\tWe introduce HalfWritt")  # a writer still at work
        return records

    with pytest.raises(IngestError) as caught:
        ingest_files(fresh_db, [path], now=NOW, progress=edit_between_passes)
    assert str(caught.value) == (
        f"{path}: changed while it was being ingested (is it still being written?); "
        "nothing was stored; try again once it is complete"
    )
    assert count_papers(fresh_db) == 0
    assert ingest_files(fresh_db, [path], now=NOW).added == 2  # once it is stable, it loads


def test_a_file_that_grows_while_read_is_read_to_its_size_when_opened(tmp_path: Path) -> None:
    from digests.ingest.decode import read_lines

    path = tmp_path / "growing.txt"
    path.write_text("first line\n", encoding="utf-8")
    lines = read_lines(path)
    assert next(lines) == "first line\n"
    with path.open("a", encoding="utf-8") as out:  # a writer that never stops
        out.write("appended later\n" * 10_000)
    assert list(lines) == []


def test_a_link_in_the_folders_above_the_file_is_fine(tmp_path: Path) -> None:
    """Only the file read may not be a link: a home folder or inbox that is a symbolic
    link (common on macOS and NFS setups) still works. (Pins the behaviour; not a fix.)"""
    real = tmp_path / "real-home"
    (real / "inbox").mkdir(parents=True)
    (real / "inbox" / "papers.txt").write_text(f"ICML 2025\n\n{ABSTRACT}\n", encoding="utf-8")
    home = tmp_path / "home"
    home.symlink_to(real, target_is_directory=True)
    db = open_db(tmp_path / "paperboy.db")
    assert ingest_files(db, [home / "inbox" / "papers.txt"], now=NOW).added == 1
    (real / "inbox" / "more.txt").write_text(f"ICML 2025\n\n{ABSTRACT} Again.\n", encoding="utf-8")
    assert ingest_inbox(db, home / "inbox", NOW).loaded == ["more.txt", "papers.txt"]


def test_a_paper_over_the_limit_in_a_whole_document_is_refused(tmp_path: Path) -> None:
    """Whole-document formats are capped only as a whole (64 MB), and a JSON string is
    one line (capped): but a paper's list fields can span many short lines. Each paper
    is capped too, all its fields together."""
    path = tmp_path / "papers.json"
    papers = [{"abstract": ABSTRACT}, {"abstract": ABSTRACT, "authors": ["Ann Lee"] * 500}]
    path.write_text(json.dumps(papers, indent=1), encoding="utf-8")
    assert refusal(path, limits=SMALL) == (
        f"{path}:1: a paper is 3 KB, over the 2 KB limit for one paper (PAPERBOY_MAX_RECORD_KB)"
    )


def test_an_invisible_character_does_not_hide_a_token_in_the_venue_or_id(tmp_path: Path) -> None:
    hidden = BOT_TOKEN[:2] + "\u200b" + BOT_TOKEN[2:]
    for column in ("venue", "id"):
        path = tmp_path / f"hidden-{column}.tsv"
        path.write_text(f"abstract\t{column}\n{ABSTRACT}\t{hidden}\n", encoding="utf-8")
        assert refusal(path) == f"{path}:2: looks like it holds a Slack token; refusing the file"


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "100KB"])
def test_a_bad_record_limit_is_one_clear_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "one.txt"
    path.write_text(f"ICML 2025\n\n{ABSTRACT}\n", encoding="utf-8")
    db_path = tmp_path / "p.db"
    result = CliRunner().invoke(
        main, ["ingest", str(path), "--db", str(db_path)], env={"PAPERBOY_MAX_RECORD_KB": value}
    )
    assert result.exit_code == 2
    assert result.output == (
        f"error: PAPERBOY_MAX_RECORD_KB={value!r} is not valid: must be a positive whole number\n"
    )
    assert not db_path.exists()
