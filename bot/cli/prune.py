"""`paperboy prune`: empty the outbox payloads of messages sent long ago."""

from __future__ import annotations

import logging

import click

from bot.cli.options import db_option, now, open_database
from bot.cli.output import echo
from config.settings import load_settings
from db.connection import Target

log = logging.getLogger(__name__)


@click.command()
@click.option(
    "--days",
    default=None,
    type=click.IntRange(1, 36_500),
    help="Empty the payloads of messages sent more than this many days ago "
    "[default: $PAPERBOY_OUTBOX_KEEP_DAYS, else 30].",
)
@click.option("--dry-run", is_flag=True, help="Say how many, and how many bytes; change nothing.")
@db_option
def prune(days: int | None, dry_run: bool, db_path: Target | None) -> None:
    """Empty the outbox payloads of messages sent long ago (the bot does it once a day)."""
    from datetime import timedelta

    from db import outbox
    from digests.timestamps import stamp

    if days is None:
        days = load_settings().outbox_keep_days
        if not days:
            echo(
                "PAPERBOY_OUTBOX_KEEP_DAYS=0 keeps sent messages forever: nothing pruned "
                "(give --days N to prune anyway)."
            )
            return
    db = open_database(db_path)
    before = stamp(now() - timedelta(days=days))
    when = before[:16].replace("T", " ")
    cut = f"sent more than {days} day{'s' if days != 1 else ''} ago (before {when} UTC)"
    count, size = outbox.prunable(db, before)
    messages = f"{count:,} message{'s' if count != 1 else ''}"
    if not count:
        echo(f"No message {cut} still has its payload: nothing to prune.")
        return
    if dry_run:
        echo(
            f"Would empty the payloads of {messages} {cut}: {megabytes(size)}. "
            "Nothing changed (--dry-run)."
        )
        return
    pruned = outbox.prune_sent(db, before)
    if pruned != count:  # the bot sent or pruned some meanwhile
        messages = f"{pruned:,} message{'s' if pruned != 1 else ''}"
    echo(
        f"Emptied the payloads of {messages} {cut}: {megabytes(size)} free for "
        'the database to reuse (the file keeps its size: README, "Disk space", says how to '
        "shrink it)."
    )


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"
