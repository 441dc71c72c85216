"""The issue-13 verbs: `why`, `feedback` (and `feedback reset`), `saved` (and `saved
export`) and `bibtex`.

`why` and `feedback` are about the channel (or, in a personal context, the user's own
digest: answers say so, `digests.wording`); `saved` is about the asking user, found by
`Context.user_key` (the platform's own user id, never the display name): without a key
(an adapter that cannot tell who asks) it says so and reads nothing. Every answer is
ephemeral except a channel's reset, which the channel sees (`feedback --me` and its
reset, on the user's own digest, answer only them: `digests.commands.personal`). Bad
input (an unknown id, a topic the channel does not follow, no user key) gets a clear
message and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlite_utils import Database

from db import channels as channel_store
from db import feedback as feedback_store
from db import saved as saved_store
from db.papers import aliases_of
from digests import bibtex
from digests.channels import parse_channel
from digests.commands.grammar import COMMAND, ME_FLAG, Command
from digests.commands.handlers import (
    Context,
    _following,
    _match_subscription,
    _paper_or_error,
    _subscription_line,
    _topic_label,
)
from digests.commands.replies import Attachment, Reply, error, info
from digests.explain import explain, explanation_lines
from digests.lookup import item_fields
from digests.topics import CUSTOM_PREFIX, custom_slug
from digests.wording import here

log = logging.getLogger(__name__)

SAVED_SHOWN = 20  # papers `saved` lists; the export has them all
FEEDBACK_PAPERS_SHOWN = 5  # papers per topic `feedback` lists
BIBTEX_MIME = "application/x-bibtex"
NO_USER = (
    "I can't tell who you are here, so I can't find your saved papers. "
    "Use `/papers saved` in Slack or Discord, or `paperboy saved --user KEY` on the server."
)


def with_arxiv_id(db: Database, paper: dict[str, Any]) -> dict[str, Any]:
    """The paper with `arxiv_id` from its `arXiv:` alias, when its links do not carry it
    (a paper from a file keeps its arXiv id only as an alias)."""
    if bibtex.paper_arxiv_id(paper):
        return paper
    aliases = aliases_of(db, str(paper["id"]), "arXiv:")
    return paper | {"arxiv_id": aliases[0]} if aliases else paper


def _why(command: Command, ctx: Context) -> Reply:
    found = _paper_or_error(command.args["id"], ctx)
    if isinstance(found, Reply):
        return found
    explained = explain(ctx.db, ctx.channel, found, ctx.catalog)
    head, lines = explanation_lines(explained)
    return info(head, *lines)


def _feedback(command: Command, ctx: Context) -> Reply:
    if command.args.get("action", "").lower() == "reset":
        return _feedback_reset(command, ctx)
    if "topic" in command.args:
        return error(
            f"To clear a topic's feedback: `{COMMAND} feedback reset {command.args['topic'][:40]}`;"
            f" to see all of it: `{COMMAND} feedback`."
        )
    rows = feedback_store.channel_feedback(ctx.db, ctx.channel)
    if not rows:
        return info(
            f"No 👍/👎 {here(ctx.channel, ctx.user).place} yet.",
            "Click 👍 More like this or 👎 Less like this under a digest's papers: the "
            "next digest of that topic learns from them.",
        )
    active = {
        str(row["topic_id"]): row for row in channel_store.active_subscriptions(ctx.db, ctx.channel)
    }
    by_topic: dict[str, dict[str, list[int]]] = {}
    titles: dict[str, str] = {}
    for row in rows:
        votes = by_topic.setdefault(str(row["topic_id"]), {}).setdefault(
            str(row["paper_id"]), [0, 0]
        )
        votes[0 if int(row["vote"]) > 0 else 1] += 1
        titles[str(row["paper_id"])] = str(row["title"] or "(no longer stored)")
    lines: list[str] = []
    for topic_id, papers in by_topic.items():
        up = sum(votes[0] for votes in papers.values())
        down = sum(votes[1] for votes in papers.values())
        label = _label(topic_id, active, ctx)
        lines.append(f"{label}: 👍 {up} · 👎 {down} on {_count(len(papers), 'paper')}")
        # Most telling first: by net votes, then by how many voted.
        ranked = sorted(papers.items(), key=lambda item: (-abs(item[1][0] - item[1][1]), item[0]))
        for paper_id, (p_up, p_down) in ranked[:FEEDBACK_PAPERS_SHOWN]:
            lines.append(f"  👍 {p_up} 👎 {p_down} `{paper_id}` {titles[paper_id]}")
        if len(ranked) > FEEDBACK_PAPERS_SHOWN:
            lines.append(f"  and {len(ranked) - FEEDBACK_PAPERS_SHOWN} more")
    lines.append(
        f"`{COMMAND} why <id>` shows how feedback moved a paper; "
        f"`{_reset_usage(ctx)}` clears a topic's"
        + ("." if parse_channel(ctx.channel).personal else " (managers).")
    )
    return info(f"{here(ctx.channel).owner} feedback, on {_count(len(by_topic), 'topic')}:", *lines)


def _label(topic_id: str, active: dict[str, dict[str, object]], ctx: Context) -> str:
    """`Offline RL (`offline-rl`)`, `"free text"`; a topic the channel no longer follows
    (its feedback stays, unused, until it follows it again or resets it) says so."""
    row = active.get(topic_id)
    if row is not None:
        label = _topic_label(row, ctx.catalog)
        return label if topic_id.startswith(CUSTOM_PREFIX) else f"{label} (`{topic_id}`)"
    topic = ctx.catalog.get(topic_id)
    if topic is not None:
        return f"{topic.label} (`{topic_id}`, no longer followed)"
    text = _custom_text(topic_id, ctx)
    if text is not None:
        return f'"{text}" (no longer followed)'
    return f"`{topic_id}` (no longer followed)"


def _custom_text(topic_id: str, ctx: Context) -> str | None:
    """The free text a `custom:` topic id was made from, if the channel ever followed it
    (its subscription rows keep the text): people know the text, not the slug."""
    if not topic_id.startswith(CUSTOM_PREFIX):
        return None
    texts = channel_store.custom_texts(ctx.db, ctx.channel)
    return next((t for t in texts if custom_slug(t) == topic_id), None)


def _reset_usage(ctx: Context) -> str:
    """`feedback reset`'s usage: with `--me` for the user's own digest, which it then
    clears from any channel (in a channel, without it, the channel's)."""
    me = f" {ME_FLAG}" if parse_channel(ctx.channel).personal else ""
    return f"{COMMAND} feedback reset{me} <topic>"


def _feedback_reset(command: Command, ctx: Context) -> Reply:
    text = command.args.get("topic", "").strip()
    where = here(ctx.channel, ctx.user)
    active = channel_store.active_subscriptions(ctx.db, ctx.channel)
    if not text:
        following = [
            _subscription_line(number, row, ctx.catalog) for number, row in enumerate(active, 1)
        ]
        return error(
            f"Which topic's feedback? Usage: `{_reset_usage(ctx)}`.",
            *([f"{where.subject} follows:", *following] if following else []),
        )
    match = _match_subscription(text, active, ctx.catalog)
    if match is None and (unfollowed := _unfollowed_with_feedback(text, ctx)) is not None:
        match = {"topic_id": unfollowed, "custom_text": _custom_text(unfollowed, ctx)}
    if match is None:
        return error(
            f"{where.subject} does not follow `{text[:60]}`.", *_following(active, ctx.catalog)
        )
    topic_id = str(match["topic_id"])
    label = _topic_label(match, ctx.catalog)
    cleared = feedback_store.reset(ctx.db, ctx.channel, topic_id)
    if not cleared:
        return info(f"There is no feedback on {label} {where.place} to clear.")
    return info(
        f"{where.actor} cleared {where.whose} feedback on {label} ({_count(cleared, 'vote')}).",
        "Its next digest picks papers by the topic's terms alone again.",
        ephemeral=False,
        changed=True,
    )


def _unfollowed_with_feedback(text: str, ctx: Context) -> str | None:
    """The topic id `text` names (an id, a catalog name, or free text) when the channel no
    longer follows it but still has feedback on it: that feedback can be reset too."""
    named = ctx.catalog.by_name(text)
    wanted = {text.lower(), custom_slug(text), *([named.id] if named else [])}
    rows = feedback_store.channel_feedback(ctx.db, ctx.channel)
    return next((str(r["topic_id"]) for r in rows if r["topic_id"] in wanted), None)


def _saved(command: Command, ctx: Context) -> Reply:
    if not ctx.user_key:
        return error(NO_USER)
    if command.args.get("action", "").lower() == "export":
        papers = saved_store.saved_papers(ctx.db, ctx.user_key)
        if not papers:
            return info("You have no saved papers to export. Save one with 🔖 under a digest.")
        text = bibtex.bibtex(with_arxiv_id(ctx.db, paper) for paper in papers)
        return info(
            f"{_count(len(papers), 'saved paper')} as BibTeX (paperboy-saved.bib).",
            attachment=Attachment("paperboy-saved.bib", text, BIBTEX_MIME),
        )
    # Only the papers listed are read: a user may have saved thousands.
    total = saved_store.count_saved(ctx.db, ctx.user_key)
    if not total:
        return info(
            "You have no saved papers yet.",
            "Click 🔖 Save under a paper in a digest; it shows up here, only for you.",
        )
    lines = [
        f"`{paper['id']}` {paper['title']} (saved {str(paper['saved_at'])[:10]})"
        for paper in saved_store.saved_papers(ctx.db, ctx.user_key, SAVED_SHOWN)
    ]
    if total > SAVED_SHOWN:
        lines.append(f"and {total - SAVED_SHOWN} more")
    lines.append(f"`{COMMAND} saved export` gives them all as BibTeX.")
    return info(f"Your {_count(total, 'saved paper')}, newest first:", *lines)


def _bibtex(command: Command, ctx: Context) -> Reply:
    found = _paper_or_error(command.args["id"], ctx)
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


def _count(count: int, noun: str) -> str:
    return f"1 {noun}" if count == 1 else f"{count} {noun}s"


def saved_records(papers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The saved papers as `paperboy saved --format json` prints them: a digest item's
    fields (`digests.lookup.item_fields`), its BibTeX key (the one `--format bibtex` gives
    it: two papers that would share a key both take the long one), when it was saved and
    where."""
    keys = [item.key for item in bibtex.entries(papers)]
    return [
        item_fields(paper)
        | {
            "bibtex_key": key,
            "saved_at": paper.get("saved_at"),
            "saved_from": paper.get("saved_from"),
        }
        for paper, key in zip(papers, keys, strict=True)
    ]


INTERACTIVE_HANDLERS: dict[str, Callable[[Command, Context], Reply]] = {
    "why": _why,
    "feedback": _feedback,
    "saved": _saved,
    "bibtex": _bibtex,
}
