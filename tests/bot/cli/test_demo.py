"""`paperboy demo`: the bundled papers and the `local:demo` channel go into a database of
their own, never the production store that `paperboy run` schedules from."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from bot.scheduler import scheduled_channels
from bot.services import Services
from db.connection import open_db


def test_demo_prints_a_digest_in_its_own_database(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run("demo")
    assert result.exit_code == 0, result.output
    assert "38 added" in result.output
    # Terminal text: no Markdown code marks (Slack and Discord keep them).
    assert "demo subscribed this channel to Offline RL (offline-rl)." in result.output
    assert "`" not in result.output
    assert "Paperboy digest for local:demo" in result.output
    assert "== Offline RL ==" in result.output
    assert "LoMAP: Local Manifold Approximation and Projection" in result.output
    assert "AlphaDPO: Adaptive preference optimization framework" in result.output
    assert "Change topics:" in result.output
    assert (tmp_path / "db" / "demo.db").exists()
    assert not (tmp_path / "db" / "paperboy.db").exists()
    again = run("demo")
    assert again.exit_code == 0
    assert "0 added" in again.output and "Nothing new" in again.output
    assert "subscribed" not in again.output  # already subscribed: nothing changes
    assert "LoMAP" in again.output  # a preview: nothing was marked as sent


def test_demo_leaves_the_production_store_as_it_was(  # type: ignore[no-untyped-def]
    run, tmp_path: Path, settings: Any, catalog: Any
) -> None:
    """With PAPERBOY_DB set (a server's store, here one with a channel of its own), the demo
    adds no paper and no channel to it, and `paperboy run`'s schedule has no local:demo."""
    store = tmp_path / "srv" / "paperboy.db"
    made = run("chat", "--channel", "local:lab", "subscribe rlhf", PAPERBOY_DB=str(store))
    assert made.exit_code == 0, made.output
    assert run("demo", PAPERBOY_DB=str(store)).exit_code == 0

    db = open_db(store)
    assert db.sqlite["papers"].count == 0
    assert [row["id"] for row in db.query("select id from channels")] == ["local:lab"]
    db.close()
    assert set(scheduled_channels(Services(store, settings, catalog))) == {"local:lab"}
    demo = open_db(tmp_path / "db" / "demo.db")
    assert demo.sqlite["papers"].count == 38
    assert set(scheduled_channels(Services(tmp_path / "db" / "demo.db", settings, catalog))) == {
        "local:demo"
    }


def test_the_hints_after_the_demo_work_when_pasted(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The demo ends with commands to try; pasted as printed, they read the demo's
    database (also one given with --db, a path with a space in it), not PAPERBOY_DB."""
    db = tmp_path / "my demo" / "d.db"
    for args in ((), ("--db", str(db))):
        shown = run("demo", *args)
        assert shown.exit_code == 0, shown.output
        last = shown.output.strip().splitlines()[-1]
        hints = last.split("Try: ", 1)[1].rstrip(".").split(", ")
        find, chat = (shlex.split(hint) for hint in hints)
        assert find[:2] == ["paperboy", "find"] and chat[:2] == ["paperboy", "chat"]
        found = run(*find[1:])
        assert found.exit_code == 0 and "AlphaDPO" in found.output, found.output
        helped = run(*chat[1:])
        assert helped.exit_code == 0 and "Commands:" in helped.output, helped.output
    assert not (tmp_path / "db" / "paperboy.db").exists()


def test_demo_database_from_the_environment_or_db(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`PAPERBOY_DEMO_DB` moves the demo's database; `--db`, before or after `demo`, wins."""
    env_db = tmp_path / "env-demo.db"
    assert run("demo", PAPERBOY_DEMO_DB=str(env_db)).exit_code == 0
    assert env_db.exists() and not (tmp_path / "db").exists()
    after, before = tmp_path / "after.db", tmp_path / "before.db"
    assert run("demo", "--db", str(after), PAPERBOY_DEMO_DB=str(env_db)).exit_code == 0
    assert run("--db", str(before), "demo", PAPERBOY_DEMO_DB=str(env_db)).exit_code == 0
    assert after.exists() and before.exists() and not (tmp_path / "db").exists()


def test_a_command_after_the_demo_says_where_the_demo_s_papers_are(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = run("find", "dpo")
    assert before.exit_code == 2 and "demo" not in before.output
    run("demo")
    after = run("find", "dpo")
    assert after.exit_code == 2
    demo = Path("db") / "demo.db"
    assert after.output.strip() == (
        f"error: no database at {Path('db') / 'paperboy.db'}; create one with `paperboy "
        f"ingest FILE` (or check --db and $PAPERBOY_DB); the demo's papers are in {demo} "
        f"(--db {demo})"
    )
    assert run("find", "dpo", "--db", str(demo)).exit_code == 0
