"""`paperboy run`: the bot itself, until SIGTERM or Ctrl-C."""

from __future__ import annotations

import logging

import click

from bot.cli.options import database_path, db_option, open_database
from bot.cli.output import UserError
from config.settings import SettingsError, load_settings
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
@click.option(
    "--role",
    type=click.Choice(["all", "web", "worker"]),
    default="all",
    show_default=True,
    help="With PostgreSQL: web answers commands only, worker builds and delivers only.",
)
@db_option
def run(slack_http: bool, port: int, role: str, db_path: Target | None) -> None:
    """Run Paperboy: the Slack app and the Discord bot (those whose tokens are set), the
    digest scheduler, the fetching of sources and local: delivery, until SIGTERM or Ctrl-C.
    With PostgreSQL, run it on as many machines as you like: one process at a time keeps
    the clock (docs/explanation/scaling.md)."""
    import asyncio

    from bot import runner
    from bot.services import Services
    from digests.topics import load_catalog

    settings = load_settings()
    path = database_path(db_path)
    open_database(path, create=True)  # create and migrate once, up front
    services = Services(path, settings, load_catalog())
    try:
        parts = runner.components(services, slack_http=slack_http, port=port, role=role)
    except SettingsError as exc:
        raise UserError(str(exc)) from None
    if len(parts) == 1:
        log.info("No platform token set: running for local: channels only")
    runner.index_in_background(path)  # lookups never wait for a first build of the index
    asyncio.run(runner.run(parts))
