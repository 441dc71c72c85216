"""Buttons on digest items (👍 `VOTE_UP`, 👎 `VOTE_DOWN`, 🔖 `SAVE`): the action codec and
what a click does. Platform-neutral: Slack sends the item reference back as a button's
`value`, Discord in a `custom_id`; `apply_action` trusts nothing in either."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime

from db import channels as channel_store
from db import digests as digest_store
from db import feedback, saved
from db.store import Store
from digests.timestamps import stamp
from digests.topics import CUSTOM_PREFIX

log = logging.getLogger(__name__)

VOTE_UP = "paperboy_up"
VOTE_DOWN = "paperboy_down"
SAVE = "paperboy_save"
ACTIONS = (VOTE_UP, VOTE_DOWN, SAVE)
VOTES = {VOTE_UP: 1, VOTE_DOWN: -1}
# Discord custom ids: "pb:" + the short name + ":" + the item reference.
SHORT = {VOTE_UP: "up", VOTE_DOWN: "down", SAVE: "save"}
_BY_SHORT = {short: action for action, short in SHORT.items()}
CUSTOM_ID_PREFIX = "pb:"

# A digest id is SQLite's rowid, positive and below 2^63: at most 18 digits keeps every
# accepted id inside it (a longer one would overflow SQLite's integer and fail there).
_DIGEST_ID = r"[1-9][0-9]{0,17}"
# Paper ids are "p" + 16 hex digits (10 in older stores); allow any short ASCII word so a
# renamed id scheme keeps working. Membership in the digest is what really checks it.
_PAPER_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}"
ITEM_REF = re.compile(rf"(?P<digest>{_DIGEST_ID}):(?P<paper>{_PAPER_ID})", re.ASCII)
# For discord.py's DynamicItem(template=...): the whole custom id, with named groups.
CUSTOM_ID_TEMPLATE = rf"pb:(?P<short>up|down|save):(?P<ref>{_DIGEST_ID}:{_PAPER_ID})"
_CUSTOM_ID = re.compile(CUSTOM_ID_TEMPLATE, re.ASCII)
MAX_VALUE = 100  # longer than any value Paperboy writes (Discord allows 100 characters)
_USER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)
_USER_KEY = re.compile(
    r"(?:slack:[A-Z0-9]{2,32}/[UW][A-Z0-9]{2,32}|discord:[0-9]{5,25}"
    r"|local:[A-Za-z0-9][A-Za-z0-9._-]{0,63})",
    re.ASCII,
)


class ActionError(ValueError):
    """A button's value or id is not one Paperboy wrote; the message is for the user."""


@dataclass(frozen=True)
class ActionResult:
    """What a click did: `text` for the clicking user (ephemeral), `error` when nothing
    was done, `changed` when something was stored, the item's `paper_id`, and its new
    (👍, 👎) `counts` in the channel for the message update (None on an error)."""

    text: str
    error: bool
    changed: bool
    paper_id: str | None
    counts: tuple[int, int] | None


def user_key(platform: str, team: str | None, user_id: str) -> str:
    """The key of a user's saved list: `slack:T0123/U0456` (a Slack user belongs to a
    workspace), `discord:123456789012345678` (Discord users are global: `team` is
    ignored), `local:NAME`. Raises ValueError when the parts do not make a valid key."""
    if platform == "slack":
        key = f"slack:{team}/{user_id}"
    elif platform in ("discord", "local"):
        key = f"{platform}:{user_id}"
    else:
        raise ValueError(f"no user keys on platform {platform!r}")
    if not _USER_KEY.fullmatch(key):
        raise ValueError(f"{key!r} is not a user key")
    return key


def item_ref(digest_id: int, paper_id: str) -> str:
    """The reference a button carries to its item: "123:p380c62ca5bf30379"."""
    ref = f"{digest_id}:{paper_id}"
    if not ITEM_REF.fullmatch(ref):
        raise ValueError(f"no item reference for digest {digest_id!r}, paper {paper_id!r}")
    return ref


def parse_item_ref(value: object) -> tuple[int, str]:
    """(digest id, paper id) from a button's value; ActionError when it is not one
    Paperboy wrote (any type, length or character is checked before it is read)."""
    if not isinstance(value, str) or len(value) > MAX_VALUE:
        raise ActionError("That button is not one of Paperboy's.")
    match = ITEM_REF.fullmatch(value)
    if match is None:
        raise ActionError("That button is not one of Paperboy's.")
    return int(match.group("digest")), match.group("paper")


def custom_id(action: str, digest_id: int, paper_id: str) -> str:
    """A Discord button's custom id: "pb:up:123:p380c62ca5bf30379" (at most 68 characters)."""
    if action not in SHORT:
        raise ValueError(f"no button for action {action!r}")
    return f"{CUSTOM_ID_PREFIX}{SHORT[action]}:{item_ref(digest_id, paper_id)}"


