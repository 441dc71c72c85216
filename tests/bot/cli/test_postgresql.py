"""Every command works the same against PostgreSQL: one session of `paperboy` commands run
on a SQLite file and on a real PostgreSQL database prints the same, word for word."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import postgres

CHANNEL = "local:lab"


def session(run: Callable[..., Any], db: str, seed_paths: list[Path]) -> list[tuple[str, str]]:
    """The commands a lab's first week runs, with what each printed (and its exit status)."""
    said: list[tuple[str, str]] = []

    def step(*args: str) -> str:
        result = run(*args, "--db", db)
        said.append((" ".join(args), f"[{result.exit_code}] {result.output}"))
        return str(result.output)

    step("ingest", *map(str, seed_paths))
    step("ingest", str(seed_paths[0]))  # again: every paper skipped
    found = json.loads(step("find", "alpha", "dpo", "--json", "--limit", "3"))
    step("find", "offline", "rl", "-diffusion")
    step("show", found[0]["id"][:8])
    for command in (
        "subscribe rlhf",
        "subscribe offline-rl",
        "subscribe diffusion policy for robot arms",
        "schedule monday 09:00 Europe/Berlin",
        "list",
        f"save {found[0]['id']}",
        "saved",
        "unsubscribe offline-rl",
        "list",
        "status",
        "sujbscribe rlhf",  # a typo: a suggestion, nothing stored
    ):
        step("chat", "--channel", CHANNEL, "--user", "ada", *command.split())
    step("digest", "--channel", CHANNEL, "--preview")
    step("sources", "add", "arxiv:cs.LG", "--no-check")
    step("sources", "list")
    step("saved", "local:ada", "--format", "json")
    step("status")
    step("prune", "--dry-run")
    return said


def comparable(said: list[tuple[str, str]], db: str) -> list[tuple[str, str]]:
    """What was said with the database's own name and the clock's readings taken out."""
    stamp = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:\d\d|Z| UTC)?")
    return [(command, stamp.sub("<time>", output.replace(db, "<db>"))) for command, output in said]


@pytest.mark.usefixtures("postgres_server")
def test_a_session_says_the_same_on_postgresql_as_on_sqlite(
    run: Callable[..., Any],
    tmp_path: Path,
    seed_paths: list[Path],
    postgres_server: postgres.Server,
) -> None:
    lite = str(tmp_path / "lab.db")
    name = postgres_server.fresh_database()
    url = postgres_server.url(name)
    try:
        on_sqlite = comparable(session(run, lite, seed_paths), lite)
        on_postgresql = comparable(session(run, url, seed_paths), url)
    finally:
        postgres_server.drop(name)
    assert any("38 added" in output for _, output in on_sqlite)
    assert all(output.startswith(("[0]", "[2]")) for _, output in on_sqlite)
    for (command, expected), (_, got) in zip(on_sqlite, on_postgresql, strict=True):
        assert got == expected, command


def test_a_postgresql_url_from_the_environment_is_used(
    run: Callable[..., Any],
    tmp_path: Path,
    seed_paths: list[Path],
    postgres_server: postgres.Server,
) -> None:
    name = postgres_server.fresh_database()
    try:
        url = postgres_server.url(name)
        added = run("ingest", str(seed_paths[0]), PAPERBOY_DATABASE_URL=url)
        assert added.exit_code == 0 and "added" in added.output
        assert not (tmp_path / "db" / "paperboy.db").exists()
        found = run("find", "alphadpo", "--json", PAPERBOY_DATABASE_URL=url)
        assert json.loads(found.output)[0]["title"].startswith("AlphaDPO")
    finally:
        postgres_server.drop(name)


def test_a_server_that_is_down_is_one_line_that_says_try_again(
    run: Callable[..., Any], postgres_server: postgres.Server
) -> None:
    url = postgres_server.url("paperboy_template").replace(
        str(postgres_server.folder / "data"), "/nonexistent-socket-dir"
    )
    result = run("find", "dpo", "--db", url)
    assert result.exit_code == 2
    assert result.output.startswith("error: database unavailable, try again")
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_wrong_password_is_not_shown_and_says_what_to_fix(run: Callable[..., Any]) -> None:
    result = run("find", "dpo", "--db", "postgresql://ada:hunter2@127.0.0.1:1/nowhere")
    assert result.exit_code == 2 and "hunter2" not in result.output
    assert result.output.startswith("error: ")
