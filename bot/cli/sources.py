"""`paperboy sources add|list|remove` and `paperboy fetch`: the sources `paperboy run`
fetches new papers from, and fetching them now."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

import click

from bot.cli.options import database_path, db_option, now, open_database
from bot.cli.output import UserError, echo, json_text
from config.settings import load_settings
from db.connection import Target

log = logging.getLogger(__name__)


@click.group()
def sources() -> None:
    """The sources `paperboy run` fetches new papers from (arXiv, OpenReview, feeds)."""


@sources.command("add")
@click.argument("name")
@click.option("--cron", default=None, help='Its own schedule, crontab in UTC: "0 */6 * * *".')
@click.option(
    "--no-check", is_flag=True, help="Add a feed or venue without reading it first (offline)."
)
@db_option
def sources_add(name: str, cron: str | None, no_check: bool, db_path: Target | None) -> None:
    """Add a source: arxiv:CATEGORY, arxiv:"search words", openreview:VENUE_ID, feed:URL.

    Examples: arxiv:cs.LG, openreview:ICLR.cc/2025/Conference. A feed or venue is read
    once first (an unreachable URL or a page that is no feed is refused). It is fetched
    by `paperboy run` on its schedule, or now with `paperboy fetch NAME`.
    """
    import asyncio

    from db.fresh import NewDatabase
    from digests.sources import manage
    from digests.sources.listing import shown_name
    from digests.sources.spec import parse_source

    spec = parse_source(name)  # a malformed name fails here, before any database exists
    cron = check_cron(cron) if cron is not None else None
    notice = None
    if spec.kind in ("feed", "openreview") and not no_check:
        from bot.fetching import FetchError
        from bot.fetching.store import check_source, fetch_config

        try:
            found = asyncio.run(check_source(spec, fetch_config(load_settings()), now()))
        except FetchError as exc:
            raise UserError(f"{exc}; nothing added (--no-check adds it unread)") from None
        if not found:
            notice = f"Note: {shown_name(spec.name)} has no papers yet (is the name right?)."
    new = NewDatabase(database_path(db_path))
    db = open_database(db_path, create=True)
    try:
        existing = manage.add(db, spec, cron, now())
    except BaseException:
        new.discard(db)
        raise
    if existing is not None:
        echo(
            f"{shown_name(spec.name)} is already a source (added "
            f"{str(existing.get('added_at', ''))[:10]}); nothing changed."
        )
        return
    when = cron or load_settings().fetch_cron
    if notice:
        echo(notice)
    echo(
        f"Added {shown_name(spec.name)}. paperboy run fetches it on schedule ({when}, UTC); "
        f"fetch it now with: paperboy fetch '{shown_name(spec.name)}'"
    )


def check_cron(cron: str) -> str:
    """The `--cron` schedule, normalized; a UserError when it is no crontab line."""
    from config.settings import parse_cron

    try:
        return parse_cron(cron)
    except ValueError as exc:
        raise UserError(f"--cron {cron!r} is not valid: {exc}") from None


@sources.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@db_option
def sources_list(as_json: bool, db_path: Target | None) -> None:
    """Each source: last success, last error, papers added, next fetch."""
    from db.sources import list_sources
    from digests.sources.listing import describe, summary

    settings = load_settings()
    rows = list_sources(open_database(db_path))
    moment = now()
    if as_json:
        echo(json_text([summary(row, moment, settings.fetch_cron) for row in rows]))
    elif not rows:
        echo("No sources yet. Add one: paperboy sources add arxiv:cs.LG")
    else:
        for row in rows:
            echo(describe(row, moment, settings.fetch_cron))


@sources.command("remove")
@click.argument("name")
@db_option
def sources_remove(name: str, db_path: Target | None) -> None:
    """Stop fetching a source (the papers it brought stay)."""
    from digests.sources import manage
    from digests.sources.listing import shown_name

    canonical, removed = manage.remove(open_database(db_path), name)
    if not removed:
        raise UserError(
            f"no source {shown_name(canonical)!r}; see paperboy sources list. Nothing changed"
        )
    echo(f"Removed {shown_name(canonical)}; the papers it brought stay.")


@click.command()
@click.argument("names", nargs=-1)
@click.option("--since", default=None, help="arXiv: fetch back to this date (YYYY-MM-DD).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object a source.")
@db_option
def fetch(names: tuple[str, ...], since: str | None, as_json: bool, db_path: Target | None) -> None:
    """Fetch new papers now from NAMES (all sources without NAMES), one line per source.

    Exit status 0 when every source succeeded, 1 when any failed (the papers of the
    sources that succeeded are stored all the same).
    """
    import asyncio

    from bot.fetching.store import SourceFetcher, fetch_config
    from bot.services import Services
    from db.sources import list_sources
    from digests.ingest.decode import Limits
    from digests.sources.listing import shown_name
    from digests.sources.manage import stored_name
    from digests.topics import load_catalog

    settings = load_settings()
    start = since_date(since)
    path = database_path(db_path)
    db = open_database(db_path)
    known = {row["name"] for row in list_sources(db)}
    wanted = [stored_name(name, known) for name in names]
    missing = [name for name in wanted if name not in known]
    if missing:
        raise UserError(
            f"no source {shown_name(missing[0])!r}; add it first: "
            f"paperboy sources add {shown_name(missing[0])}"
        )
    if not known:
        echo("No sources yet. Add one: paperboy sources add arxiv:cs.LG")
        return
    services = Services(path, settings, load_catalog())
    fetcher = SourceFetcher(
        services.db,
        fetch_config(settings),
        clock=now,
        limits=Limits.from_kb(settings.max_record_kb),
        failure_level=logging.INFO,  # the line below says it
    )
    outcomes = asyncio.run(fetcher.fetch(wanted or None, since=start))
    if as_json:
        echo(json_text([outcome.as_json() for outcome in outcomes]))
    else:
        for outcome in outcomes:
            echo(outcome.describe())
    if any(outcome.failed for outcome in outcomes):
        sys.exit(1)


def since_date(value: str | None) -> datetime | None:
    """`--since YYYY-MM-DD` as midnight UTC; a UserError for anything else."""
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise UserError(f"--since {value!r} is not a date; use YYYY-MM-DD") from None
