"""The Discord client: the /papers group on a CommandTree, synced only when it changed,
and the digest buttons."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord
from discord import app_commands

from bot.discordbot.buttons import DigestButton, answer_stray
from bot.discordbot.commands import ACK_BUDGET_SECONDS, PapersGroup
from bot.services import Services
from db.app_state import get_state, set_state
from digests.timestamps import stamp

log = logging.getLogger(__name__)

SYNC_STATE_KEY = "discord.commands.sha256"
MAX_RATE_LIMIT_WAIT_SECONDS = 30.0  # discord.py's smallest allowed value

ResponseListener = Callable[[aiohttp.ClientResponse], Awaitable[None]]


def use_api_base(url: str) -> None:
    """Point discord.py's REST client at `url` (DISCORD_API_URL; tests use a local fake)."""
    discord.http.Route.BASE = url.rstrip("/")


class PaperboyClient(discord.Client):
    """The bot: `/papers` (`PapersGroup`) on its CommandTree, the digest buttons
    (`DigestButton`, for any message however old), and `response_listeners`, shown every
    HTTP answer before discord.py reads it (the poster's limiter must hear of the 429s
    discord.py retries by itself)."""

    def __init__(
        self,
        services: Services,
        *,
        guild_id: int | None = None,
        ack_budget: float = ACK_BUDGET_SECONDS,
    ) -> None:
        # Told of every answer to a request of this client, before discord.py handles it.
        self.response_listeners: list[ResponseListener] = []
        trace = aiohttp.TraceConfig()
        trace.on_request_end.append(self._answered)
        super().__init__(
            http_trace=trace,
            intents=discord.Intents(guilds=True),
            allowed_mentions=discord.AllowedMentions.none(),
            # A longer rate limit raises discord.RateLimited instead of sleeping through it
            # (an hour's retry_after blocked `digest --send` for an hour): the outbox waits.
            max_ratelimit_timeout=MAX_RATE_LIMIT_WAIT_SECONDS,
        )
        self.services = services
        self.guild_id = guild_id
        self.tree = app_commands.CommandTree(self)
        self.group = PapersGroup(services, ack_budget)
        self.tree.add_command(self.group)
        # The digest items' buttons, on any message however old: no view per message.
        self.ack_budget = ack_budget
        self.add_dynamic_items(DigestButton)
        # "guild", "global", "unchanged" or "deferred" (rate-limited), after setup
        self.synced: str | None = None

    async def _answered(
        self,
        session: aiohttp.ClientSession,
        context: Any,
        params: aiohttp.TraceRequestEndParams,
    ) -> None:
        """Show an answer to the listeners. A failing listener is logged and skipped: it
        must never fail the request discord.py is making."""
        for listener in list(self.response_listeners):
            try:
                await listener(params.response)
            except Exception:
                log.exception("discord: a response listener failed")

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """A click that no button handler takes gets a polite ephemeral answer."""
        await answer_stray(interaction)

    def command_payload(self) -> list[dict[str, Any]]:
        return [command.to_dict(self.tree) for command in self.tree.get_commands()]

    async def setup_hook(self) -> None:
        """Sync /papers: to one guild at once (development), or globally when it changed.
        A rate limit longer than the client waits (`max_ratelimit_timeout`: command syncs
        have a daily budget) defers the sync to the next start, with one warning, instead
        of failing the login: the commands synced before still work, and so does posting."""
        try:
            await self._sync()
        except discord.RateLimited as exc:
            self.synced = "deferred"
            log.warning(
                "discord: /papers not synced, rate-limited for %.0f s; trying at the next start",
                exc.retry_after,
            )

    async def _sync(self) -> None:
        if self.guild_id is not None:
            guild = discord.Object(id=self.guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
            self.synced = "guild"
            log.info("discord: /papers synced to server %s", self.guild_id)
            return
        digest = hashlib.sha256(
            json.dumps(self.command_payload(), sort_keys=True).encode()
        ).hexdigest()
        db = self.services.db()
        if get_state(db, SYNC_STATE_KEY) == digest:
            self.synced = "unchanged"
            return
        await self.tree.sync()
        set_state(db, SYNC_STATE_KEY, digest, stamp(self.services.clock()))
        self.synced = "global"
        log.info("discord: /papers synced globally (it can take up to an hour to appear)")
