"""Build a channel's digest for this period, queue its messages, and deliver them now."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from bot.delivery import ChannelResult, Poster, deliver_channel, posting_rate, queue_digest
from config.settings import Settings
from db.outbox import EncodedPayload
from db.store import Store
from digests.channels import parse_channel
from digests.digest import Digest, build_digest
from digests.render import discord as discord_render
from digests.render import slack as slack_render
from digests.render.text import digest_text
from digests.topics import Catalog

log = logging.getLogger(__name__)


def platform_messages(
    digest: Digest, platform: str, empty: str
) -> list[tuple[dict[str, Any], list[str]]]:
    """The digest's messages as the channel's platform receives them, each with the
    ids of the papers it carries. Slack's and Discord's payloads carry their JSON text
    (`EncodedPayload`), joined by the renderer from parts encoded once per batch."""
    if platform in ("slack", "discord"):
        render = slack_render if platform == "slack" else discord_render
        return [
            (EncodedPayload(m.payload(), m.payload_json), list(m.paper_ids))
            for m in render.digest_messages(digest, empty)
        ]
    if digest.empty and empty == "skip":
        return []
    ids = [str(item.paper["id"]) for item in digest.items]
    return [({"text": digest_text(digest)}, ids)]


async def send_digest(
    db: Store,
    poster: Poster,
    channel: str,
    now: datetime,
    *,
    catalog: Catalog,
    settings: Settings,
) -> tuple[Digest, ChannelResult]:
    """Record this period's digest (or reuse it), queue it once, and deliver what is due."""
    ref = parse_channel(channel)
    digest = build_digest(db, str(ref), now, catalog=catalog, settings=settings)
    queue_digest(db, digest, platform_messages(digest, ref.platform, settings.empty_digest), now)
    rate = posting_rate(settings, ref.platform)
    return digest, await deliver_channel(
        db, poster, str(ref), now, settings.max_attempts, rate=rate
    )
