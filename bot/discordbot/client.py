"""The Discord client: the /papers group on a CommandTree, synced only when it changed,
the digest buttons, and a gateway loop that logs one line per failed connection."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord
from discord import app_commands
from discord.gateway import DiscordWebSocket, ReconnectWebSocket

from bot.discordbot.buttons import DigestButton, answer_stray
from bot.discordbot.commands import ACK_BUDGET_SECONDS, PapersGroup
from bot.services import Services
from db.app_state import get_state, set_state
from digests.timestamps import stamp

log = logging.getLogger(__name__)

SYNC_STATE_KEY = "discord.commands.sha256"
MAX_RATE_LIMIT_WAIT_SECONDS = 30.0  # discord.py's smallest allowed value
RECONNECT_SECONDS = 5.0  # the first wait before connecting to the gateway again, doubling
RECONNECT_MAX_SECONDS = 300.0
GATEWAY_OPEN_SECONDS = 60.0  # discord.py's own limit on opening the gateway connection
# What discord.py's own gateway loop retries: the network, an outage, an unhandled close.
GATEWAY_ERRORS = (
    OSError,
    TimeoutError,
    aiohttp.ClientError,
    discord.HTTPException,
    discord.GatewayNotFound,
    discord.ConnectionClosed,
)

ResponseListener = Callable[[aiohttp.ClientResponse], Awaitable[None]]


def use_api_base(url: str) -> None:
    """Point discord.py's REST client at `url` (DISCORD_API_URL; tests use a local fake)."""
    discord.http.Route.BASE = url.rstrip("/")


def one_line(exc: BaseException) -> str:
    """The exception's type and the first line of its message."""
    text = str(exc).strip().partition("\n")[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
        reconnect_seconds: float = RECONNECT_SECONDS,
    ) -> None:
        # Paperboy has no voice: discord.py's warnings that its voice libraries are missing
        # (PyNaCl, davey) would be noise on every start.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        self.reconnect_seconds = reconnect_seconds
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

    async def connect(self, *, reconnect: bool = True) -> None:
        """discord.py's gateway loop (`Client.connect`), resuming the session after a
        disconnect as it does, but a failed connection is one warning line (what failed,
        why, when it tries again) where discord.py logs a traceback, the waits are 5 s
        doubling to 5 minutes (reset once connected), and a first connection that fails
        is retried too: discord.py's loop then fails on the socket it never had and the
        bot stays offline. A close Discord does not let a bot resume (a refused token, a
        missing intent) closes the client and is raised, as in discord.py."""
        if not reconnect:
            await super().connect(reconnect=False)
            return
        delay = self.reconnect_seconds
        params: dict[str, Any] = {"initial": True, "shard_id": self.shard_id}
        while not self.is_closed():
            try:
                self.ws = await asyncio.wait_for(
                    DiscordWebSocket.from_client(self, **params), timeout=GATEWAY_OPEN_SECONDS
                )
                params["initial"] = False
                delay = self.reconnect_seconds
                while True:
                    await self.ws.poll_event()
            except ReconnectWebSocket as exc:  # Discord asked for it: at once, no line
                self.dispatch("disconnect")
                if self.ws is not None:
                    params.update(
                        sequence=self.ws.sequence, resume=exc.resume, session=self.ws.session_id
                    )
                    if exc.resume:
                        params["gateway"] = self.ws.gateway
            except GATEWAY_ERRORS as exc:
                self.dispatch("disconnect")
                if self.is_closed():
                    return
                if isinstance(exc, discord.ConnectionClosed):
                    if exc.code == 4014:
                        raise discord.PrivilegedIntentsRequired(exc.shard_id) from None
                    if exc.code != 1000:
                        await self.close()
                        raise
                log.warning(
                    "discord: gateway connection failed (%s); trying again in %.3g s",
                    one_line(exc),
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX_SECONDS)
                if self.ws is not None:  # a session to resume
                    params.update(
                        sequence=self.ws.sequence,
                        gateway=self.ws.gateway,
                        resume=True,
                        session=self.ws.session_id,
                    )

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
