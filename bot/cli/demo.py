"""`paperboy demo`: the bundled papers, a channel following three topics, its digest, in a
database of its own (`PAPERBOY_DEMO_DB`) so that the production store never holds them."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

import click

from bot.cli.options import command_context, database_path, now, open_database
from bot.cli.output import echo
from config.settings import load_settings
from db.connection import Target

log = logging.getLogger(__name__)

DEMO_CHANNEL = "local:demo"
DEMO_TOPICS = ("offline-rl", "rlhf", "llm-reasoning-agents")


@click.command()
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SQLite database file [default: $PAPERBOY_DEMO_DB, else db/demo.db].",
)
def demo(db_path: Target | None) -> None:
    """Load the bundled papers, subscribe local:demo to three topics, print its digest. It
    uses a database of its own, not $PAPERBOY_DB, so `paperboy run` never sees them."""
    from db import channels as channel_store
    from digests.commands import handle
    from digests.digest import build_digest, ensure_channel
    from digests.ingest import ingest_files
    from digests.render.text import digest_text, reply_text
    from digests.samples import sample_paths

    settings = load_settings()
    given = db_path or click.get_current_context().find_root().params.get("db_path")
    path = database_path(db_path) if given else settings.demo_db
    db = open_database(path, create=True)
    summary = ingest_files(db, sample_paths(), now=now())
    echo(f"Bundled sample papers: {summary.describe()}.")
    ctx = command_context(db, DEMO_CHANNEL, "demo", settings)
    ensure_channel(db, DEMO_CHANNEL, settings, ctx.now)
    followed = {row["topic_id"] for row in channel_store.active_subscriptions(db, DEMO_CHANNEL)}
    for topic in DEMO_TOPICS:
        if topic not in followed:
            echo(reply_text(handle(f"subscribe {topic}", ctx)).splitlines()[0])
    # The bundled papers are new only in the week they are loaded: a demo run again later
    # shows them from the archive instead of an empty digest.
    if not (channel_store.get_channel(db, DEMO_CHANNEL) or {}).get("backlog"):
        handle("backlog on", ctx)
    preview = build_digest(
        db, DEMO_CHANNEL, ctx.now, catalog=ctx.catalog, settings=settings, preview=True
    )
    echo()
    echo(digest_text(preview))
    echo()
    db_arg = f"--db {shlex.quote(str(path))}"
    echo(
        f"This was a preview: nothing is marked as sent. Try: paperboy find alpha dpo {db_arg}, "
        f'paperboy chat --channel local:demo "help" {db_arg}.'
    )
