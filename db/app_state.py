"""Small facts the runtime remembers between runs (e.g. which commands were synced)."""

from __future__ import annotations

import logging

from sqlite_utils import Database

log = logging.getLogger(__name__)


def get_state(db: Database, key: str) -> str | None:
    rows = list(db.query("select value from app_state where key = ?", [key]))
    return str(rows[0]["value"]) if rows else None


def set_state(db: Database, key: str, value: str, now: str) -> None:
    db.table("app_state").upsert({"key": key, "value": value, "updated_at": now}, pk="key")
