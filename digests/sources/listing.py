"""What a source's row says to a person: last success, last error, papers added, next
fetch. Shared by `paperboy sources list`, `paperboy status` and `/papers sources`."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from apscheduler.triggers.cron import CronTrigger

log = logging.getLogger(__name__)


def shown_name(name: str) -> str:
    """A source's name safe to show: a feed URL's query string (maybe a token) is cut."""
    if name.startswith("feed:") and "?" in name:
        return name.split("?", 1)[0] + "?…"
    return name


def next_fetch(row: dict[str, Any], now: datetime, default_cron: str) -> datetime | None:
    """When `paperboy run` next fetches the source: its schedule's next fire, or sooner
    its retry after a failure (the backoff)."""
    cron = row.get("cron") or default_cron
    try:
        trigger = CronTrigger.from_crontab(cron, timezone=UTC)
    except ValueError:
        return None
    scheduled: datetime | None = trigger.get_next_fire_time(None, now)
    retry = row.get("next_try_at")
    if retry:
        at = max(datetime.fromisoformat(str(retry)), now)
        return at if scheduled is None or at < scheduled else scheduled
    return scheduled


def _minute(value: Any) -> str:
    return str(value)[:16].replace("T", " ") + " UTC" if value else "never"


def summary(row: dict[str, Any], now: datetime, default_cron: str) -> dict[str, Any]:
    """A source as a JSON object (what `sources list --json` prints)."""
    upcoming = next_fetch(row, now, default_cron)
    return {
        "name": shown_name(str(row["name"])),
        "kind": row["kind"],
        "schedule": row.get("cron") or default_cron,
        "added_at": row["added_at"],
        "last_success_at": row.get("last_success_at"),
        "last_error_at": row.get("last_error_at"),
        "last_error": row.get("last_error"),
        "consecutive_failures": row.get("consecutive_failures") or 0,
        "papers_added": row.get("papers_added") or 0,
        "last_fetch": {
            "read": row.get("last_read"),
            "added": row.get("last_added"),
            "merged": row.get("last_merged"),
        },
        "next_fetch_at": upcoming.isoformat(timespec="seconds") if upcoming else None,
        "fetching": bool(row.get("fetching_by")),
    }


def describe(row: dict[str, Any], now: datetime, default_cron: str) -> str:
    """One line: "arxiv:cs.LG: last success 2026-11-30 05:00 UTC, 412 papers added;
    next fetch 2026-12-01 05:00 UTC", plus the last error when the source is failing."""
    info = summary(row, now, default_cron)
    line = (
        f"{info['name']}: last success {_minute(info['last_success_at'])}, "
        f"{info['papers_added']} papers added; next fetch {_minute(info['next_fetch_at'])}"
    )
    if info["last_error"]:
        failing = info["consecutive_failures"]
        when = _minute(info["last_error_at"])
        line += f"; last error {when}: {info['last_error']}"
        if failing:
            line += f" ({failing} failure{'s' if failing != 1 else ''} in a row)"
    if info["fetching"]:
        line += "; fetching now"
    return line
