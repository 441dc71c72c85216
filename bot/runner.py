"""`paperboy run`: one asyncio process for the configured platforms and the scheduler,
each started on its own, so one platform's outage stops neither the others nor the
scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from bot.cluster import Member
from bot.delivery import SENDER, Poster
from bot.local import LocalPoster
from bot.scheduler import STOP_GRACE_SECONDS, DigestScheduler
from bot.services import Services
from config.settings import SettingsError
from db.connection import Target, is_postgresql
from db.errors import StorageError

# Slack's libraries and Discord's are imported by the component that uses them, when it
# starts: a Slack-only install never imports discord.py, nor a Discord-only one slack_bolt.
if TYPE_CHECKING:
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.discordbot.client import PaperboyClient
    from bot.slack.endpoint import SlackEndpoint
    from bot.slack.http import HttpServer

log = logging.getLogger(__name__)

START_RETRY_SECONDS = 5.0  # the first wait before trying an unreachable platform again
START_RETRY_MAX_SECONDS = 300.0
# Stopping every part, the scheduler's grace for sends under way included: the process
# exits within 10 s of SIGTERM.
STOP_SECONDS = STOP_GRACE_SECONDS + 3.0
SOCKET_CONNECT_SECONDS = 30.0  # for the first Socket Mode connection of an attempt
# slack_sdk's Socket Mode client logs here (see _OneLineFailures).
SOCKET_LOG = logging.getLogger("bot.slack.socket_mode")


INDEX_BUSY_RETRY_SECONDS = 5.0  # another updater holds the search index: look again after
INDEX_BUSY_RETRIES = 120  # ...this many times (10 minutes: a rebuild of 1M papers takes ~1.5)


def index_in_background(db_path: Target) -> threading.Thread:
    """Bring the search index of `db_path` up to date in a daemon thread, started now, so
    the first lookup after an upgrade does not build it inline (10-25 s per 100k papers);
    returns the thread at once. Through `text_index.ready`, as a lookup, so never beside
    another update of the index (this waits for another updater to finish). A failure
    logs one line and changes nothing else: lookups use FTS5 until the index is built."""
    thread = threading.Thread(target=_index_now, args=(db_path,), name="search-index", daemon=True)
    thread.start()
    return thread


def _index_now(db_path: Target) -> None:
    from db import text_index
    from db.connection import open_db

    started = time.monotonic()
    try:
        db = open_db(db_path, create=False)
    except Exception as exc:  # a background nicety: never a traceback
        log.warning("search index: not updated at start: %s", exc)
        return
    try:
        if not text_index.may_write(db):
            return  # a read-only store: lookups use FTS5, as they would anyway
        for _ in range(INDEX_BUSY_RETRIES):
            try:
                text_index.ready(db)
                break
            except text_index.WriterBusy:
                time.sleep(INDEX_BUSY_RETRY_SECONDS)  # another updater: then it is current
        else:
            log.info("search index: still busy elsewhere; the next lookup catches it up")
            return
        with contextlib.suppress(StorageError):  # busy writers: the next ingest trims
            text_index.trim(db)
        log.info("search index: up to date (%.1f s)", time.monotonic() - started)
    except text_index.IndexUnavailable as exc:
        if not isinstance(exc.__cause__, (OSError, ValueError)):  # ready logged those
            log.warning("search index: not updated at start (%s); lookups use FTS5", exc)
    except Exception as exc:
        log.warning("search index: not updated at start (%s); lookups use FTS5", exc)
    finally:
        db.close()


class Unavailable(SettingsError):
    """A platform cannot be reached now (network, DNS, an outage): `run` tries again
    later. Outside `run` (say `digest --send`) it is a one-line error like a bad setting."""


class _OneLineFailures(logging.Filter):
    """slack_sdk's Socket Mode client logs each failed connection with a traceback and
    retries every 10 s for ever. This makes each failure one warning line, and lets
    SlackComponent notice the first failure of an attempt (to retry with backoff)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: asyncio.Event | None = None  # set by SlackComponent for one attempt
        self.error: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        # Some failures come with a traceback, some as a bare ERROR line ("Failed to
        # retrieve WSS URL: ...", then raised): both are one failure of the connection.
        if record.exc_info:
            self.error = record.exc_info[1]
        if self.failed is not None:  # an attempt of SlackComponent's: it logs the line
            self.failed.set()
            return False
        if record.exc_info:
            record.msg, record.args = "slack: Socket Mode: %s", (_describe(self.error),)
        else:
            record.msg, record.args = (
                "slack: Socket Mode: %s",
                (record.getMessage().splitlines()[0],),
            )
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _refused(exc: SlackApiError) -> bool:
    """Slack said no (a bad token, a missing scope), rather than being unable to answer
    (HTTP 5xx, 429): an `internal_error` with a 500 is an outage, retried, not a refusal."""
    status = int(exc.response.status_code)
    return status != 429 and status < 500


