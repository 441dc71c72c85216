#!/usr/bin/env python3
"""The project's single entry point: the README, CI and developers all run these.

    python3 tasks.py install # set up .venv (or bring it up to date), dev tools included
    python3 tasks.py demo    # set up (once) and run the demo on the bundled papers
    python3 tasks.py test    # set up (once), then lint, type-check and run the tests
    python3 tasks.py lint    # ruff, mypy, import contracts, fresh reference pages, docs build
    python3 tasks.py docs    # serve the docs site on http://127.0.0.1:8000
    python3 tasks.py cog     # regenerate the reference pages under docs/reference/
    python3 tasks.py bench   # the benchmarks under bench/
    python3 tasks.py relevance   # topics, free text, find and similar against reference judgements
    python3 tasks.py fmt     # ruff format and fix

It needs nothing but Python 3.11+: it makes `.venv/` and installs the project with
its dev extras there, again only when pyproject.toml or these install steps change. A
server's install, without the dev tools, is in docs/how-to/service.md.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".paperboy-install-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
# pip's arguments, in order. The build backend pyproject.toml names is installed too, so the
# checkout can be built without a network (tests/test_readme_walkthrough.py does).
INSTALL = (
    ("install", "--quiet", "--upgrade", "pip", "setuptools>=77"),
    ("install", "--quiet", "-e", ".[dev]"),
)


def _run(*cmd: str | Path) -> None:
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_env() -> None:
    """Create .venv and install the project into it, unless it is up to date."""
    if sys.version_info < (3, 11):  # noqa: UP036 (tasks.py runs on any python3)
        sys.exit(f"Paperboy needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    recipe = (ROOT / "pyproject.toml").read_bytes() + repr(INSTALL).encode()
    wanted = hashlib.sha256(recipe).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    if not (BIN / "python").exists():
        print("Creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("Installing Paperboy and its dev tools into .venv ...", flush=True)
    for args in INSTALL:
        _run(BIN / "python", "-m", "pip", *args)
    STAMP.write_text(wanted)


REFERENCE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "reference").glob("*.md"))


def lint() -> None:
    _run(BIN / "ruff", "check", ".")
    _run(BIN / "ruff", "format", "--check", ".")
    _run(BIN / "mypy")
    _run(BIN / "lint-imports")
    _run(BIN / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *LINT_TESTS)
    _run(BIN / "cog", "--check", *REFERENCE)
    os.environ["NO_MKDOCS_2_WARNING"] = "1"  # mkdocs-material's banner about MkDocs 2
    with tempfile.TemporaryDirectory() as site:
        _run(BIN / "mkdocs", "build", "--strict", "--quiet", "--site-dir", site)


# The rules over the source tree that lint enforces beside the import contracts.
LINT_TESTS = ("tests/test_architecture.py", "tests/test_sql_lives_in_db.py")


def main(argv: list[str]) -> None:
    task = argv[0] if argv else "help"
    rest = argv[1:]
    if task in ("help", "-h", "--help"):
        print(__doc__)
        return
    ensure_env()
    if task == "install":
        return
    if task == "demo":
        _run(BIN / "paperboy", "demo", *rest)
    elif task == "test":
        lint()
        _run(BIN / "python", "-m", "pytest", *rest)
    elif task == "lint":
        lint()
    elif task == "cog":
        _run(BIN / "cog", "-r", *REFERENCE)
    elif task == "docs":
        _run(BIN / "mkdocs", "serve", *rest)
    elif task == "fmt":
        _run(BIN / "ruff", "format", ".")
        _run(BIN / "ruff", "check", "--fix", ".")
    elif task == "bench":
        _run(BIN / "python", "-m", "bench", *rest)
    elif task == "relevance":
        _run(BIN / "python", "-m", "bench.relevance", *rest)
    else:
        sys.exit(f"unknown task {task!r}; try: python3 tasks.py help")


if __name__ == "__main__":
    main(sys.argv[1:])
