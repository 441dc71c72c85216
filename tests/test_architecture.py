"""The layering rules: digests/ and db/ stay platform-agnostic; db/ is storage only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(package: str) -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update((str(path), alias.name.split(".")[0]) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add((str(path), node.module.split(".")[0]))
    return found


@pytest.mark.parametrize("package", ["digests", "db"])
def test_core_never_imports_a_platform(package: str) -> None:
    offenders = {
        (path, mod)
        for path, mod in imported_modules(package)
        if mod in {"slack_bolt", "slack_sdk", "discord", "bot"}
    }
    assert offenders == set()


def test_db_does_not_import_the_core() -> None:
    offenders = {(path, mod) for path, mod in imported_modules("db") if mod in {"digests", "bot"}}
    assert offenders == set()


def test_every_module_has_a_logger_or_is_tiny() -> None:
    for package in ("digests", "db", "bot", "config"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if "\ndef " in text or "\nclass " in text:
                assert "log = logging.getLogger(__name__)" in text, path
