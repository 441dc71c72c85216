"""Running the `paperboy` command as a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _paperboy_process(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`paperboy ARGS` in a process of its own (which closes its database on exit)."""
    if "stdout" not in kwargs:
        kwargs["stdout"] = subprocess.PIPE
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=Path(__file__).resolve().parents[3],
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        **kwargs,
    )