def _describe(exc: BaseException | None) -> str:
    from slack_sdk.errors import SlackApiError

    from bot.slack.client import error_code

    if exc is None:
        return "no connection"
    if isinstance(exc, SlackApiError):
        return f"Slack refused the connection ({error_code(exc)})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


_SOCKET_FAILURES = _OneLineFailures()
SOCKET_LOG.addFilter(_SOCKET_FAILURES)


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
    listen: bool = True  # False: post only (`run --role worker`), no Socket Mode nor HTTP
    name: str = "slack"
    client: AsyncWebClient | None = field(default=None, init=False)
    _socket: AsyncSocketModeHandler | None = field(default=None, init=False)
    _http: HttpServer | None = field(default=None, init=False)
    _endpoint: SlackEndpoint | None = field(default=None, init=False)

    def check(self) -> None:
        """Refuse to start on missing settings, naming the variable (never a value)."""
        settings = self.services.settings
        if not self.listen:
            return
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
        import aiohttp
        from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
        from slack_sdk.errors import SlackApiError

        from bot.slack.app import create_app
        from bot.slack.client import error_code, make_client
        from bot.slack.endpoint import MAX_ACK_SECONDS, SlackEndpoint
        from bot.slack.http import HttpServer, http_limits

        self.check()
        settings = self.services.settings
        assert settings.slack_bot_token is not None
        client = make_client(settings.slack_bot_token, settings.slack_api_url)
        try:
            identity = await client.auth_test()
        except SlackApiError as exc:
            if exc.response.status_code in (429,) or exc.response.status_code >= 500:
                raise Unavailable(
                    f"Slack answered HTTP {exc.response.status_code} to auth.test"
                ) from None
            raise SettingsError(
                f"SLACK_BOT_TOKEN was refused by Slack ({error_code(exc)})"
            ) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise Unavailable(
                f"cannot reach Slack at {settings.slack_api_url} ({type(exc).__name__}); "
                "check SLACK_API_URL and the network"
            ) from None
        self.client = client  # posting works from here on, with or without the websocket
        who = f"@{identity.get('user')} in team {identity.get('team_id')}"
        if not self.listen:
            return f"slack: posting as {who} (commands go to the web processes)"
        if self.http:
            assert settings.slack_signing_secret is not None
            if settings.slack_ack_seconds > MAX_ACK_SECONDS:
                # Slack gives up after 3 s and tells the user the command failed, while
                # it runs on.
                raise SettingsError(
                    f"PAPERBOY_SLACK_ACK_SECONDS={settings.slack_ack_seconds:g} is not valid: "
                    f"must be at most {MAX_ACK_SECONDS:g} (Slack waits 3 seconds)"
                )
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
        self._socket = AsyncSocketModeHandler(app, settings.slack_app_token, logger=SOCKET_LOG)
        await self._connect_socket()
        return f"slack: Socket Mode connected as {who}"

    async def _connect_socket(self) -> None:
        """One attempt at the Socket Mode connection: Unavailable if it fails (slack_sdk's
        own loop would retry every 10 s for ever, holding up start-up and a stop)."""
        from slack_sdk.errors import SlackApiError

        from bot.slack.client import error_code

        assert self._socket is not None
        watch = _SOCKET_FAILURES
        watch.failed, watch.error = asyncio.Event(), None
        # slack_bolt's Socket Mode handler has no annotations (here and below).
        connecting = asyncio.ensure_future(self._socket.connect_async())  # type: ignore[no-untyped-call]
        failing = asyncio.ensure_future(watch.failed.wait())
        try:
            done, _ = await asyncio.wait(
                {connecting, failing},
                timeout=SOCKET_CONNECT_SECONDS,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if connecting in done:
                error = connecting.exception()  # raised, not only logged: the real cause
                if error is None:
                    return
                watch.error = error
        finally:
            watch.failed = None  # later reconnections: slack_sdk's loop, one line each
            for task in (connecting, failing):
                task.cancel()
            await asyncio.gather(connecting, failing, return_exceptions=True)
        socket, self._socket = self._socket, None
        socket.client.wss_uri = None  # ask Slack for a fresh URL next time
        await socket.close_async()  # type: ignore[no-untyped-call]
        if isinstance(watch.error, SlackApiError) and _refused(watch.error):
            raise SettingsError(f"SLACK_APP_TOKEN was refused by Slack ({error_code(watch.error)})")
        raise Unavailable(f"cannot open the Socket Mode connection ({_describe(watch.error)})")

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
        try:
            if self._http is not None:
                await self._http.stop()
        finally:
            # Even when the stop deadline cuts the server's grace short: queued commands
            # must not start (they would run at interpreter exit) and the session closes.
            if self._endpoint is not None:
                task = asyncio.current_task()
                cut_short = task is not None and task.cancelling() > 0
                await self._endpoint.close(grace=0 if cut_short else 3.0)


@dataclass
class DiscordComponent:
    services: Services
    gateway: bool = True  # tests log in over REST only; the gateway brings interactions
    name: str = "discord"
    client: PaperboyClient | None = field(default=None, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    async def start(self) -> str:
        import aiohttp
        import discord

        from bot.discordbot.client import PaperboyClient, use_api_base

        settings = self.services.settings
        assert settings.discord_token is not None
        use_api_base(settings.discord_api_url)
        self.client = PaperboyClient(self.services, guild_id=settings.discord_guild_id)
        try:
            await self.client.login(settings.discord_token)
        except discord.LoginFailure:
            await self.client.close()
            self.client = None
            raise SettingsError("DISCORD_TOKEN was refused by Discord (401 Unauthorized)") from None
        except (
            aiohttp.ClientError,
            TimeoutError,
            discord.HTTPException,
            discord.RateLimited,
        ) as exc:
            await self.client.close()
            self.client = None
            raise Unavailable(
                f"cannot reach Discord at {settings.discord_api_url} ({type(exc).__name__}); "
                "check DISCORD_API_URL and the network"
            ) from None
        if self.gateway:
            self._task = asyncio.create_task(self._connected(self.client), name="discord gateway")
        where = (
            f"server {settings.discord_guild_id}" if settings.discord_guild_id else "all servers"
        )
        return (
            f"discord: logged in as {self.client.user}, /papers for {where} ({self.client.synced})"
        )

    @staticmethod
    async def _connected(client: PaperboyClient) -> None:
        """The gateway (interactions: commands and clicks), reconnecting by itself; a close
        Discord does not let it resume (a refused token, a missing intent) closes the client
        with one line instead of a task's unread traceback."""
        from bot.discordbot.client import one_line

        try:
            await client.connect(reconnect=True)
        except Exception as exc:
            log.error("discord: disconnected for good (%s); restart to reconnect", one_line(exc))

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.close()
        if self._task is not None:
            # The gateway loop may be waiting to reconnect (up to 5 minutes): no need to.
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 10)


class LivePosters(Mapping[str, Poster]):
    """The posters of the platforms that are up at the moment of asking: one that comes
    up later (after an outage at start-up) starts receiving its queued messages."""

    def __init__(self, component: SchedulerComponent) -> None:
        self.component = component

    def __getitem__(self, platform: str) -> Poster:
        return self.component.posters()[platform]

    def __iter__(self) -> Iterator[str]:
        return iter(self.component.posters())

    def __len__(self) -> int:
        return len(self.component.posters())


@dataclass
class SchedulerComponent:
    """The weekly digests and the outbox loop, posting through the platforms as they come
    up, and always to local: channels."""

    services: Services
    platforms: list[Component]
    name: str = "scheduler"
    scheduler: DigestScheduler | None = field(default=None, init=False)
    _posters: dict[str, tuple[object, Poster]] = field(default_factory=dict, init=False)

    def _poster(self, platform: str, client: object, make: Callable[[], Poster]) -> Poster:
        """One poster per client (a Slack poster paces its channels)."""
        known = self._posters.get(platform)
        if known is None or known[0] is not client:
            known = self._posters[platform] = (client, make())
        return known[1]

    def posters(self) -> dict[str, Poster]:
        from bot.dm import DmChannels

        found: dict[str, Poster] = {
            "local": self._poster(
                "local",
                self.services,
                lambda: LocalPoster(self.services.settings.local_dir, self.services.clock),
            )
        }
        for part in self.platforms:
            if isinstance(part, SlackComponent) and (slack := part.client) is not None:
                from bot.slack.home import HomeRefreshingPoster

                # Personal digests' DM channels, remembered in the database (bot/dm.py);
                # a delivered personal digest re-publishes its user's App Home.
                found["slack"] = self._poster(
                    "slack",
                    slack,
                    lambda: HomeRefreshingPoster(
                        slack, services=self.services, dms=DmChannels(self.services.db)
                    ),
                )
            if isinstance(part, DiscordComponent) and (bot := part.client) is not None:
                from bot.discordbot.poster import DiscordPoster

                found["discord"] = self._poster(
                    "discord", bot, lambda: DiscordPoster(bot, dms=DmChannels(self.services.db))
                )
        return found

    async def start(self) -> str:
        configured = {"local", *(part.name for part in self.platforms)}
        self.scheduler = DigestScheduler(self.services, LivePosters(self), configured)
        return await self.scheduler.start()

    def halt(self) -> None:
        """No new send from now on (called the moment the stop is seen)."""
        if self.scheduler is not None:
            self.scheduler.halt()

    async def stop(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()


@dataclass
class ClockComponent:
    """With PostgreSQL, this process among its peers (bot/cluster.py): it heartbeats, and
    runs `scheduler` only while it holds the clock, elected through the database; another
    process takes the clock within `ttl` seconds after this one dies. Without a scheduler
    (`run --role web`) it heartbeats and never takes the clock."""

    services: Services
    scheduler: SchedulerComponent | None
    role: str = "all"
    name: str = "cluster"
    member: Member | None = field(default=None, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    async def start(self) -> str:
        from db.connection import open_db

        target = self.services.db_path
        interval = self.services.settings.heartbeat_seconds
        self.member = Member(
            lambda: open_db(target),
            role=self.role,
            on_gain=self._gain,
            on_lose=self._lose,
            takes_clock=self.scheduler is not None,
            interval=interval,
            ttl=self.services.settings.clock_ttl_seconds,
            process_id=SENDER,  # the name its outbox and inbox claims carry
        )
        self._task = asyncio.create_task(self.member.run(), name="heartbeat")
        clock = "may keep the clock" if self.scheduler is not None else "never keeps the clock"
        return f"cluster: process {self.member.id} ({self.role}) heartbeating; {clock}"

    async def _gain(self) -> None:
        assert self.scheduler is not None
        log.info("%s (this process keeps the clock)", await self.scheduler.start())

    async def _lose(self) -> None:
        assert self.scheduler is not None
        self.scheduler.halt()
        await self.scheduler.stop()

    def halt(self) -> None:
        if self.scheduler is not None:
            self.scheduler.halt()

    async def stop(self) -> None:
        if self.member is not None:
            await self.member.stop()  # the scheduler first, then the lease, then the row
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


ROLES = ("all", "web", "worker")


def components(
    services: Services, *, slack_http: bool, port: int, role: str = "all"
) -> list[Component]:
    """The platforms whose tokens are set, then the scheduler (which posts through them).
    With PostgreSQL the scheduler runs under the clock (`ClockComponent`); `role` "web"
    answers commands only, "worker" builds and delivers only (its platforms post, never
    listen). SQLite serves one process: its role is "all"."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    shared = is_postgresql(services.db_path)
    if role != "all" and not shared:
        raise SettingsError(
            f"--role {role} needs PostgreSQL (PAPERBOY_DATABASE_URL): "
            "a SQLite file serves one process, which has every role"
        )
    listen = role != "worker"
    found: list[Component] = []
    if services.settings.slack_bot_token:
        found.append(SlackComponent(services, http=slack_http, port=port, listen=listen))
    if services.settings.discord_token:
        found.append(DiscordComponent(services, gateway=listen))
    platforms = list(found)
    scheduler = SchedulerComponent(services, platforms) if role != "web" else None
    if shared:
        found.append(ClockComponent(services, scheduler, role))
    elif scheduler is not None:
        found.append(scheduler)
    return found


async def run(
    parts: list[Component],
    stop: asyncio.Event | None = None,
    retry_seconds: float = START_RETRY_SECONDS,
) -> None:
    """Start every part concurrently (each logs one line when up), wait for SIGTERM/SIGINT
    (or `stop`; seen at once, even during start-up), then stop them in reverse order
    within `STOP_SECONDS` (the scheduler first: no new send starts). A part that is
    `Unavailable` logs one line per failed attempt and is retried in the background with
    backoff (its digests queue meanwhile); any other failure to start (a refused token, a
    bad setting) stops everything and is raised."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Not possible off the main thread or on Windows; stop then comes from `stop`.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    fatal: list[BaseException] = []
    starting = [
        asyncio.create_task(_keep_starting(part, stop, fatal, retry_seconds), name=part.name)
        for part in parts
    ]
    try:
        await stop.wait()
    finally:
        # Before anything else yields to the event loop: no send starts after "stopping"
        # (stopping the starting tasks below awaits, and scheduled work would run then).
        for part in parts:
            halt = getattr(part, "halt", None)
            if callable(halt):
                halt()
        if not fatal:
            log.info("stopping")
        deadline = loop.time() + STOP_SECONDS  # for all the parts together
        for task in starting:
            task.cancel()
        await asyncio.wait(starting, timeout=STOP_SECONDS)
        for part in reversed(parts):
            try:
                await asyncio.wait_for(part.stop(), max(deadline - loop.time(), 0.1))
            except Exception as exc:  # a part that fails to stop must not keep the others up
                log.warning("%s did not stop cleanly: %s", part.name, _describe(exc))
    if fatal:
        raise fatal[0]


async def _keep_starting(
    part: Component, stop: asyncio.Event, fatal: list[BaseException], delay: float
) -> None:
    """Start `part`; while it is Unavailable, log one line and try again with backoff."""
    while not stop.is_set():
        try:
            log.info("%s", await part.start())
            return
        except Unavailable as exc:
            log.warning("%s: %s; trying again in %.0f s", part.name, exc, delay)
        except Exception as exc:
            fatal.append(exc)
            stop.set()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        delay = min(delay * 2, START_RETRY_MAX_SECONDS)
