"""Small facts the runtime remembers between runs (e.g. which commands were synced)."""

from __future__ import annotations

import logging

from db.store import Store

log = logging.getLogger(__name__)


def get_state(db: Store, key: str) -> str | None:
    rows = list(db.query("select value from app_state where key = ?", [key]))
    return str(rows[0]["value"]) if rows else None


def set_state(db: Store, key: str, value: str, now: str) -> None:
    db.upsert("app_state", {"key": key, "value": value, "updated_at": now}, ["key"])
