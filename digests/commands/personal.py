"""`--me`: the commands that act on a user's own digest, delivered as a direct message.

A personal digest is a channel whose reference names the user (`digests.channels`), taken
from the user key the adapter gives (`Context.user_key`): a user can only reach their own
digest, so anyone may change it, and every answer is ephemeral.
"""

from __future__ import annotations

import dataclasses
import logging

from db import channels as channel_store
from db import outbox
from digests.channels import personal_channel
from digests.commands.context import (
    MAX_SUBSCRIPTIONS,
    Context,
    following,
    match_subscription,
    plural,
    resolve_topic,
    schedule_line,
    store_schedule,
    subscribed_schedule_lines,
    subscription_line,
    taken_as,
    topic_label,
)
from digests.commands.grammar import COMMAND, ME_FLAG, Command
from digests.commands.registry import HANDLERS, personal_handler_for
from digests.digest import channel_schedule, ensure_channel, schedule_of
from digests.replies import Reply, error, info

log = logging.getLogger(__name__)

NO_DM = (
    "Personal digests come as direct messages in Slack or Discord; "
    "there is nobody to send one to here."
)
WHERE = "your personal digest (a direct message from me)"


def _personal(ctx: Context) -> Context | Reply:
    """The context of the user's own digest, or why there is none."""
    channel = personal_channel(ctx.user_key or "")
    if channel is None:
        return error(NO_DM)
    return dataclasses.replace(ctx, channel=channel)


def _changed(text: str, *lines: str) -> Reply:
    """A change to the user's own digest: told to them only. `changed` lets the adapter
    tell the scheduler (which re-reads every channel's schedule)."""
    return info(text, *lines, ephemeral=True, changed=True)


@personal_handler_for("subscribe")
def _subscribe(command: Command, ctx: Context) -> Reply:
    topic = resolve_topic(command, ctx)
    if isinstance(topic, Reply):
        return topic
    own = _personal(ctx)
    if isinstance(own, Reply):
        return own
    row = ensure_channel(own.db, own.channel, own.settings, own.now)
    active = channel_store.active_subscriptions(own.db, own.channel)
    if any(followed["topic_id"] == topic.id for followed in active):
        return info(f"You already follow {topic.label} in {WHERE}.")
    if len(active) >= MAX_SUBSCRIPTIONS:
        return error(
            f"You follow {len(active)} topics, the most a digest can. Unsubscribe from one "
            f"first: `{COMMAND} unsubscribe {ME_FLAG} <topic>`."
        )
    channel_store.add_subscription(
        own.db, own.channel, topic.id, topic.custom_text, own.user, own.stamp
    )
    what = topic.label if topic.is_custom else f"{topic.label} (`{topic.id}`)"
    log.info("%s follows %s in %s", own.user, topic.id, own.channel)
    return _changed(
        f"You now follow {what} in {WHERE}.",
        *taken_as(command, topic, own),
        *subscribed_schedule_lines(row, bool(active), schedule_of(row), own, me=True),
    )


@personal_handler_for("unsubscribe")
def _unsubscribe(command: Command, ctx: Context) -> Reply:
    own = _personal(ctx)
    if isinstance(own, Reply):
        return own
    text = command.args["topic"].strip()
    active = channel_store.active_subscriptions(own.db, own.channel)
    match = match_subscription(text, active, own.catalog)
    if match is None:
        return error(
            f"Your personal digest does not follow `{text[:60]}`.",
            *following(active, own.catalog),
        )
    channel_store.remove_subscription(own.db, int(match["id"]), own.user, own.stamp)
    left = len(active) - 1
    return _changed(
        f"You no longer follow {topic_label(match, own.catalog)} in {WHERE}.",
        *([] if left else ["It follows nothing now, so no more digests come."]),
    )


@personal_handler_for("list")
def _list(command: Command, ctx: Context) -> Reply:
    own = _personal(ctx)
    if isinstance(own, Reply):
        return own
    row = channel_store.get_channel(own.db, own.channel) or {}
    active = channel_store.active_subscriptions(own.db, own.channel)
    if not active:
        return info(
            "Your personal digest follows no topics.",
            f"Follow one for yourself with `{COMMAND} subscribe {ME_FLAG} offline-rl`; "
            "it comes as a direct message from me.",
        )
    schedule = channel_schedule(own.db, own.channel, own.settings, own.now) if row else None
    lines = [subscription_line(number, r, own.catalog) for number, r in enumerate(active, 1)]
    if schedule is not None:
        lines.append(schedule_line(schedule, own.now))
    if row.get("paused"):
        lines.append(
            f"Paused: {row.get('paused_reason')}. Let me send you direct messages, then "
            f"`{COMMAND} resume {ME_FLAG}`."
        )
    return info(f"Your personal digest follows {plural(len(active), 'topic')}:", *lines)


@personal_handler_for("schedule")
def _schedule(command: Command, ctx: Context) -> Reply:
    own = _personal(ctx)
    if isinstance(own, Reply):
        return own
    schedule = store_schedule(command, own)
    if isinstance(schedule, Reply):
        return schedule
    return _changed(
        f"Your personal digest now comes {schedule.describe()}.", schedule_line(schedule, own.now)
    )


@personal_handler_for("resume")
def _resume(command: Command, ctx: Context) -> Reply:
    own = _personal(ctx)
    if isinstance(own, Reply):
        return own
    row = channel_store.get_channel(own.db, own.channel)
    if not row or not row.get("paused"):
        return info("Your personal digest is not paused.")
    channel_store.set_paused(own.db, own.channel, None, own.stamp)
    outbox.resume_channel(own.db, own.channel)
    return _changed(
        f"Your personal digest is on again (it was paused: {row.get('paused_reason')}).",
        "Anything held goes out within a minute.",
    )


# As the channel's: `digest` a preview (nothing recorded or sent); `status` names "your
# personal digest", never its reference; `backlog --me on`; `feedback --me` and `feedback
# reset --me <topic>`, which clears only theirs; `why --me <id>`: the user's own 👍/👎.
@personal_handler_for("digest", "status", "backlog", "feedback", "why")
def _on_own(command: Command, ctx: Context) -> Reply:
    """The verb's channel handler run on the user's own digest (`_personal`), from any
    channel and from Discord, which has no DM commands; worded for it by `digests.wording`.
    Only the user is told: `handle` makes every `--me` answer ephemeral."""
    own = _personal(ctx)
    if isinstance(own, Reply):
        return own
    return HANDLERS[command.verb.name](command, own)
