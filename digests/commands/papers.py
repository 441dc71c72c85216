"""Commands about papers: `find`, `show`, `similar`, `bibtex`, and `sources`, where new
papers come from. All only read."""

from __future__ import annotations

import logging

from digests import bibtex, lookup
from digests.commands.context import Context, paper_or_error, plural
from digests.commands.grammar import COMMAND, Command
from digests.commands.registry import handler_for
from digests.commands.saved import BIBTEX_MIME, with_arxiv_id
from digests.replies import Attachment, Reply, info
from digests.similar import similar_papers

log = logging.getLogger(__name__)

FIND_LIMIT = 5


@handler_for("find")
def _find(command: Command, ctx: Context) -> Reply:
    query = command.args["query"]
    parsed = lookup.parse_find(query)
    if parsed.only_excludes():
        return info(
            f"“{query}” only says what to leave out: add what to find, "
            f"as in `{COMMAND} find offline rl -diffusion`."
        )
    if refusal := parsed.too_many():
        return info(refusal[0].upper() + refusal[1:] + ".")
    results = lookup.find(ctx.db, query, FIND_LIMIT, ctx.catalog)
    without = "".join(
        f" {'and' if n else 'without'} “{text}”" for n, text in enumerate(parsed.excluded)
    )
    if not results:
        return info(
            f"No papers match “{parsed.words}”{without}.",
            f"Try fewer or other words, an author's name, or a method name such as "
            f"`{COMMAND} find LoMAP`.",
        )
    # Each item's author line names the author the query matched, past the first three too.
    shown = tuple(
        result | {"authors_line": lookup.short_authors(result["authors"], parsed.words)}
        for result in results
    )
    return info(f"Top {len(results)} for “{parsed.words}”{without}:", papers=shown)


@handler_for("show")
def _show(command: Command, ctx: Context) -> Reply:
    found = paper_or_error(command.args["id"], ctx)
    if isinstance(found, Reply):
        return found
    result = lookup.full_result(found)
    # The title is the notification text; renderers do not repeat it above the paper.
    return info(str(result["title"]), papers=(result,), detail=str(result["abstract_text"]))


@handler_for("similar")
def _similar(command: Command, ctx: Context) -> Reply:
    found = paper_or_error(command.args["id"], ctx)
    if isinstance(found, Reply):
        return found
    # By content (distinctive words of title and abstract), not by name: digests/similar.py.
    hits = similar_papers(ctx.db, found, FIND_LIMIT)
    if not hits:
        return info(f"I found nothing similar to “{found['title']}”.")
    results = tuple(lookup.as_result(hit.paper, hit.score) for hit in hits[:FIND_LIMIT])
    return info(f"Papers similar to “{found['title']}”:", papers=results)


@handler_for("bibtex")
def _bibtex(command: Command, ctx: Context) -> Reply:
    found = paper_or_error(command.args["id"], ctx)
    if isinstance(found, Reply):
        return found
    entry = bibtex.bibtex([with_arxiv_id(ctx.db, found)])
    # One code span per line (renderers show `backticks` as code). An entry holding a
    # backtick (LaTeX's opening quote) cannot be shown so: it comes as a file too.
    lines = entry.rstrip("\n").split("\n")
    attachment = None
    if "`" in entry:
        attachment = Attachment(f"{bibtex.cite_key(found)}.bib", entry, BIBTEX_MIME)
    return info(
        f"BibTeX for “{found['title']}”:",
        *(f"`{line}`" for line in lines),
        attachment=attachment,
    )


@handler_for("sources")
def _sources(command: Command, ctx: Context) -> Reply:
    """The configured sources, read-only (operators add them with `paperboy sources add`)."""
    from db.sources import list_sources
    from digests.sources.listing import describe

    rows = list_sources(ctx.db)
    if not rows:
        return info(
            "No sources yet: papers come only from files. An operator can add one with "
            "`paperboy sources add arxiv:cs.LG`."
        )
    lines = [describe(row, ctx.now, ctx.settings.fetch_cron) for row in rows]
    return info(f"Papers come from {plural(len(rows), 'source')}:", *lines)