def parse_custom_id(text: object) -> tuple[str, str] | None:
    """(action id, item reference) of a Discord custom id Paperboy wrote, to pass to
    `apply_action`; None for anything else (another bot's id, a forged or overlong one)."""
    if not isinstance(text, str) or len(text) > MAX_VALUE:
        return None
    match = _CUSTOM_ID.fullmatch(text)
    if match is None:
        return None
    return _BY_SHORT[match.group("short")], match.group("ref")


def _failure(text: str) -> ActionResult:
    return ActionResult(text=text, error=True, changed=False, paper_id=None, counts=None)


def apply_action(
    db: Store,
    *,
    channel: str,
    user: str,
    user_key: str,
    action: str,
    value: object,
    now: datetime,
) -> ActionResult:
    """Apply a click on a digest item's button in `channel` (the channel reference of
    the message the button is on) by `user` (the platform user id) whose saved list is
    `user_key`. `action` is `VOTE_UP`, `VOTE_DOWN` or `SAVE`; `value` the button's item
    reference.

    Strict: an unknown action, a malformed value, user or user key, a digest that does
    not exist or is another channel's, a paper not in that digest: `error=True`, a
    one-line text, and nothing written. Never raises for bad input.

    A vote goes to the item's topic: the first of the topics it was picked for that the
    channel still follows, else the first of them. A user's repeated vote changes
    nothing (`changed=False`); the other vote replaces theirs. A save adds the paper to
    the user's list (already there: `changed=False`)."""
    if not isinstance(action, str) or action not in ACTIONS:
        return _failure("That button is not one of Paperboy's.")
    if not isinstance(user, str) or not _USER.fullmatch(user):
        return _failure("Paperboy could not tell who clicked that button.")
    if action == SAVE and (not isinstance(user_key, str) or not _USER_KEY.fullmatch(user_key)):
        return _failure("Paperboy could not tell who clicked that button.")
    try:
        digest_id, paper_id = parse_item_ref(value)
    except ActionError as exc:
        log.info("button from %s in %s refused: malformed value", user, channel)
        return _failure(str(exc))
    at = stamp(now)
    with db.write():
        # Checked and written in one transaction: a digest is never deleted, but its
        # channel's subscriptions may change between the read and the write.
        owner = digest_store.digest_channel(db, digest_id)
        if owner is None:
            return _failure("That digest is not in Paperboy's records.")
        if owner != channel:
            log.info("button of %s's digest %d clicked in %s: refused", owner, digest_id, channel)
            return _failure("That button belongs to another channel's digest.")
        item = digest_store.item_topics(db, digest_id, paper_id)
        if item is None:
            return _failure("That paper is not in this digest.")
        if action == SAVE:
            changed = saved.save(db, user_key, paper_id, at, channel)
            text = "🔖 Saved to your list." if changed else "🔖 Already in your saved papers."
        else:
            topic_id = _topic_of(db, channel, item["topics"])
            if topic_id is None:
                return _failure("That item has no topic to learn from.")
            vote = VOTES[action]
            changed = feedback.record_vote(
                db, channel, topic_id, paper_id, user, vote, digest_id, at
            )
            name = _topic_name(db, channel, topic_id)
            if not changed:
                text = f"{'👍' if vote > 0 else '👎'} Already counted for {name}."
            elif vote > 0:
                text = f"👍 Noted: more papers like this for {name}."
            else:
                text = f"👎 Noted: fewer papers like this for {name}."
        counts = feedback.counts(db, channel, [paper_id])[paper_id]
    log.info("%s by %s on %s in %s: %s", action, user, paper_id, channel, text)
    return ActionResult(text=text, error=False, changed=changed, paper_id=paper_id, counts=counts)


def _topic_of(db: Store, channel: str, encoded_topics: object) -> str | None:
    """The first of an item's topics the channel still follows, else its first topic."""
    try:
        decoded = json.loads(str(encoded_topics))
    except ValueError:
        return None
    topics: list[str] = (
        [t for t in decoded if isinstance(t, str) and t] if isinstance(decoded, list) else []
    )
    if not topics:
        return None
    followed = {str(row["topic_id"]) for row in channel_store.active_subscriptions(db, channel)}
    return next((topic for topic in topics if topic in followed), topics[0])


def _topic_name(db: Store, channel: str, topic_id: str) -> str:
    """How a click's answer names the topic: a catalog topic by its id (`offline-rl`, as
    typed in `/papers subscribe`), a free-text topic by its text in quotes, read from the
    channel's subscription rows (people typed the text, never its `custom:` slug). The
    answer is sent unescaped, so the text keeps only its words: no markup or mention."""
    if not topic_id.startswith(CUSTOM_PREFIX):
        return topic_id
    text = channel_store.latest_custom_text(db, channel, topic_id)
    words = " ".join(re.findall(r"[^\W_]+", text)) if text is not None else ""
    return f'"{words[:80]}"' if words else topic_id


def digest_counts(db: Store, channel: str, digest_id: int) -> dict[str, tuple[int, int]]:
    """{paper id: (👍, 👎)} for every item of the channel's digest, to re-render its
    message; {} when the digest is not the channel's (or does not exist)."""
    return feedback.counts(db, channel, digest_store.item_paper_ids(db, channel, digest_id))
