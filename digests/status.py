"""The operator's status report (`paperboy status`): the paper store, the sources, and each
channel's topics, schedule, deliveries and failed digest builds."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from config.settings import Settings
from db import processes
from db.channels import all_channels
from db.digests import failures
from db.errors import StorageError
from db.papers import count_papers, last_ingest
from db.sources import list_sources
from db.store import Store
from digests import semantic
from digests.channels import parse_channel
from digests.commands import Context, handle
from digests.ingest.progress import arrivals, unfinished_note
from digests.render.text import reply_text
from digests.sources.listing import describe

log = logging.getLogger(__name__)


def report(
    db: Store, settings: Settings, now: datetime, context_for: Callable[[str], Context]
) -> Iterator[str]:
    """The whole report, as the texts to print in turn: the store and the sources, then
    each channel's status (one text, after a blank line). `context_for(channel)` is the
    Context its status command runs in."""
    ingest = last_ingest(db)
    yield f"Papers: {count_papers(db)}; {arrivals(db, ingest)}."
    if note := unfinished_note(ingest):  # a chunked ingest that stopped part-way
        yield note
    yield semantic.status_line(db)
    yield from source_lines(db, settings, now)
    yield from process_lines(db, settings)
    rows = all_channels(db)
    if not rows:
        yield 'No channels yet. Try: paperboy chat --channel local:lab "subscribe offline-rl"'
    for row in rows:
        lines = operator_status(reply_text(handle("status", context_for(row["id"]))), row["id"])
        yield "\n" + "\n".join(lines[0:1] + lines[2:] + build_failures(db, row["id"]))


def channel_report(ctx: Context) -> Iterator[str]:
    """One channel's status in detail, as the texts to print in turn."""
    yield "\n".join(operator_status(reply_text(handle("status", ctx)), ctx.channel))
    yield from build_failures(ctx.db, ctx.channel)


def operator_status(text: str, channel: str) -> list[str]:
    """`/papers status`'s lines for the operator. A personal digest's answer is worded for
    its owner ("Status of your personal digest"): here, where every user's digest is
    listed, its heading names it instead (`slack:T0123/@U0456`)."""
    lines = text.splitlines()
    if lines and parse_channel(channel).personal:
        lines[0] = f"Status of {channel} (a personal digest, sent by direct message):"
    return lines


def source_lines(db: Store, settings: Settings, now: datetime) -> list[str]:
    """Every source's last success and last error."""
    try:
        rows = list_sources(db)
    except StorageError:  # a database from before the table existed
        return []
    if not rows:
        return ["Sources: none (papers come only from files; add one with paperboy sources add)."]
    return ["Sources:", *(f"  {describe(row, now, settings.fetch_cron)}" for row in rows)]


def process_lines(db: Store, settings: Settings) -> list[str]:
    """The `paperboy run` processes sharing a PostgreSQL store: each live one (host, pid,
    role, last heartbeat), which keeps the clock, and those gone since the last day. None
    for a store no process has registered in (SQLite: one process, no heartbeat)."""
    now = processes.database_now(db)  # the clock the heartbeats were stamped with
    stale = timedelta(seconds=settings.clock_ttl_seconds)
    running, gone = processes.live(db, now, stale), processes.gone(db, now, stale)
    if not running and not gone:
        return []
    clock = processes.holder(db, processes.CLOCK, now)
    keeper = next((row for row in running if row["id"] == clock), None)
    where = f"pid {keeper['pid']} on {keeper['host']}" if keeper else "no process (taken in turn)"
    lines = [f"Processes: {len(running)} running; the clock is with {where}."]
    for row in running:
        age = max((now - row["heartbeat_at"]).total_seconds(), 0)
        mark = ", keeps the clock" if row["id"] == clock else ""
        lines.append(
            f"  {row['host']} pid {row['pid']} ({row['role']}): heartbeat {age:.0f} s ago{mark}"
        )
    for row in gone:
        how = "stopped" if row["stopped_at"] else "silent since"
        when = (row["stopped_at"] or row["heartbeat_at"]).strftime("%Y-%m-%d %H:%M:%S UTC")
        lines.append(f"  gone: {row['host']} pid {row['pid']} ({row['role']}), {how} {when}")
    return lines


def build_failures(db: Store, channel: str) -> list[str]:
    """A line for each digest of the channel whose build failed and waits to be retried."""
    try:
        rows = failures(db, channel)
    except StorageError:  # a database from before the table existed
        return []
    return [
        f"Digest build for {str(row['due_at'])[:16].replace('T', ' ')} failed "
        f"{'once' if row['attempts'] == 1 else str(row['attempts']) + ' times'} "
        f"({row['last_error']}); retrying after "
        f"{str(row['next_attempt_at'])[:16].replace('T', ' ')} UTC."
        for row in rows
    ]
