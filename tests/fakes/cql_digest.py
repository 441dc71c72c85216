"""The CQL paper in a recorded digest: the example the README and the how-to pages show."""

from __future__ import annotations

from digests.digest import Digest, DigestItem
from digests.topics import Catalog

# The paper of both examples: CQL, digest 42.
CQL = {
    "id": "pa1266b0525fadd86",
    "title": "Conservative Q-Learning for Offline Reinforcement Learning",
    "authors": ["Aviral Kumar", "Aurick Zhou", "George Tucker", "Sergey Levine"],
    "venue": "NeurIPS 2020",
    "year": 2020,
    "tldr": "A conservative Q-function gives a lower bound on the policy's value, so offline "
    "RL does not overestimate unseen actions.",
    "url": "https://arxiv.org/abs/2006.04779",
    "pdf_url": "https://arxiv.org/pdf/2006.04779",
    "code_url": "https://github.com/aviralkumar2907/CQL",
    "abstract": "Offline reinforcement learning.",
    "links": [],
    "keywords": [],
}


def cql_digest(catalog: Catalog, channel: str) -> Digest:
    offline = catalog.get("offline-rl")
    assert offline is not None
    return Digest(
        channel=channel,
        week="2026-W49",
        topics=(offline,),
        items=(DigestItem(CQL, (offline,), 9.0),),
        built_at="2026-11-30T09:00:00+00:00",
        recorded=True,
        digest_id=42,
    )
