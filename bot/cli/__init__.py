"""The `paperboy` command line: the group `main`, and a module per command's subject.

Every command takes `--db PATH`; otherwise `PAPERBOY_DB`; otherwise `db/paperboy.db`.
Errors are one line on stderr, never a stack trace (`bot.cli.output`).
"""

from __future__ import annotations

import logging

import click

# A command imports what it needs when it runs, so that `paperboy find` does not pay for
# `paperboy run`; tests/bot/cli/test_startup.py checks that `import bot.cli` stays light.
from bot.cli import chat, demo, digest, ingest, lookup, prune, run, sources, status
from bot.cli.options import DATABASE, DB_HELP
from bot.cli.output import PaperboyGroup
from db.connection import Target

log = logging.getLogger(__name__)


@click.group(cls=PaperboyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default=None,
    help="How much to log on stderr [default: info for run, warning otherwise].",
)
@click.option("--log-json", is_flag=True, help="Log JSON lines, for log collectors.")
@click.option("--db", "db_path", type=DATABASE, default=None, help=DB_HELP)
@click.pass_context
def main(ctx: click.Context, log_level: str | None, log_json: bool, db_path: Target | None) -> None:
    """Paperboy: research-paper digests (weekly, daily or on weekdays) and paper lookups for
    Slack and Discord."""
    from bot.logs import configure

    default = "info" if ctx.invoked_subcommand == "run" else "warning"
    configure(log_level or default, as_json=log_json)


for command in (
    chat.chat,
    demo.demo,
    digest.digest,
    ingest.ingest,
    lookup.embed,
    lookup.find,
    lookup.saved,
    lookup.show,
    prune.prune,
    run.run,
    sources.fetch,
    sources.sources,
    status.status,
):
    main.add_command(command)
