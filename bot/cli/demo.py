"""`paperboy demo`: the bundled papers, a channel following three topics, its digest."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from bot.cli.options import command_context, db_option, now, open_database
from bot.cli.output import echo
from config.settings import load_settings

log = logging.getLogger(__name__)

DEMO_CHANNEL = "local:demo"
DEMO_TOPICS = ("offline-rl", "rlhf", "llm-reasoning-agents")


@click.command()
@db_option
def demo(db_path: Path | None) -> None:
    """Load the bundled papers, subscribe local:demo to three topics, print its digest."""
    from db import channels as channel_store
    from digests.commands import handle
    from digests.digest import build_digest, ensure_channel
    from digests.ingest import ingest_files
    from digests.render.text import digest_text, reply_text
    from digests.samples import sample_paths

    settings = load_settings()
    db = open_database(db_path, create=True)
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
    echo(
        "This was a preview: nothing is marked as sent. Try: paperboy find alpha dpo, "
        'paperboy chat --channel local:demo "help".'
    )
