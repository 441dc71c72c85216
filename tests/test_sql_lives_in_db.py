"""SQL and table access live in db/: bot/, digests/ and config/ call db functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "digests", "config")
_COLUMN = (
    r"(?:distinct\s+)?(?:[\w.*]+|'[^']*'|%s|\{\})(?:\((?:[^()]|\([^()]*\))*\))?(?:\s+as\s+\w+)?"
)
SQL_SHAPES = re.compile(
    r"^\s*\(?\s*(?:"
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
    r"|explain\s+(?:query\s+plan\s+)?(?:select|insert|update|delete|with)\b"
    r"|(?:vacuum|analyze)(?:\s+\w+)?\s*;?\s*$|attach\s+(?:database\s+)?\S+\s+as\s+\w+"
    r")"
    # A fragment of a statement: a comparison with a bound parameter.
    r"|\b\w+\s*(?:=|<|>|<=|>=|!=|<>)\s*(?:\?|:[a-z_]+\b)|\b(?:like|match)\s+\?",
    re.IGNORECASE,
)
# Connection and sqlite-utils calls that only storage code makes.
DB_METHODS = {"execute", "executemany", "executescript", "query", "table", "atomic"}
DB_NAMES = {"db", "conn", "connection", "database"}
ENDINGS = {"commit", "rollback"}  # transaction control, on something named like a database


def _text(node: ast.JoinedStr) -> str:
    """An f-string's text, each replacement field as a placeholder name."""
    return "".join(
        str(part.value) if isinstance(part, ast.Constant) else "x_" for part in node.values
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


def _finding(node: ast.AST, skipped: set[int]) -> str | None:
    """What in `node` is storage code, if anything (`skipped`: docstrings, f-string parts)."""
    text = None
    if isinstance(node, ast.JoinedStr):
        text = _text(node)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
        text = node.value
    if text is not None:
        return f"SQL {text[:60]!r}" if SQL_SHAPES.search(text) else None
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "sqlite3.connect":
        return "sqlite3.connect()"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method = node.func.attr
        on_db = _names_a_database(node.func.value)
        return f".{method}()" if method in DB_METHODS or (on_db and method in ENDINGS) else None
    if isinstance(node, ast.Attribute):
        in_transaction = node.attr == "in_transaction" and _names_a_database(node.value)
        return f".{node.attr}" if node.attr == "conn" or in_transaction else None
    if isinstance(node, ast.Subscript) and (
        _names_a_database(node.value)
        or (isinstance(node.value, ast.Call) and _names_a_database(node.value.func))
    ):
        table = node.slice
        if isinstance(table, ast.Constant) and isinstance(table.value, str):
            return f"table {table.value!r}"
    return None


def storage_code(source: str) -> list[tuple[int, str]]:
    """(line, what) for every piece of SQL or database access in `source`."""
    tree = ast.parse(source)
    skipped = _docstrings(tree) | {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    found = []
    for node in ast.walk(tree):
        what = _finding(node, skipped)
        if what is not None:
            found.append((getattr(node, "lineno", 0), what))
    return sorted(found)


def test_the_detector_flags_storage_code() -> None:
    sample = """
rows = db.query("select * from papers where id = ?", [1])
db["papers"].upsert(row, pk="id")
cur = conn.execute(f"PRAGMA cache_size = {kib}")
sql = "select id, title from papers"
more = " and title match ?"
count = f"select count(*) from outbox where id in ({marks}) and sent_at < :now"
db.table("inbox_files").upsert(row, pk="path")
conn.execute("SAVEPOINT change")
fresh = db.conn.in_transaction
db.conn.rollback()
busy = conn.in_transaction
last = "select coalesce(max(id), 0) from ingests"
quoted = "select 'x' from papers"
formatted = "select %s from papers" % columns
nested = "(select rowid from papers)"
plan = "explain query plan select 1"
VACUUM = "VACUUM"
papers = services.db()["papers"]
raw = sqlite3.connect(path)
"""
    lines = {line for line, _ in storage_code(sample)}
    assert lines == set(range(2, 21))


def test_the_detector_leaves_english_alone() -> None:
    sample = '''
"""Select the papers from a window: a docstring."""
hint = "select a topic from the list"
button = "Update your settings"
text = "Delete this digest from the channel?"
lines.insert(0, "with care")
message = "Begin here"
question = "Which topics are you in? The ones you like?"
open_now = transactions.in_transaction(db)
note = "Analyze the results, then vacuum the floor"
link = "(selected papers from the week)"
'''
    assert storage_code(sample) == []


def test_sql_lives_in_db() -> None:
    offenders = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            found = storage_code(path.read_text(encoding="utf-8"))
            if found:
                offenders[relative] = found
    assert offenders == {}
