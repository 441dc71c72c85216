"""A local fake of Slack: the Web API, response_url, and a Socket Mode websocket.

Point the real slack_sdk client at `fake.api_url` (its `base_url`). Every call is
recorded in `fake.calls`; `fake.queue(method, ...)` makes the next call to a method
answer with an error, a 429 and Retry-After, or anything else; `fake.drop(method)` makes
calls to it read and record the request, then close the connection without answering.
With `limits` (a `RateLimits`), `chat.postMessage` is limited per channel and
workspace-wide as Slack does it, and a post over the limit is answered as Slack answers
it: HTTP 429, `{"ok": false, "error": "ratelimited"}` and `Retry-After` in whole seconds.
`limited` lists the posts refused so; `accepted()` the ones that were posted. With
`open_limits` (another `RateLimits`, one bucket: Slack limits each method apart),
`conversations.open` is limited the same way (Tier 3, "50+ per minute"); `open_limited`
lists the opens refused. With `views_limits` (one bucket), `views.publish` is limited the
same way (Tier 4, "100+ per minute"); `views_limited` lists the publishes refused. Each
call's `at` is `clock()` when it arrived.

Beyond posting, the fake keeps what Slack would keep, and answers as Slack does:

- `chat.update` changes a message the fake posted (`messages`, by channel and ts):
  `message_not_found` for any other ts (Slack's answer for a ts it does not know, or one in
  a channel the bot cannot see), `no_text` with neither text nor blocks, `invalid_blocks`
  (with `errors`, as Slack lists them) for blocks past Block Kit's limits (`block_errors`);
- `chat.postMessage` and `chat.update` answer `msg_blocks_too_long` for blocks carrying
  more than `MAX_BLOCKS_TEXT` characters of text together (`blocks_text`), a limit Slack
  enforces but does not document; a response_url post does not (see `MAX_BLOCKS_TEXT`);
- `conversations.open` with `users` opens (or finds) the bot's DM with that user: the same
  `D...` id every time, `no_op` and `already_open` true after the first; `user_not_found`
  for ids in `unknown_users`, `user_disabled` for those in `disabled_users` (deactivated),
  `cannot_dm_bot` for the bot itself, `users_list_not_supplied` without `users`; with
  `messages_tab` False (the app's Messages tab turned off), `chat.postMessage` to a DM
  (`D...`) answers `messages_tab_disabled`;
- `files_upload_v2`'s three steps: `files.getUploadURLExternal` (`filename` and `length`
  required, else `invalid_arguments`) answers an upload URL on this server and a file id;
  a POST to that URL stores the bytes (`OK - <length>`, as files.slack.com answers);
  `files.completeUploadExternal` shares them (`file_not_found` for an id never issued or
  never uploaded to) and records each in `uploads`;
- `views.publish` stores the user's Home view in `views` (`invalid_arguments` for a view
  that is not `home` or has no blocks or past 100 blocks; `not_enabled` when
  `home_enabled` is False; `hash_conflict` for a stale `hash`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

from tests.fakes.rate_limits import RateLimits
from tests.fakes.server import serve


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str | None
    at: float = 0.0  # `FakeSlack.clock()` when the call arrived


@dataclass
class FakeSlack:
    calls: list[Call] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)  # posts to response_url
    response_names: list[str] = field(default_factory=list)  # each one's {name} in its URL
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    admins: set[str] = field(default_factory=set)
    _queued: dict[str, deque[tuple[int, dict[str, Any], dict[str, str]]]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    _ts: int = 1_700_000_000
    _dropping: dict[str, int | None] = field(default_factory=dict)  # method: times left
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    _socket_open: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    port: int = 0
    limits: RateLimits | None = None
    limited: list[Call] = field(default_factory=list)  # posts refused by `limits`
    open_limits: RateLimits | None = None  # conversations.open's own limit
    open_limited: list[Call] = field(default_factory=list)  # opens refused by it
    views_limits: RateLimits | None = None  # views.publish's own limit
    views_limited: list[Call] = field(default_factory=list)  # publishes refused by it
    clock: Callable[[], float] = time.monotonic  # each call's `at`
    # (channel, ts) -> {"text", "blocks", "thread_ts"}: what a message shows now
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    unknown_users: set[str] = field(default_factory=set)  # conversations.open: user_not_found
    disabled_users: set[str] = field(default_factory=set)  # conversations.open: user_disabled
    messages_tab: bool = True  # False: posts to DMs answer messages_tab_disabled
    dms: dict[str, str] = field(default_factory=dict)  # user -> the DM's channel id
    uploads: list[dict[str, Any]] = field(default_factory=list)  # files shared
    _files: dict[str, dict[str, Any]] = field(default_factory=dict)  # file id -> upload
    views: dict[str, dict[str, Any]] = field(default_factory=dict)  # user -> Home view
    home_enabled: bool = True
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"http://127.0.0.1:{self.port}/respond/{name}"

    def queue(
        self,
        method: str,
        body: dict[str, Any],
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._queued[method].append((status, body, headers or {}))

    def drop(self, method: str, times: int | None = None) -> None:
        """Read, record, then drop the connection for the next `times` calls (None: all)."""
        self._dropping[method] = times

    def posted(self, method: str = "chat.postMessage") -> list[dict[str, Any]]:
        return [call.args for call in self.calls if call.method == method]

    def accepted(self) -> list[dict[str, Any]]:
        """The `chat.postMessage` calls that posted a message (not refused with a 429)."""
        refused = {id(call) for call in self.limited}
        return [
            call.args
            for call in self.calls
            if call.method == "chat.postMessage" and id(call) not in refused
        ]

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/socket", self._socket)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        for socket in self._sockets:
            await socket.close()
        if self._runner:
            await self._runner.cleanup()

    async def _args(self, request: web.Request) -> dict[str, Any]:
        if request.method == "GET":
            return dict(request.query)
        raw = await request.text()
        # slack_sdk sends some methods' arguments (`params=`) in the query string of a POST
        query = dict(request.query)
        if request.content_type == "application/json":
            return {**query, **json.loads(raw or "{}")}
        return {**query, **dict(parse_qsl(raw))}

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._args(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or None
        self.calls.append(Call(method, args, token, self.clock()))
        if method in self._dropping:
            left = self._dropping[method]
            if left is not None:
                if left <= 1:
                    del self._dropping[method]
                else:
                    self._dropping[method] = left - 1
            assert request.transport is not None
            request.transport.close()  # the request arrived; its answer never will
            return web.Response()
        if self._queued[method]:
            status, body, headers = self._queued[method].popleft()
            return web.json_response(body, status=status, headers=headers)
        # method -> (its limits, the list of calls they refused, the bucket): posts are
        # limited per channel, conversations.open and views.publish each in one bucket
        limited = {
            "chat.postMessage": (self.limits, self.limited, str(args.get("channel"))),
            "conversations.open": (self.open_limits, self.open_limited, method),
            "views.publish": (self.views_limits, self.views_limited, method),
        }.get(method)
        if limited is not None and limited[0] is not None:
            limits, refused, bucket = limited
            verdict = limits.admit(bucket)
            if not verdict.ok:
                refused.append(self.calls[-1])
                return web.json_response(
                    {"ok": False, "error": "ratelimited"},
                    status=429,
                    headers={"Retry-After": str(max(1, math.ceil(verdict.retry_after)))},
                )
        return web.json_response(self._default(method, args))

    def _default(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "user_id": "UBOT",
                "team_id": "T0001",
                "bot_id": "B0001",
                "user": "paperboy",
            }
        if method == "chat.postMessage":
            if not self.messages_tab and str(args.get("channel")).startswith("D"):
                return {"ok": False, "error": "messages_tab_disabled"}
            blocks = _blocks(args.get("blocks")) or []
            refused = _refused(blocks)
            if refused is not None:
                return refused
            self._ts += 1
            ts = f"{self._ts}.000100"
            self.messages[(str(args.get("channel")), ts)] = {
                "text": args.get("text", ""),
                "blocks": blocks,
                "thread_ts": args.get("thread_ts"),
            }
            return {"ok": True, "channel": args.get("channel"), "ts": ts}
        if method == "chat.update":
            return self._update(args)
        if method == "conversations.open":
            return self._open(args)
        if method == "files.getUploadURLExternal":
            return self._upload_url(args)
        if method == "files.completeUploadExternal":
            return self._complete_upload(args)
        if method == "views.publish":
            return self._publish(args)
        if method == "users.info":
            user = args.get("user")
            return {"ok": True, "user": {"id": user, "is_admin": user in self.admins}}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}
        return {"ok": False, "error": "unknown_method"}

    def remember(self, channel: str, ts: str, blocks: list[dict[str, Any]], text: str = "") -> None:
        """A message the bot posted earlier (as if through chat.postMessage)."""
        self.messages[(channel, ts)] = {"text": text, "blocks": blocks, "thread_ts": None}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        key = (str(args.get("channel")), str(args.get("ts")))
        if not args.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        blocks = _blocks(args.get("blocks"))
        if not args.get("text") and not blocks:
            return {"ok": False, "error": "no_text"}
        refused = _refused(blocks or [])
        if refused is not None:
            return refused
        message = self.messages[key]
        if blocks is not None:
            message["blocks"] = blocks
        if args.get("text"):
            message["text"] = args["text"]
        return {
            "ok": True,
            "channel": key[0],
            "ts": key[1],
            "text": message["text"],
            "message": {"type": "message", "user": "UBOT", "bot_id": "B0001", **message},
        }

    def _open(self, args: dict[str, Any]) -> dict[str, Any]:
        users = [user for user in str(args.get("users") or "").split(",") if user]
        if not users:
            return {"ok": False, "error": "users_list_not_supplied"}
        if len(users) > 1:
            return {"ok": False, "error": "not_implemented"}  # group DMs: not Paperboy's
        user = users[0]
        if user in self.unknown_users:
            return {"ok": False, "error": "user_not_found"}
        if user in self.disabled_users:
            return {"ok": False, "error": "user_disabled"}
        if user == "UBOT":
            return {"ok": False, "error": "cannot_dm_bot"}
        if user in self.dms:
            channel = {"id": self.dms[user]}
            return {"ok": True, "no_op": True, "already_open": True, "channel": channel}
        self.dms[user] = f"D{next(self._ids):08d}"
        return {"ok": True, "channel": {"id": self.dms[user]}}

    def _upload_url(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            length = int(args["length"])
        except (KeyError, ValueError):
            return {"ok": False, "error": "invalid_arguments"}
        if not args.get("filename") or length < 1:
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._ids):08d}"
        self._files[file_id] = {"filename": args["filename"], "length": length, "data": None}
        upload_url = f"http://127.0.0.1:{self.port}/upload/{file_id}"
        return {"ok": True, "upload_url": upload_url, "file_id": file_id}

    async def _upload(self, request: web.Request) -> web.Response:
        pending = self._files.get(request.match_info["file_id"])
        if pending is None:
            return web.Response(status=404, text="not found")
        pending["data"] = await request.read()
        return web.Response(text=f"OK - {len(pending['data'])}")

    def _complete_upload(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            files = args["files"]
            files = json.loads(files) if isinstance(files, str) else files
            ids = [(str(item["id"]), item.get("title")) for item in files]
        except (KeyError, TypeError, ValueError):
            return {"ok": False, "error": "invalid_arguments"}
        if not ids or any(self._files.get(i, {}).get("data") is None for i, _ in ids):
            return {"ok": False, "error": "file_not_found"}
        shared = []
        for file_id, title in ids:
            pending = self._files.pop(file_id)
            record = {
                "id": file_id,
                "name": pending["filename"],
                "title": title or pending["filename"],
                "content": pending["data"],
                "channel_id": args.get("channel_id"),
                "initial_comment": args.get("initial_comment"),
            }
            self.uploads.append(record)
            shared.append({"id": file_id, "name": record["name"], "title": record["title"]})
        return {"ok": True, "files": shared}

    def _publish(self, args: dict[str, Any]) -> dict[str, Any]:
        view = args.get("view")
        try:
            view = json.loads(view) if isinstance(view, str) else view
        except ValueError:
            view = None
        if not args.get("user_id") or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        if view.get("type") != "home":
            return _invalid_arguments("[ERROR] must be 'home' [json-pointer:/view/type]")
        blocks = view.get("blocks")
        if not isinstance(blocks, list) or not blocks:
            return _invalid_arguments("[ERROR] missing required field: blocks [json-pointer:/view]")
        if len(blocks) > 100:
            return _invalid_arguments(
                "[ERROR] no more than 100 items allowed [json-pointer:/view/blocks]"
            )
        errors = block_errors(blocks, max_blocks=100)
        if errors:
            return _invalid_arguments(*(f"[ERROR] {error}" for error in errors))
        if not self.home_enabled:
            return {"ok": False, "error": "not_enabled"}
        user = str(args["user_id"])
        previous = self.views.get(user)
        if args.get("hash") and previous is not None and args["hash"] != previous["hash"]:
            return {"ok": False, "error": "hash_conflict"}
        self._ts += 1
        stored = {
            **view,
            "id": previous["id"] if previous else f"V{next(self._ids):08d}",
            "team_id": "T0001",
            "hash": f"{self._ts}.{next(self._ids):08d}",
            "app_id": "A0001",
            "bot_id": "B0001",
        }
        self.views[user] = stored
        return {"ok": True, "view": stored}

    async def _respond(self, request: web.Request) -> web.Response:
        self.responses.append(await self._args(request))
        self.response_names.append(request.match_info["name"])
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {},
                "connection_info": {"app_id": "A0001"},
            }
        )
        self._socket_open.set()
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                self.socket_acks.append(json.loads(message.data))
        return socket

    async def send_envelope(self, envelope: dict[str, Any]) -> None:
        """Push a Socket Mode envelope to the connected app."""
        await asyncio.wait_for(self._socket_open.wait(), 10)
        await self._sockets[-1].send_json(envelope)


def _blocks(value: Any) -> list[dict[str, Any]] | None:
    """Blocks as sent: a list (JSON body) or a JSON string (form body)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, list) else None


