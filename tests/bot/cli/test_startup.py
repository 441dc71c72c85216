"""Start-up of the `paperboy` command line: a lookup does not import what only
`run`, `digest` or `ingest` need. Checked in a fresh interpreter, through `sys.modules`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from db import open_db
from digests.ingest import ingest_files
from tests.conftest import NOW

# What `paperboy run` and the digest need, and a lookup does not.
HEAVY = (
    "asyncio", "slack_bolt", "slack_sdk", "discord", "aiohttp", "apscheduler", "jinja2",
    "digests.digest", "digests.ingest.pipeline", "digests.render.slack", "digests.commands",
    "importlib.metadata",  # sqlite-utils' plugin search: every installed package's metadata
)  # fmt: skip
ROOT = Path(__file__).resolve().parents[3]


def imported_after(code: str) -> set[str]:
    """The top-level names and the HEAVY modules in `sys.modules` after running `code`."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted({m for m in sys.modules if m in HEAVY or m.split('.')[0] in HEAVY})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{probe}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_command_line_imports_nothing_heavy() -> None:
    """Not the digest builder, the renderers (and with them slack_sdk and jinja2), the
    ingest pipeline nor asyncio: each command imports what it needs when it runs."""
    assert imported_after("import bot.cli") == set()


def test_a_lookup_from_the_command_line_imports_nothing_heavy(
    tmp_path: Path, seed_paths: list[Path]
) -> None:
    db = tmp_path / "p.db"
    ingest_files(open_db(db), seed_paths, now=NOW)
    code = (
        "import contextlib, io\nfrom bot.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    main(['find', 'offline', 'reinforcement', '--db', {str(db)!r}],"
        " standalone_mode=False)\n"
        "assert 'offline' in out.getvalue().lower(), out.getvalue()"
    )
    assert imported_after(code) == set()


def test_the_ingest_formats_offered_are_the_pipeline_s() -> None:
    from bot.cli.ingest import INGEST_FORMATS
    from digests.ingest.detect import FORMATS

    assert INGEST_FORMATS == FORMATS


def test_the_runner_imports_a_platform_s_library_only_to_start_it() -> None:
    """A Slack-only install never needs discord.py, nor a Discord-only one slack_bolt."""
    assert not imported_after("import bot.runner") & {"slack_bolt", "discord"}
