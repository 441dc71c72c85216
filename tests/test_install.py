"""The server install's systemd unit: the page shows deploy/paperboy.service as it is, and
systemd accepts it without a warning."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICE_PAGE = ROOT / "docs" / "how-to" / "service.md"
UNIT = ROOT / "deploy" / "paperboy.service"

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)


def documented_unit() -> str:
    """The one unit file (an `ini` block starting with `[Unit]`) on the service page."""
    page = SERVICE_PAGE.read_text(encoding="utf-8")
    units = [
        block
        for block in re.findall(r"^```ini\n(.*?)^```", page, re.S | re.M)
        if block.startswith("[Unit]")
    ]
    assert len(units) == 1, units
    return str(units[0])


def verify(unit: str, folder: Path) -> tuple[int, str]:
    """`systemd-analyze verify` of `unit` -> (exit status, output). Its ExecStart binary is
    made in `folder` (verify refuses a unit whose binary does not exist)."""
    found = re.search(r"^ExecStart=(\S+)", unit, re.M)
    assert found, "the unit has no ExecStart"
    binary = folder / "bin" / Path(found.group(1)).name
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    path = folder / "paperboy.service"
    path.write_text(unit.replace(found.group(1), str(binary), 1), encoding="utf-8")
    done = subprocess.run(
        ["systemd-analyze", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_page_shows_the_shipped_unit() -> None:
    """The docs' unit and deploy/paperboy.service are one text: neither drifts alone."""
    assert documented_unit() == UNIT.read_text(encoding="utf-8")


def test_the_unit_runs_the_installed_command_as_its_own_user() -> None:
    unit = UNIT.read_text(encoding="utf-8")
    assert "\nUser=paperboy\n" in unit
    assert "\nWorkingDirectory=/var/lib/paperboy\n" in unit
    assert "\nExecStart=/opt/paperboy/venv/bin/paperboy " in unit
    # Paperboy reads .env itself: systemd would keep a trailing comment in a value.
    assert "EnvironmentFile" not in unit


def test_the_command_line_takes_the_unit_s_arguments(run) -> None:  # type: ignore[no-untyped-def]
    """systemd-analyze checks that ExecStart's binary exists, not that it takes the
    arguments: `paperboy run --log-json` is click's "No such option" and a restart loop."""
    found = re.search(r"^ExecStart=\S+/paperboy (.*)$", UNIT.read_text(encoding="utf-8"), re.M)
    assert found, "the unit does not start the paperboy command"
    args = found.group(1).split()
    assert "run" in args
    result = run(*args, "--help")
    assert result.exit_code == 0, result.output
    assert " run [OPTIONS]" in result.output.splitlines()[0]


@needs_systemd_analyze
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    code, output = verify(UNIT.read_text(encoding="utf-8"), tmp_path)
    assert (code, output) == (0, "")


@needs_systemd_analyze
@pytest.mark.parametrize(
    ("good", "broken"),
    [("RestartSec=", "RestartSecs="), ("Restart=on-failure", "Restart=on-fail")],
)
def test_verify_sees_a_broken_unit(tmp_path: Path, good: str, broken: str) -> None:
    """The check above can fail: a misspelled key or a bad value is reported (systemd only
    warns, exit status 0, so any output counts)."""
    unit = UNIT.read_text(encoding="utf-8")
    assert good in unit
    code, output = verify(unit.replace(good, broken), tmp_path)
    assert code != 0 or output != ""
