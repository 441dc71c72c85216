"""SQL and table access live in db/: bot/, digests/ and config/ call db functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "digests", "config")
# Files owned by others whose SQL has db functions already; the lead switches them.
PENDING = {"bot/cli.py", "bot/slack/actions.py", "bot/slack/app.py", "digests/commands/handlers.py"}

_COLUMN = r"(?:distinct\s+)?[\w.*]+(?:\([^()]*\))?(?:\s+as\s+\w+)?"
SQL_SHAPES = re.compile(
    r"^\s*(?:"
    rf"select\s+(?:\*|{_COLUMN}(?:\s*,\s*{_COLUMN})*\s+from\b)"
    r"|(?:insert|replace)(?:\s+or\s+\w+)?\s+into\s+\w+"
    r"|update\s+\w+\s+set\s+\w+"
    r"|delete\s+from\s+\w+"
    r"|(?:create|drop)\s+(?:unique\s+|virtual\s+|temp\s+)?(?:table|index|view|trigger)\b"
    r"|alter\s+table\s+\w+"
    r"|pragma\s+\w+\s*(?:=|\(|$)"
    r"|with\s+(?:recursive\s+)?\w+(?:\s*\([^()]*\))?\s+as\s*\("
    r"|begin(?:\s+(?:immediate|deferred|exclusive))?(?:\s+transaction)?\s*$"
    r"|(?:savepoint|release(?:\s+savepoint)?|rollback\s+to(?:\s+savepoint)?)\s+\w+\s*$"
    r"|(?:commit|rollback)(?:\s+transaction)?\s*;?\s*$"
    r")"
    # A fragment of a statement: a comparison with a bound parameter.
    r"|\b\w+\s*(?:=|<|>|<=|>=|!=|<>|\bin|\blike|\bmatch)\s*(?:\?|:[a-z_]+\b)",
    re.IGNORECASE,
)
# Connection and sqlite-utils calls that only storage code makes.
DB_METHODS = {"execute", "executemany", "executescript", "query", "table", "atomic"}
DB_NAMES = {"db", "conn", "connection", "database"}


def _text(node: ast.JoinedStr) -> str:
    """An f-string's text, each replacement field as a placeholder name."""
    return "".join(
        part.value if isinstance(part, ast.Constant) else "x_" for part in node.values
    )


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _names_a_database(node: ast.expr) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name.lower() in DB_NAMES


def storage_code(source: str) -> list[tuple[int, str]]:
    """(line, what) for every piece of SQL or database access in `source`."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    in_fstring = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                  for part in node.values}
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.JoinedStr):
            text = _text(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and id(node) not in in_fstring:
                text = node.value
        if text is not None and SQL_SHAPES.search(text):
            found.append((node.lineno, f"SQL {text[:60]!r}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in DB_METHODS:
                found.append((node.lineno, f".{node.func.attr}()"))
            elif node.func.attr in {"rollback", "commit"} and _names_a_database(node.func.value):
                found.append((node.lineno, f".{node.func.attr}()"))
        elif isinstance(node, ast.Attribute) and node.attr in {"conn", "in_transaction"}:
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Subscript) and _names_a_database(node.value):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                found.append((node.lineno, f"table {node.slice.value!r}"))
    return sorted(found)


def test_the_detector_flags_storage_code() -> None:
    sample = '''
rows = db.query("select * from papers where id = ?", [1])
db["papers"].upsert(row, pk="id")
cur = conn.execute(f"PRAGMA cache_size = {kib}")
sql = "select id, title from papers"
more = " and added_at >= ?"
count = "select count(*) from outbox"
db.table("inbox_files").upsert(row, pk="path")
conn.execute("SAVEPOINT change")
fresh = db.conn.in_transaction
db.conn.rollback()
'''
    lines = {line for line, _ in storage_code(sample)}
    assert lines == set(range(2, 12))


def test_the_detector_leaves_english_alone() -> None:
    sample = '''
"""Select the papers from a window: a docstring."""
hint = "select a topic from the list"
button = "Update your settings"
text = "Delete this digest from the channel?"
lines.insert(0, "with care")
message = "Begin here"
'''
    assert storage_code(sample) == []


def test_sql_lives_in_db() -> None:
    offenders = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            found = storage_code(path.read_text(encoding="utf-8"))
            if found and relative not in PENDING:
                offenders[relative] = found
    assert offenders == {}


def test_pending_files_still_exist() -> None:
    assert all((ROOT / relative).is_file() for relative in PENDING)
