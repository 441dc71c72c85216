"""`why` (how a paper was picked), `feedback` (the 👍/👎 per topic) and `feedback reset`,
for the channel or, on a personal reference, the user's own digest (`digests.wording`)."""

from __future__ import annotations

import logging
import re

from db import channels as channel_store
from db import digests as digest_store
from db import feedback as feedback_store
from digests.channels import parse_channel
from digests.commands.context import (
    Context,
    following,
    match_subscription,
    paper_or_error,
    plural,
    subscription_line,
    topic_label,
)
from digests.commands.grammar import COMMAND, ME_FLAG, Command
from digests.commands.registry import handler_for
from digests.digest import build_digest
from digests.explain import explain, explanation_lines, shown_items
from digests.render.view import grouped
from digests.replies import Reply, error, info
from digests.schedule import period_label
from digests.topics import CUSTOM_PREFIX, custom_slug
from digests.wording import here

log = logging.getLogger(__name__)

FEEDBACK_PAPERS_SHOWN = 5  # papers per topic `feedback` lists
# `why 3`, `why #3`: a paper by the number its digest shows (no paper id is so short).
_DIGEST_NUMBER = re.compile(r"#?([0-9]{1,4})")


@handler_for("why")
def _why(command: Command, ctx: Context) -> Reply:
    ref = command.args["id"]
    numbered = _numbered(ref, ctx) if _DIGEST_NUMBER.fullmatch(ref) else None
    if isinstance(numbered, Reply):
        return numbered
    found = paper_or_error(numbered[0] if numbered else ref, ctx)
    if isinstance(found, Reply):
        return found
    explained = explain(ctx.db, ctx.channel, found, ctx.catalog)
    head, lines = explanation_lines(explained)
    return info(head, *(numbered[1:] if numbered else ()), *lines)


def _numbered(ref: str, ctx: Context) -> tuple[str, ...] | Reply:
    """The paper id of number `ref` (`3`, `#3`) in the digest people saw last: the latest
    one built for `ctx.channel`, or before any, the preview `digest` shows (then with a
    line saying so: the explanation names a built one). A number it does not have is an
    error naming the ones it has."""
    number = int(ref.lstrip("#"))
    where = here(ctx.channel, ctx.user)
    last = digest_store.last_digest(ctx.db, ctx.channel, ctx.stamp)
    said: tuple[str, ...] = ()
    if last is not None:
        ids = [str(item["paper_id"]) for item in shown_items(last)]
        which = f"{where.whose} last digest ({period_label(str(last['week']))})"
    elif not channel_store.active_subscriptions(ctx.db, ctx.channel):
        return error(
            f"{where.subject} follows no topics, so it has no digest whose #{number} I could "
            f"explain; give a paper id instead, e.g. `{COMMAND} why p380c62ca5bf30379`."
        )
    else:
        preview = build_digest(
            ctx.db, ctx.channel, ctx.now, catalog=ctx.catalog, settings=ctx.settings, preview=True
        )
        ids = [str(item.paper["id"]) for _, item in grouped(preview)]
        which = f"the preview of {where.whose} digest for {preview.period_label}"
        said = (f"#{number} in {which} (none has been sent yet).",)
    if 1 <= number <= len(ids):
        return (ids[number - 1], *said)
    has = f"numbers 1 to {len(ids)}" if len(ids) > 1 else "only #1" if ids else "no papers"
    return error(
        f"There is no #{number} in {which}: it has {has}. "
        f"Or give a paper id, e.g. `{COMMAND} why p380c62ca5bf30379`."
    )


@handler_for("feedback")
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
        lines.append(f"{label}: 👍 {up} · 👎 {down} on {plural(len(papers), 'paper')}")
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
    return info(f"{here(ctx.channel).owner} feedback, on {plural(len(by_topic), 'topic')}:", *lines)


def _label(topic_id: str, active: dict[str, dict[str, object]], ctx: Context) -> str:
    """`Offline RL (`offline-rl`)`, `"free text"`; a topic the channel no longer follows
    (its feedback stays, unused, until it follows it again or resets it) says so."""
    row = active.get(topic_id)
    if row is not None:
        label = topic_label(row, ctx.catalog)
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
        numbered = [
            subscription_line(number, row, ctx.catalog) for number, row in enumerate(active, 1)
        ]
        return error(
            f"Which topic's feedback? Usage: `{_reset_usage(ctx)}`.",
            *([f"{where.subject} follows:", *numbered] if numbered else []),
        )
    match = match_subscription(text, active, ctx.catalog)
    if match is None and (unfollowed := _unfollowed_with_feedback(text, ctx)) is not None:
        match = {"topic_id": unfollowed, "custom_text": _custom_text(unfollowed, ctx)}
    if match is None:
        return error(
            f"{where.subject} does not follow `{text[:60]}`.", *following(active, ctx.catalog)
        )
    topic_id = str(match["topic_id"])
    label = topic_label(match, ctx.catalog)
    cleared = feedback_store.reset(ctx.db, ctx.channel, topic_id)
    if not cleared:
        return info(f"There is no feedback on {label} {where.place} to clear.")
    return info(
        f"{where.actor} cleared {where.whose} feedback on {label} ({plural(cleared, 'vote')}).",
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
