"""`paperboy status`: the operator's view of the store, the sources and every channel."""

from __future__ import annotations

import logging

import click

from bot.cli.options import cli_user, command_context, db_option, now, open_database
from bot.cli.output import echo
from config.settings import load_settings
from db.connection import Target

log = logging.getLogger(__name__)


@click.command()
@click.option("--channel", default=None, help="One channel in detail; all of them otherwise.")
@db_option
def status(channel: str | None, db_path: Target | None) -> None:
    """Show the paper store, and each channel's topics, schedule and deliveries."""
    from digests import status as report

    settings = load_settings()
    db = open_database(db_path)
    if channel:
        texts = report.channel_report(command_context(db, channel, cli_user(), settings))
    else:
        texts = report.report(
            db, settings, now(), lambda row: command_context(db, row, cli_user(), settings)
        )
    for text in texts:
        echo(text)
