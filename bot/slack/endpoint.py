"""What Paperboy does with one HTTP request from Slack (`POST /slack/events`): slash
commands, button clicks and `app_home_opened`, each checked before anything runs."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import ChangeWriter, Services
from bot.slack.actions import check_payload, handle_block_actions, respond
from bot.slack.app import COMMAND, WORKING, answer_payloads, click_handlers
from bot.slack.home import home_opened, home_tab_opened
from bot.slack.http import Request, Response
from bot.slack.verify import ReplayMemory, check, slack_url
from digests.commands.grammar import ParseError, parse
from digests.safe_text import strip_unsafe

log = logging.getLogger(__name__)

T = TypeVar("T")

PATH = "/slack/events"
MAX_FIELDS = 64  # a slash command has about 15 form fields
RESPONSE_TIMEOUT = 10.0
# Threads for lookups (find, show, topics...). More would not run Python faster on a
# small machine (one GIL), and each one more makes the event loop wait longer for the GIL
# between writes.
COMMAND_THREADS = 2
# Commands that change a channel (subscribe...) have a thread of their own (a
# `ChangeWriter`): they never queue behind slow lookups, never wait for each other in
# SQLite's busy handler (which sleeps and polls; SQLite has one writer anyway), and those
# that arrive while one runs are committed together, with one fsync.
CHANGE_THREADS = 1
# A command that has to queue for a thread waits this long at most for its answer before
# "Working on it…": when threads free up quickly, its answer is the acknowledgement (one
# HTTP exchange instead of two); when they do not, the acknowledgement is not held up.
QUEUED_WAIT = 0.25
SSL_CHECK = re.compile(rb"(?:^|&)ssl_check=1(?:&|$)")  # a whole form field, nothing parsed
UNSIGNED = Response(401, b"invalid or missing Slack signature")
OK = Response(200)
MAX_ACK_SECONDS = 2.5  # Slack waits 3 s for the acknowledgement; leave room for the trip
MAX_QUEUED = 1000  # commands waiting for a thread, beyond the running ones
BUSY = "Paperboy has many commands waiting and did not run this. Please try again in a minute."
STOPPED = "Paperboy is restarting and did not run this. Please try again in a minute."
CLICK_STOPPED = (
    "Paperboy is restarting and did not act on that click. Please click again in a minute."
)


def _bad(reason: str) -> Response:
    return Response(400, reason.encode())


class SlackEndpoint:
    """The request handler for `bot.slack.http.HttpServer`, in this order, so a bad
    request costs little and learns nothing: the signature on the raw body (401), a replay
    (200, nothing runs again), then the parse (400 for a signed body that makes no sense).
    A slash command is answered within the ack budget, counted from its headers, else
    acknowledged with "Working on it…" and answered through its `response_url` (only
    Slack's). A click (`check_payload`, 400 when it fails) and `app_home_opened` are
    acknowledged at once and handled after, writes in the change lane; other callbacks get
    200, `url_verification` its challenge. Call `close()` when done."""

    def __init__(
        self,
        services: Services,
        client: AsyncWebClient,
        *,
        signing_secret: str,
        ack_budget: float,
        workers: int = COMMAND_THREADS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.services = services
        self.client = client
        self.secret = signing_secret.encode()
        self.ack_budget = ack_budget
        self.clock = clock
        self.replays = ReplayMemory()
        self.commands_run = 0  # for tests and the benchmark
        self.clicks = 0  # button clicks accepted, for tests
        self.click_handlers = click_handlers()
        self.workers = workers
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="slack-command")
        self._change_executor = ChangeWriter(services.db, name="slack-change")
        self._running = 0  # commands in flight, both lanes
        self._busy = {False: 0, True: 0}  # in flight per lane (changes: True)
        self.max_queued = MAX_QUEUED
        self.queued_wait = QUEUED_WAIT
        self._followups: set[asyncio.Task[object]] = set()
        self._session: aiohttp.ClientSession | None = None
        self._closing = False

    async def __call__(self, request: Request) -> Response:
        if request.path != PATH:
            return Response(404, b"not found")
        if request.method != "POST":
            return Response(405, b"POST only")
        timestamp = request.headers.get("x-slack-request-timestamp")
        signature = request.headers.get("x-slack-signature")
        refused = check(self.secret, timestamp, signature, request.body, self.clock())
        if refused is not None:
            if len(request.body) <= 1024 and SSL_CHECK.search(request.body):
                return OK  # Slack's certificate check (bolt answers it unverified too)
            log.warning("refused a Slack request from %s: %s", request.peer, refused)
            return UNSIGNED
        assert timestamp is not None and signature is not None
        if not self.replays.first_time(signature, int(timestamp), self.clock()):
            log.info("ignored a replayed Slack request from %s", request.peer)
            return OK
        return await self._signed(request)

    async def _signed(self, request: Request) -> Response:
        content_type = request.headers.get("content-type", b"").split(b";")[0].strip().lower()
        try:
            text = request.body.decode("utf-8")
            if content_type == b"application/json":
                return self._event(json.loads(text))
            if content_type != b"application/x-www-form-urlencoded":
                return _bad("unsupported Content-Type")
            form = dict(parse_qsl(text, max_num_fields=MAX_FIELDS))
            if "payload" in form:
                return self._interaction(json.loads(form["payload"]))
        except (UnicodeDecodeError, ValueError, RecursionError):
            # json.JSONDecodeError is a ValueError; so are too many form fields.
            return _bad("malformed body")
        if "command" in form:
            return await self._command(form, request.received)
        if form.get("ssl_check") == "1":
            return OK
        return _bad("neither a slash command nor an interaction")

    def _event(self, event: object) -> Response:
        if not isinstance(event, dict):
            return _bad("malformed event")
        if event.get("type") == "url_verification" and isinstance(event.get("challenge"), str):
            return Response.json(json.dumps({"challenge": event["challenge"]}))
        who = home_opened(event)
        if who is not None and not self._closing:
            # Acknowledged now; published after, and a stop's grace waits for it. That the
            # user has a Home is remembered in the change lane (later changes re-publish it).
            lane = _Lane(self._change_executor, self)
            self._later(home_tab_opened(self.services, self.client, *who, lane))
            return OK
        log.debug("ignored an Events API callback of type %r", str(event.get("type"))[:40])
        return OK

    def _interaction(self, payload: object) -> Response:
        if not isinstance(payload, dict):
            return _bad("malformed interaction payload")
        if payload.get("type") != "block_actions":
            log.debug("ignored an interaction of type %r", str(payload.get("type"))[:40])
            return OK
        problem = check_payload(payload, self.services.settings.slack_api_url)
        if problem is not None:
            log.warning("refused a signed Slack click: %s", problem)
            return _bad(problem)
        if self._closing:
            # Acknowledged (Slack would show an error otherwise), nothing runs, and the
            # clicker is told: a vote must not look counted when it was not.
            self._later(respond(self.services, payload, CLICK_STOPPED))
            return OK
        self.clicks += 1
        # Acknowledged now (Slack waits 3 s at most); the click runs after, its writes in
        # the change lane, and a stop's grace waits for it as for command answers.
        self._later(self._click(payload))
        return OK

    def _later(self, work: Coroutine[Any, Any, object]) -> None:
        """Run `work` after the acknowledgement; a stop's grace waits for it."""
        task = asyncio.ensure_future(work)
        self._followups.add(task)
        task.add_done_callback(self._followups.discard)

    async def _click(self, payload: dict[str, Any]) -> None:
        lane = _Lane(self._change_executor, self)
        try:
            await handle_block_actions(
                self.services, self.client, payload, self.click_handlers, lane
            )
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self._closing or (current is not None and current.cancelling()):
                raise  # this click itself is being cancelled (the grace is over)
            # The stop came first: the lane refused the click's work, so nothing of it
            # was written. Its clicker saw it acknowledged; tell them it did not count.
            log.info("a Slack click was not run: Paperboy is stopping")
            await respond(self.services, payload, CLICK_STOPPED)

    async def _command(self, form: dict[str, str], received: float) -> Response:
        missing = [
            name
            for name in ("team_id", "channel_id", "user_id", "response_url")
            if not form.get(name)
        ]
        if missing:
            return _bad(f"slash command without {', '.join(missing)}")
        if not slack_url(form["response_url"], self.services.settings.slack_api_url):
            log.warning("refused a signed slash command whose response_url is not Slack's")
            return _bad("response_url is not Slack's")
        if form["command"] != COMMAND:
            return _message({"response_type": "ephemeral", "text": f"I only answer {COMMAND}."})
        if self._closing:
            return _message({"response_type": "ephemeral", "text": STOPPED})
        if self._running >= self.workers + self.max_queued:
            # Bounded memory, and answers that still come while a response_url is valid
            # (30 minutes): a stuck database must not pile up every command for later.
            log.warning("%d /papers commands waiting; refusing one", self._running)
            return _message({"response_type": "ephemeral", "text": BUSY})
        changes = writes(form.get("text", ""))
        threads = CHANGE_THREADS if changes else self.workers
        queued = self._busy[changes] >= threads
        self.commands_run += 1
        self._running += 1  # now, not when the task starts: a burst arrives in one go
        self._busy[changes] += 1
        task = asyncio.ensure_future(self._answer(form, changes))
        loop = asyncio.get_running_loop()
        budget = max(0.0, received + self.ack_budget - loop.time())
        if queued:
            # Waiting the whole budget behind a queue would only make the acknowledgements
            # late too (docs/dev/benchmarks.md), so a little at most.
            budget = min(budget, self.queued_wait)
        try:
            done, _ = await asyncio.wait({task}, timeout=budget) if budget else (set(), None)
        except asyncio.CancelledError:
            # The server's stop cut the request off before its acknowledgement (its grace
            # can be shorter than the ack budget): the answer still goes to response_url,
            # not nowhere, and the stop's grace waits for it.
            self._follow_up(form["response_url"], task)
            raise
        if done and task.cancelled():  # a stop cancelled it before it started
            return _message({"response_type": "ephemeral", "text": STOPPED})
        if done:
            first, *rest = task.result()
            if rest:
                self._follow_up(form["response_url"], _given(rest))
            return _message(first)
        self._follow_up(form["response_url"], task)
        return _message({"response_type": "ephemeral", "text": WORKING})

    async def _answer(self, form: dict[str, str], changes: bool) -> list[dict[str, Any]]:
        executor = _Lane(self._change_executor if changes else self._executor, self)
        try:
            return await answer_payloads(self.services, self.client, form, executor)
        finally:
            self._running -= 1
            self._busy[changes] -= 1

    def _follow_up(self, url: str, messages: Any) -> None:
        """Post the messages (an awaitable list) to `url` in the background."""
        self._later(self._respond(url, messages))

    async def _respond(self, url: str, messages: Any) -> None:
        try:
            payloads: list[dict[str, Any]] = await messages
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self._closing or (current is not None and current.cancelling()):
                raise  # this answer itself is being cancelled
            payloads = [{"response_type": "ephemeral", "text": STOPPED}]  # it never ran
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=RESPONSE_TIMEOUT)
            )
        for payload in payloads:
            try:
                async with self._session.post(url, json=payload) as response:
                    if response.status >= 300:
                        log.warning("response_url answered HTTP %d", response.status)
            except (aiohttp.ClientError, TimeoutError) as exc:
                log.warning("could not answer through response_url: %s", type(exc).__name__)
                return

    async def close(self, grace: float = 3.0) -> None:
        """Stop: commands still queued for a thread never start (their askers are told to
        try again); the running ones' answers, and those notices, get `grace` seconds to
        reach Slack; then close."""
        self._closing = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._change_executor.shutdown(wait=False, cancel_futures=True)
        try:
            if self._followups and grace > 0:
                await asyncio.wait(set(self._followups), timeout=grace)
        finally:
            for task in list(self._followups):
                task.cancel()
            if self._session is not None:
                await self._session.close()


class _Lane(Executor):
    """A lane's executor that takes no work once the endpoint is stopping: what is
    submitted then comes back cancelled, so its asker is told Paperboy is restarting, as
    for the commands queued at the stop."""

    def __init__(self, executor: Executor, endpoint: SlackEndpoint) -> None:
        self._executor = executor
        self._endpoint = endpoint

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if self._endpoint._closing:
            future: Future[T] = Future()
            future.cancel()
            return future
        return self._executor.submit(fn, *args, **kwargs)


def writes(text: str) -> bool:
    """Whether the command goes to the change lane: its `changes` as `handle` parses it,
    not its verb's (`feedback` reads, `feedback reset` writes)."""
    try:
        return parse(strip_unsafe(text)).changes
    except ParseError:
        return False


async def _given(value: Any) -> Any:
    return value


def _message(payload: dict[str, Any]) -> Response:
    return Response.json(json.dumps(payload, ensure_ascii=False))
