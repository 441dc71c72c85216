"""`paperboy run`: the bot itself, until SIGTERM or Ctrl-C."""

from __future__ import annotations

import logging

import click

from bot.cli.options import database_path, db_option, open_database
from config.settings import load_settings
from db.connection import Target

log = logging.getLogger(__name__)


@click.command()
@click.option("--slack-http", is_flag=True, help="Serve Slack over HTTP instead of Socket Mode.")
@click.option(
    "--port",
    default=3000,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="The port to serve Slack on, with --slack-http.",
)
@db_option
def run(slack_http: bool, port: int, db_path: Target | None) -> None:
    """Run Paperboy: the Slack app and the Discord bot (those whose tokens are set), the
    digest scheduler, the fetching of sources and local: delivery, until SIGTERM or Ctrl-C."""
    import asyncio

    from bot import runner
    from bot.services import Services
    from digests.topics import load_catalog

    settings = load_settings()
    path = database_path(db_path)
    open_database(path, create=True)  # create and migrate once, up front
    services = Services(path, settings, load_catalog())
    parts = runner.components(services, slack_http=slack_http, port=port)
    if len(parts) == 1:
        log.info("No platform token set: running for local: channels only")
    runner.index_in_background(path)  # lookups never wait for a first build of the index
    asyncio.run(runner.run(parts))
