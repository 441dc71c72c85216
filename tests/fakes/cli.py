"""Running the `paperboy` command as a child process."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _paperboy_process(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
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


def bound_by_permissions(*args: str) -> subprocess.CompletedProcess[str]:
    """`paperboy ARGS` run by root but bound by file permissions like any user: the child
    drops the capabilities that override them before it starts. Unlike a run as `nobody`,
    it needs no access for others to the interpreter or the checkout (a private folder)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded here, not in the forked child

    def drop_override() -> None:
        for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return _paperboy_process(*args, preexec_fn=drop_override, env={"PATH": "/usr/bin:/bin"})


def permissions_can_bind_root() -> bool:
    """Whether `bound_by_permissions` works here (it needs CAP_SETPCAP)."""
    try:
        return bound_by_permissions("--help").returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
