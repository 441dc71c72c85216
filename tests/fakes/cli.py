"""Running the `paperboy` command as a child process."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def paperboy_process(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`paperboy ARGS` in a process of its own (which closes its database on exit)."""
    if "stdout" not in kwargs:
        kwargs["stdout"] = subprocess.PIPE
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=Path(__file__).resolve().parents[2],
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        **kwargs,
    )


def _drop_override() -> None:
    """In a forked child: give up root's power to override file permissions."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def bound_by_permissions(*args: str) -> subprocess.CompletedProcess[str]:
    """`paperboy ARGS` run by root but bound by file permissions like any user: the child
    drops the capabilities that override them before it starts. Unlike a run as `nobody`,
    it needs no access for others to the interpreter or the checkout (a private folder)."""
    ctypes.CDLL(None, use_errno=True)  # loaded here, not first in the forked child
    return paperboy_process(*args, preexec_fn=_drop_override, env={"PATH": "/usr/bin:/bin"})


def permissions_can_bind_root() -> bool:
    """Whether `bound_by_permissions` works here: a child bound that way is refused a write
    to a read-only file (dropping needs CAP_SETPCAP; an inherited override would survive)."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "read-only"
        target.write_text("")
        target.chmod(0o444)
        try:
            ctypes.CDLL(None, use_errno=True)
            child = subprocess.run(
                [sys.executable, "-c", f"open({str(target)!r}, 'a')"],
                preexec_fn=_drop_override,
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return child.returncode != 0 and "PermissionError" in child.stderr


def read_only_runner(run: Callable[..., Any]) -> Callable[..., tuple[int, str]]:
    """`paperboy ARGS` -> (exit code, output), bound by file permissions: `run` (the CLI in
    this process) for a user other than root; as root, `bound_by_permissions` (a skip
    where root cannot give its override up)."""
    if os.geteuid() != 0:

        def in_process(*args: str) -> tuple[int, str]:
            result = run(*args)
            return result.exit_code, result.output

        return in_process
    if not permissions_can_bind_root():
        pytest.skip("root cannot drop its permission override here (no CAP_SETPCAP)")

    def child(*args: str) -> tuple[int, str]:
        done = bound_by_permissions(*args)
        return done.returncode, done.stdout + done.stderr

    return child
