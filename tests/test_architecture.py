"""The layering rules: digests/ and db/ stay platform-agnostic; db/ is storage only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(package: str) -> set[tuple[str, str]]:
    """(file, full module name) for every absolute import in a package."""
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update((str(path), alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add((str(path), node.module))
    return found


def is_platform(module: str) -> bool:
    top = module.split(".")[0]
    # slack_sdk.models (Block Kit classes that validate themselves) is data, not a client.
    return top in {"slack_bolt", "discord", "bot", "aiohttp"} or (
        top == "slack_sdk" and not module.startswith("slack_sdk.models")
    )


def test_the_rule_itself() -> None:
    assert is_platform("slack_bolt.async_app")
    assert is_platform("slack_sdk.web.async_client")
    assert is_platform("discord.app_commands")
    assert not is_platform("slack_sdk.models.blocks")
    assert not is_platform("sqlite_utils")


@pytest.mark.parametrize("package", ["digests", "db", "config"])
def test_core_never_imports_a_platform(package: str) -> None:
    offenders = {(path, mod) for path, mod in imported_modules(package) if is_platform(mod)}
    assert offenders == set()


def test_db_does_not_import_the_core() -> None:
    offenders = {
        (path, mod)
        for path, mod in imported_modules("db")
        if mod.split(".")[0] in {"digests", "bot", "config"}
    }
    assert offenders == set()


def test_every_module_has_a_logger() -> None:
    for package in ("digests", "db", "bot", "config"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if "\ndef " in text or "\nclass " in text:
                assert "log = logging.getLogger(__name__)" in text, path


def private_imports(source: str, module: str) -> list[str]:
    """Private names of our other modules that `module`'s source reaches: `from M import
    _name`, and `_name` read off a module imported by name (`import M as m; m._name`)."""
    found = []
    modules: dict[str, str] = {}  # local name -> our module it is bound to
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES and alias.name != module:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    if node.module != module:
                        found.append(f"{module}: from {node.module} import {alias.name}")
                elif f"{node.module}.{alias.name}" != module:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            base = ast.unparse(node.value)
            if base in modules:
                found.append(f"{module}: {modules[base]}.{node.attr}")
    return found


PACKAGES = ("bot", "digests", "db", "config")


def test_the_private_name_rule_itself() -> None:
    source = "from digests.lookup import _rank, search\nfrom os import _exit\n"
    assert private_imports(source, "bot.cli") == ["bot.cli: from digests.lookup import _rank"]
    assert private_imports("from digests.lookup import _rank\n", "digests.lookup") == []
    reads = "import db.outbox as box\nfrom digests import semantic\nbox._t(); semantic._m\n"
    assert sorted(private_imports(reads, "bench.x")) == [
        "bench.x: db.outbox._t",
        "bench.x: digests.semantic._m",
    ]
    assert private_imports("import os\nos._exit(0)\nself._x = 1\n", "bot.run") == []


def test_no_private_name_is_imported_from_another_module() -> None:
    found = []
    for package in (*PACKAGES, "bench"):
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found += private_imports(
                path.read_text(encoding="utf-8"), module.removesuffix(".__init__")
            )
    assert found == []


def test_no_test_module_defines_a_name_twice() -> None:
    """A second `def test_x` in one module hides the first, which then never runs (ruff's
    F811 is off for tests/: fixtures imported from tests/fakes/ are parameters by name)."""
    twice = []
    for path in (ROOT / "tests").rglob("*.py"):
        seen: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name in seen:
                    twice.append(f"{path.relative_to(ROOT)}: {node.name}")
                seen.add(node.name)
    assert twice == []


def imported_test_modules(source: str) -> list[str]:
    """The test modules (tests.….test_*) that `source` imports, anywhere in it."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [n for n in names if n.startswith("tests.") and n.split(".")[-1].startswith("test_")]


def test_the_test_import_rule_itself() -> None:
    source = "from tests import test_docs\ndef f():\n    from tests.bot.cli.test_cli import x\n"
    assert imported_test_modules(source) == ["tests.test_docs", "tests.bot.cli.test_cli"]
    assert imported_test_modules("from tests.fakes.cli import paperboy_process\n") == []


def test_no_test_module_imports_another() -> None:
    """Shared test code lives in tests/fakes/ or conftest.py, never in a test module."""
    found = []
    for path in (ROOT / "tests").rglob("*.py"):
        found += [
            f"{path.relative_to(ROOT)}: {name}"
            for name in imported_test_modules(path.read_text(encoding="utf-8"))
        ]
    assert found == []
