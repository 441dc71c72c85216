"""A channel, its subscriptions and a delivered digest; text strategies for matching."""

from __future__ import annotations

from hypothesis import strategies as st

from config.settings import Settings
from db import channels as store
from db.store import Store
from digests.digest import ensure_channel
from digests.matching import Term
from tests.conftest import NOW

CHANNEL = "local:lab"


def subscribe(db: Store, settings: Settings, *topics: str, channel: str = CHANNEL) -> None:
    ensure_channel(db, channel, settings, NOW)
    for topic in topics:
        store.add_subscription(db, channel, topic, None, "tester", NOW.isoformat())


def ids(digest) -> set[str]:  # type: ignore[no-untyped-def]
    return {str(item.paper["id"]) for item in digest.items}


def deliver_all(db: Store, digest) -> None:  # type: ignore[no-untyped-def]
    """Queue the digest as one message and mark it sent, as a platform would."""
    from bot.delivery import queue_digest
    from db.outbox import mark_sent, messages_for_digest

    queue_digest(db, digest, [({"text": "digest"}, sorted(ids(digest)))], NOW)
    for message in messages_for_digest(db, digest.digest_id):
        mark_sent(db, message["id"], "ts", NOW.isoformat())


WORDS = [
    "robot", "robots", "a", "policy", "policies", "graph", "graph-neural", "neural",
    "network", "networks", "learning", "Learning", "ﬁne", "fine", "Straße", "strasse",
    "İstanbul", "x_y", "3d", "RL", "rl", "café", "cafe\u0301", "glasses", "analysis",
]  # fmt: skip


SEPARATORS = [" ", "  ", "-", ", ", "; ", ". ", "\n", "_", "/"]


text_strategy = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=40
).map(lambda pairs: "".join(word + sep for word, sep in pairs))


phrase_strategy = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


terms_strategy = st.lists(
    st.tuples(phrase_strategy, st.sampled_from([0.5, 1.0, 0.7, 2.0, 3.0])),
    min_size=1,
    max_size=5,
).map(lambda pairs: tuple(Term.of(phrase, weight) for phrase, weight in pairs))