# Slack refuses a message whose blocks carry too much text together with
# `msg_blocks_too_long`, a limit it does not document. A Slack engineer put it at "12,000
# text characters with a buffer for block containers" (slackapi/bolt-js#2509, which saw
# refusals from ~13,200 characters); bolt-js#2867 was refused at 11,341 characters of
# text, so the real limit can be lower: the fake refuses past 12,000, counted by
# `blocks_text`. Replies through response_url were not refused (bolt-js#2867): nor are
# they here.
MAX_BLOCKS_TEXT = 12_000
MAX_ACTION_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_ID = 255  # action_id and block_id


def block_errors(blocks: list[dict[str, Any]], max_blocks: int = 50) -> list[str]:
    """What Slack says is wrong with these blocks, in its words (the fake's own check,
    written from Slack's Block Kit reference, not from Paperboy's `limits`)."""
    errors = []
    if len(blocks) > max_blocks:
        errors.append(f"no more than {max_blocks} items allowed [json-pointer:/blocks]")
    seen: set[str] = set()
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):  # Slack answers invalid_blocks; it never fails
            errors.append(f"expected an object [json-pointer:/blocks/{index}]")
            continue
        block_id = block.get("block_id")
        if block_id is not None and not isinstance(block_id, str):
            errors.append(f"expected a string [json-pointer:/blocks/{index}/block_id]")
        elif block_id is not None:
            if block_id in seen:
                errors.append(f"duplicate block_id [json-pointer:/blocks/{index}/block_id]")
            if len(str(block_id)) > MAX_ID:
                errors.append(f"must be less than 256 characters [json-pointer:/blocks/{index}]")
            seen.add(str(block_id))
        if block.get("type") != "actions":
            continue
        elements = block.get("elements") or []
        where = f"[json-pointer:/blocks/{index}/elements]"
        if not isinstance(elements, list) or not all(isinstance(e, dict) for e in elements):
            errors.append(f"expected an array of objects {where}")
            continue
        if not elements:
            errors.append(f"must provide at least 1 items {where}")
        if len(elements) > MAX_ACTION_ELEMENTS:
            errors.append(f"must provide no more than {MAX_ACTION_ELEMENTS} items {where}")
        action_ids = [element.get("action_id") for element in elements]
        if len(set(action_ids)) != len(action_ids):
            errors.append(f"duplicate action_id {where}")
        for element in elements:
            if element.get("type") != "button":
                continue
            if len(str(element.get("text", {}).get("text", ""))) > MAX_BUTTON_TEXT:
                errors.append(f"must be less than {MAX_BUTTON_TEXT + 1} characters {where}")
            if len(str(element.get("value", ""))) > MAX_BUTTON_VALUE:
                errors.append(f"must be less than {MAX_BUTTON_VALUE + 1} characters {where}")
            if len(str(element.get("action_id", ""))) > MAX_ID:
                errors.append(f"must be less than {MAX_ID + 1} characters {where}")
    return errors


def blocks_text(value: Any) -> int:
    """Characters of text in blocks: every string under a "text" key, at any depth (as
    bolt-js#2867 measured them), written here apart from Paperboy's own count."""
    if isinstance(value, list):
        return sum(blocks_text(item) for item in value)
    if not isinstance(value, dict):
        return 0
    own = value.get("text")
    return (len(own) if isinstance(own, str) else 0) + sum(
        blocks_text(item) for item in value.values() if isinstance(item, (dict, list))
    )


def _refused(blocks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Slack's answer to a message (posted or updated) whose blocks it refuses, else None."""
    errors = block_errors(blocks)
    if errors:
        return _invalid_blocks(errors)
    if blocks_text(blocks) > MAX_BLOCKS_TEXT:
        return {"ok": False, "error": "msg_blocks_too_long"}
    return None


def _invalid_blocks(errors: list[str]) -> dict[str, Any]:
    return {
        "ok": False,
        "error": "invalid_blocks",
        "errors": errors,
        "response_metadata": {"messages": [f"[ERROR] {error}" for error in errors]},
    }


def _invalid_arguments(*messages: str) -> dict[str, Any]:
    return {
        "ok": False,
        "error": "invalid_arguments",
        "response_metadata": {"messages": list(messages)},
    }
