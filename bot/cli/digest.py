"""`paperboy digest`: a channel's digest for this period, printed in its platform's format
or sent now."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import click

from bot.cli.options import channel_option, database_path, db_option, now, open_database
from bot.cli.output import UserError, echo, json_text
from config.settings import Settings, load_settings
from db.connection import Target

if TYPE_CHECKING:
    from db.store import Store
    from digests.digest import Digest

log = logging.getLogger(__name__)


@click.command()
@channel_option
@click.option("--preview", is_flag=True, help="Show it without recording it.")
@click.option("--send", is_flag=True, help="Deliver it to the channel now, through the outbox.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "slack", "discord", "json"]),
    default="text",
    show_default=True,
    help="Plain text; the Slack or Discord messages (JSON); or the digest's items and "
    "messages (JSON).",
)
@db_option
def digest(channel: str, preview: bool, send: bool, fmt: str, db_path: Target | None) -> None:
    """Build CHANNEL's digest for this period (its week, or today for a daily channel)
    and print it, or --send it.

    Without --preview the digest is recorded: its papers are never picked for this
    channel again, and building it again in this period returns the same digest.
    """
    import asyncio

    from db import channels as channel_store
    from digests import lookup
    from digests.channels import parse_channel
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
        result = asyncio.run(send_now(db, database_path(db_path), str(ref), settings))
        echo(result)
        return
    built = build_digest(
        db, str(ref), now(), catalog=load_catalog(), settings=settings, preview=preview
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


async def send_now(db: Store, db_path: Target, channel: str, settings: Settings) -> str:
    """Build and deliver the channel's digest now; one line saying what was sent."""
    from bot.send import send_digest
    from digests.channels import parse_channel
    from digests.topics import load_catalog

    ref = parse_channel(channel)
    async with poster_for(ref.platform, db_path, settings) as poster:
        built, result = await send_digest(
            db, poster, channel, now(), catalog=load_catalog(), settings=settings
        )
    where = f" (into {settings.local_dir})" if ref.platform == "local" else ""
    papers = "1 paper" if len(built.items) == 1 else f"{len(built.items)} papers"
    return f"{built.week}: {papers}. {result.describe()}{where}"


@contextlib.asynccontextmanager
async def poster_for(platform: str, db_path: Target, settings: Settings) -> AsyncIterator[Any]:
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
