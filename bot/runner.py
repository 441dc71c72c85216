"""`paperboy run`: one asyncio process for the configured platforms and the scheduler.

Each component starts and logs one line; SIGTERM or SIGINT stops them in reverse order
(the scheduler first, letting in-flight sends finish), and the process exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
import discord
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import Poster
from bot.discordbot.client import PaperboyClient, use_api_base
from bot.discordbot.poster import DiscordPoster
from bot.local import LocalPoster
from bot.scheduler import DigestScheduler
from bot.services import Services
from bot.slack.app import create_app
from bot.slack.client import error_code, make_client
from bot.slack.endpoint import SlackEndpoint
from bot.slack.http import HttpServer, http_limits
from bot.slack.poster import SlackPoster
from config.settings import SettingsError

log = logging.getLogger(__name__)


class Component(Protocol):
    name: str

    async def start(self) -> str:
        """Start; return the one line that says what is running."""
        ...

    async def stop(self) -> None: ...


@dataclass
class SlackComponent:
    services: Services
    http: bool = False
    port: int = 3000
    name: str = "slack"
    client: AsyncWebClient | None = field(default=None, init=False)
    _socket: AsyncSocketModeHandler | None = field(default=None, init=False)
    _http: HttpServer | None = field(default=None, init=False)
    _endpoint: SlackEndpoint | None = field(default=None, init=False)

    def check(self) -> None:
        """Refuse to start on missing settings, naming the variable (never a value)."""
        settings = self.services.settings
        if self.http and not settings.slack_signing_secret:
            raise SettingsError(
                "SLACK_SIGNING_SECRET is not set: HTTP mode (--slack-http) needs it "
                "to verify that requests come from Slack"
            )
        if not self.http and not settings.slack_app_token:
            raise SettingsError(
                "SLACK_APP_TOKEN is not set: Socket Mode needs an app-level token (xapp-...); "
                "or run with --slack-http and SLACK_SIGNING_SECRET"
            )

    async def start(self) -> str:
        self.check()
        settings = self.services.settings
        assert settings.slack_bot_token is not None
        client = self.client = make_client(settings.slack_bot_token, settings.slack_api_url)
        try:
            identity = await client.auth_test()
        except SlackApiError as exc:
            raise SettingsError(
                f"SLACK_BOT_TOKEN was refused by Slack ({error_code(exc)})"
            ) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise SettingsError(
                f"cannot reach Slack at {settings.slack_api_url} ({type(exc).__name__}); "
                "check SLACK_API_URL and the network"
            ) from None
        who = f"@{identity.get('user')} in team {identity.get('team_id')}"
        if self.http:
            assert settings.slack_signing_secret is not None
            self._endpoint = SlackEndpoint(
                self.services,
                client,
                signing_secret=settings.slack_signing_secret,
                ack_budget=settings.slack_ack_seconds,
            )
            self._http = HttpServer(self._endpoint, http_limits(settings), port=self.port)
            try:
                await self._http.start()
            except OSError as exc:
                raise SettingsError(
                    f"cannot listen on port {self.port} ({exc.strerror or type(exc).__name__}); "
                    "choose another with --port"
                ) from None
            return f"slack: HTTP mode as {who}, POST /slack/events on port {self.port}"
        app = create_app(self.services, client, signing_secret=None)
        self._socket = AsyncSocketModeHandler(app, settings.slack_app_token)
        await self._socket.connect_async()
        return f"slack: Socket Mode connected as {who}"

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close_async()
        if self._http is not None:
            await self._http.stop()
        if self._endpoint is not None:
            await self._endpoint.close()


@dataclass
class DiscordComponent:
    services: Services
    gateway: bool = True  # tests log in over REST only; the gateway brings interactions
    name: str = "discord"
    client: PaperboyClient | None = field(default=None, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    async def start(self) -> str:
        settings = self.services.settings
        assert settings.discord_token is not None
        use_api_base(settings.discord_api_url)
        self.client = PaperboyClient(self.services, guild_id=settings.discord_guild_id)
        try:
            await self.client.login(settings.discord_token)
        except discord.LoginFailure:
            await self.client.close()
            raise SettingsError("DISCORD_TOKEN was refused by Discord (401 Unauthorized)") from None
        except (aiohttp.ClientError, TimeoutError, discord.HTTPException) as exc:
            await self.client.close()
            raise SettingsError(
                f"cannot reach Discord at {settings.discord_api_url} ({type(exc).__name__}); "
                "check DISCORD_API_URL and the network"
            ) from None
        if self.gateway:
            self._task = asyncio.create_task(self.client.connect(reconnect=True))
        where = (
            f"server {settings.discord_guild_id}" if settings.discord_guild_id else "all servers"
        )
        return (
            f"discord: logged in as {self.client.user}, /papers for {where} ({self.client.synced})"
        )

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.close()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 10)


@dataclass
class SchedulerComponent:
    """The weekly digests and the outbox loop, posting through the platforms started
    before it, and always to local: channels."""

    services: Services
    platforms: list[Component]
    name: str = "scheduler"
    scheduler: DigestScheduler | None = field(default=None, init=False)

    def posters(self) -> dict[str, Poster]:
        found: dict[str, Poster] = {
            "local": LocalPoster(self.services.settings.local_dir, self.services.clock)
        }
        for part in self.platforms:
            if isinstance(part, SlackComponent) and part.client is not None:
                found["slack"] = SlackPoster(part.client)
            if isinstance(part, DiscordComponent) and part.client is not None:
                found["discord"] = DiscordPoster(part.client)
        return found

    async def start(self) -> str:
        self.scheduler = DigestScheduler(self.services, self.posters())
        return await self.scheduler.start()

    async def stop(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()


def components(services: Services, *, slack_http: bool, port: int) -> list[Component]:
    """The platforms whose tokens are set, then the scheduler (which needs them)."""
    found: list[Component] = []
    if services.settings.slack_bot_token:
        found.append(SlackComponent(services, http=slack_http, port=port))
    if services.settings.discord_token:
        found.append(DiscordComponent(services))
    platforms = list(found)
    found.append(SchedulerComponent(services, platforms))
    return found


async def run(parts: list[Component], stop: asyncio.Event | None = None) -> None:
    """Start every part, wait for SIGTERM/SIGINT (or `stop`), then stop them in reverse."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Not possible off the main thread or on Windows; stop then comes from `stop`.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    started: list[Component] = []
    try:
        for part in parts:
            log.info("%s", await part.start())
            started.append(part)
        await stop.wait()
        log.info("stopping")
    finally:
        for part in reversed(started):
            await part.stop()
