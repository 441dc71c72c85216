"""A local fake of Discord's REST API, as discord.py's HTTP client reaches it.

Two details of discord.py shape it: JSON is parsed only when Content-Type is exactly
`application/json`, and a 429 without a `Via` header is taken for a Cloudflare ban.
Like Discord ("if another message was created by the same author with the same nonce,
that message will be returned"), a message with `enforce_nonce` and a nonce the bot
already used, in any channel, returns the existing message instead of creating another
(`created` lists the messages really created). `drop(route)` makes the next matching request create its
message, then lose the answer (the connection closes).

With `limits` (a `RateLimits`), `POST /channels/{id}/messages` is limited per channel (its
route's bucket) and globally, as Discord does it: every answer carries the channel
bucket's `X-RateLimit-Limit`, `-Remaining`, `-Reset`, `-Reset-After` and `-Bucket`, and a
post over a limit is answered 429 with `{"message": "You are being rate limited.",
"retry_after": 0.5, "global": false}` (seconds, a float), `Retry-After`, `X-RateLimit-Scope`
and, for the global limit, `X-RateLimit-Global: true`. `limited` lists the refused ones.
Opening a DM (`POST /users/@me/channels`) counts against the global limit too, as every
request does on Discord (its own bucket is the route's, keyed "@me").

Direct messages (personal digests): `POST /users/@me/channels` with a
`recipient_id` opens the bot's DM channel with that user (type 1, the same id every time:
`dms`); an id in `unknown_users` is answered 400 `Invalid Recipient(s)` (code 50033). The
DM opens even for a user who refuses DMs (`dm_refused`: no shared server, or "allow direct
messages" off); a message to it is then answered 403 `Cannot send messages to this user`
(code 50007), as Discord does.

Components: a message keeps the `components` it was posted with, and
`messages` holds every created message by id, as Discord has it now. `click(message,
custom_id)` is the INTERACTION_CREATE a user's click on one of its buttons makes (type 3,
MESSAGE_COMPONENT, with the message, the member and `data.custom_id`); the fake remembers
which message an interaction's token is for, so an answer that updates the message
(callback type 7, or type 6 then `PATCH /webhooks/{app}/{token}/messages/@original`) or a
`PATCH /channels/{id}/messages/{id}` edits it there; `edits` lists those edits. A
multipart request (a file) is recorded as its `payload_json` plus `files` (name, text);
a file over `upload_limit` bytes is refused 413 (code 40005), as Discord refuses it.

A message Discord would not take is refused as Discord refuses it (`invalid_form`, counted
here, not with Paperboy's `digests.render.limits`): over 2,000 characters of content, more
than 10 embeds, embeds over 6,000 characters together (title, description, field names and
values, footer text, author name), or one field of an embed over its own cap is answered 400
`{"code": 50035, "message": "Invalid Form Body", "errors": {...}}`, the `errors` nested by
the body's path down to `_errors` (discord.py flattens them into its text as "In
embeds.0.description: Must be 4096 or fewer in length."); a message with no content,
embeds, components or files is answered 400 `Cannot send an empty message` (code 50006).
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import math
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.rate_limits import RateLimits, Verdict
from tests.fakes.server import serve

APP_ID = "200000000000000000"
BOT_ID = "100000000000000000"
BOT_USER = {
    "id": BOT_ID,
    "username": "paperboy",
    "discriminator": "0",
    "global_name": None,
    "avatar": None,
    "bot": True,
}


@dataclass(frozen=True)
class RawBody:
    """A queued answer's bytes, sent as they are (`FakeDiscord.queue(..., raw=True)`)."""

    data: bytes


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=body.data if isinstance(body, RawBody) else json.dumps(body).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


BUCKET = "f0a1b2c3d4e5f60718293a4b5c6d7e8f"  # the hash of the create-message route's bucket


def bucket_headers(verdict: Verdict) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(verdict.limit),
        "X-RateLimit-Remaining": str(verdict.remaining),
        "X-RateLimit-Reset": f"{time.time() + verdict.reset_after:.3f}",
        "X-RateLimit-Reset-After": f"{verdict.reset_after:.3f}",
        "X-RateLimit-Bucket": BUCKET,
    }


def rate_limited(verdict: Verdict) -> web.Response:
    """A 429 as Discord sends it (`Via`: discord.py takes a 429 without it for Cloudflare's)."""
    is_global = verdict.scope == "global"
    headers = {
        "Via": "1.1 google",
        "Retry-After": str(max(1, math.ceil(verdict.retry_after))),
        "X-RateLimit-Scope": "global" if is_global else "user",
    }
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    else:
        headers.update(bucket_headers(verdict))
    body = {
        "message": "You are being rate limited.",
        "retry_after": verdict.retry_after,
        "global": is_global,
    }
    return json_response(body, status=429, headers=headers)


_interaction_ids = itertools.count(800000000000000000)


def multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart/form-data body as discord.py sends files: its `payload_json` (the
    message) and `files`, each {"filename", "content" (text)}."""
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    body: dict[str, Any] = {"files": []}
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        content = part.get_payload(decode=True) or b""
        if name == "payload_json":
            body.update(json.loads(content))
        else:
            body["files"].append(
                {"filename": part.get_filename(), "content": content.decode(errors="replace")}
            )
            body.setdefault("_sizes", []).append(len(content))
    return body


# Discord's caps (https://discord.com/developers/docs/resources/message#embed-object-embed-limits).
MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_EMBEDS_TOTAL = 6000
EMBED_CAPS = {"title": 256, "description": 4096}
FIELD_CAPS = {"name": 256, "value": 1024}


def _too_long(limit: int) -> dict[str, Any]:
    return {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {limit} or fewer in length."}]}  # fmt: skip


def embeds_total(embeds: list[dict[str, Any]]) -> int:
    """The characters Discord counts against an embed's 6,000: title, description, field
    names and values, footer text and author name, of every embed of the message."""
    total = 0
    for embed in embeds:
        total += len(embed.get("title") or "") + len(embed.get("description") or "")
        total += sum(
            len(f.get("name") or "") + len(f.get("value") or "") for f in embed.get("fields") or []
        )
        total += len((embed.get("footer") or {}).get("text") or "")
        total += len((embed.get("author") or {}).get("name") or "")
    return total


def invalid_form(body: dict[str, Any]) -> web.Response | None:
    """Discord's 400 for a message it will not take (50035 or 50006); None: it takes it."""
    content = body.get("content") or ""
    embeds = body.get("embeds") or []
    if not (
        content or embeds or body.get("components") or body.get("files") or body.get("attachments")
    ):
        return json_response({"message": "Cannot send an empty message", "code": 50006}, 400)  # fmt: skip
    errors: dict[str, Any] = {}
    if len(content) > MAX_CONTENT:
        errors["content"] = _too_long(MAX_CONTENT)
    if len(embeds) > MAX_EMBEDS:
        errors["embeds"] = _too_long(MAX_EMBEDS)
    elif embeds_total(embeds) > MAX_EMBEDS_TOTAL:
        errors["embeds"] = {"_errors": [{"code": "MAX_EMBED_SIZE_EXCEEDED", "message": f"Embed size exceeds maximum size of {MAX_EMBEDS_TOTAL}"}]}  # fmt: skip
    else:
        for n, embed in enumerate(embeds):
            wrong = {
                key: _too_long(cap)
                for key, cap in EMBED_CAPS.items()
                if len(embed.get(key) or "") > cap
            }
            for m, fld in enumerate(embed.get("fields") or []):
                bad = {
                    key: _too_long(cap)
                    for key, cap in FIELD_CAPS.items()
                    if len(fld.get(key) or "") > cap
                }
                if bad:
                    wrong.setdefault("fields", {})[str(m)] = bad
            if wrong:
                errors.setdefault("embeds", {})[str(n)] = wrong
    if not errors:
        return None
    return json_response({"code": 50035, "message": "Invalid Form Body", "errors": errors}, 400)


@dataclass
class Request:
    method: str
    path: str
    body: Any
    authorization: str | None


@dataclass
class FakeDiscord:
    requests: list[Request] = field(default_factory=list)
    _queued: dict[str, deque[tuple[int, Any, dict[str, str]]]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    _next_id: int = 300000000000000000
    _runner: web.AppRunner | None = None
    port: int = 0
    token_ok: bool = True
    created: list[dict[str, Any]] = field(default_factory=list)
    _by_nonce: dict[str, dict[str, Any]] = field(default_factory=dict)
    _dropping: dict[str, int] = field(default_factory=dict)
    limits: RateLimits | None = None
    limited: list[Request] = field(default_factory=list)  # posts refused by `limits`
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> as it is now
    edits: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (message id, body)
    _clicked: dict[str, str] = field(default_factory=dict)  # interaction token -> message id
    dms: dict[str, str] = field(default_factory=dict)  # user id -> the DM channel's id
    unknown_users: set[str] = field(default_factory=set)  # opening a DM: 50033
    dm_refused: set[str] = field(default_factory=set)  # messages to their DM: 50007
    upload_limit: int = 10485760  # bytes per file; more is refused 413 (40005), as Discord does

    def drop(self, route: str, times: int = 1) -> None:
        """The next `times` requests ending with `route` are handled, then their answer is
        lost: the connection closes."""
        self._dropping[route] = times

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    def queue(
        self,
        route: str,
        body: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
        *,
        raw: bool = False,
    ) -> None:
        """Answer the next request whose path ends with `route` (e.g. "/messages") with this.
        `raw`: `body` is bytes, sent as they are (as JSON's Content-Type all the same)."""
        self._queued[route].append((status, RawBody(body) if raw else body, headers or {}))

    def queue_rate_limit(self, route: str, retry_after: float = 0.05) -> None:
        body = {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": False,
        }
        headers = {
            "Via": "1.1 google",
            "Retry-After": str(retry_after),
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset-After": str(retry_after),
            "X-RateLimit-Bucket": "fakebucket",
            "X-RateLimit-Scope": "user",
        }
        self.queue(route, body, status=429, headers=headers)

    def made(self, method: str, suffix: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and r.path.endswith(suffix)]

    def channel_messages(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.method == "POST" and "/channels/" in r.path]

    def callbacks(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/callback")]

    def followups(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.method == "POST" and "/webhooks/" in r.path]

    def click(
        self,
        message: dict[str, Any],
        custom_id: str,
        *,
        user_id: str = "500000000000000000",
        guild_id: str = "111111111111111111",
        channel_id: str | None = None,
        component_type: int = 2,
        dm: bool = False,
        thread: str | None = None,
        thread_parent: str | None = None,
    ) -> dict[str, Any]:
        """The INTERACTION_CREATE payload of a click on `message`'s button `custom_id`
        (a message of `messages`, or any message dict; `channel_id`: where the click
        happened, the message's channel by default). `dm`: in the user's direct messages
        with the bot, as Discord sends it there (no guild, `user` instead of `member`).
        `thread`: clicked from within that public thread (its id; a thread started from a
        message has that message's id), whose parent is `thread_parent` (the message's
        channel by default): `channel_id` and `channel` are the thread's, a thread channel
        object with `parent_id` and `thread_metadata` as discord.py reads it; the message
        keeps its own `channel_id`."""
        number = next(_interaction_ids)
        token = f"component-token-{number}"
        self._clicked[token] = str(message["id"])
        channel_id = channel_id or str(message["channel_id"])
        payload: dict[str, Any] = {
            "id": str(number),
            "application_id": APP_ID,
            "type": 3,
            "token": token,
            "version": 1,
            "guild_id": guild_id,
            "channel_id": channel_id,
            "channel": {"id": channel_id, "type": 0, "guild_id": guild_id, "name": "papers",
                        "position": 0, "permission_overwrites": [], "nsfw": False, "parent_id": None},
            "member": {
                "user": {"id": user_id, "username": f"user{user_id[-4:]}", "discriminator": "0",
                         "global_name": None, "avatar": None},
                "roles": [], "permissions": "0", "joined_at": "2025-01-01T00:00:00+00:00",
                "deaf": False, "mute": False, "flags": 0, "nick": None, "avatar": None,
                "pending": False,
            },
            "message": {**message, "channel_id": channel_id},
            "app_permissions": str((1 << 10) | (1 << 11) | (1 << 14) | (1 << 38)),
            "attachment_size_limit": 10485760,
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": guild_id},
            "context": 0,
            "data": {"custom_id": custom_id, "component_type": component_type},
        }  # fmt: skip
        if thread is not None:
            parent = thread_parent or str(message["channel_id"])
            payload["channel_id"] = thread
            payload["channel"] = {"id": thread, "type": 11, "guild_id": guild_id, "name": "papers talk",
                                  "parent_id": parent, "owner_id": user_id, "message_count": 1,
                                  "member_count": 1, "flags": 0, "rate_limit_per_user": 0,
                                  "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                                      "archive_timestamp": "2026-11-30T09:05:00+00:00",
                                                      "locked": False}}  # fmt: skip
            payload["message"]["channel_id"] = str(message["channel_id"])
        if dm:
            user = payload.pop("member")["user"]
            del payload["guild_id"]
            payload.update(user=user, context=1, authorizing_integration_owners={"1": user["id"]})
            payload["channel"] = {"id": channel_id, "type": 1, "last_message_id": None,
                                  "flags": 0, "recipients": [user]}  # fmt: skip
        return payload

    def _edit(self, message_id: str | None, body: dict[str, Any]) -> dict[str, Any] | None:
        message = self.messages.get(message_id or "")
        if message is None:
            return None
        for key in ("content", "embeds", "components"):
            if key in body:
                message[key] = (
                    body[key] if body[key] is not None else ([] if key != "content" else "")
                )
        message["edited_timestamp"] = "2026-11-30T09:01:00.000000+00:00"
        self.edits.append((str(message_id), body))
        return message

    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_route("*", "/api/v10/{tail:.*}", self._handle)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    def _id(self) -> str:
        self._next_id += 1
        return str(self._next_id)

    async def _handle(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        raw = await request.read()
        body: Any = None
        if raw:
            if request.content_type == "application/json":
                body = json.loads(raw)
            elif request.content_type == "multipart/form-data":  # files, as discord.py sends them
                body = multipart(request.headers["Content-Type"], raw)
            else:
                body = {"raw": raw.decode(errors="replace")}
        sizes = body.pop("_sizes", []) if isinstance(body, dict) else []
        self.requests.append(
            Request(request.method, path, body, request.headers.get("Authorization"))
        )
        if any(size > self.upload_limit for size in sizes):
            return json_response({"message": "Request entity too large", "code": 40005}, 413)
        for route, queued in self._queued.items():
            if queued and path.endswith(route):
                status, answer, headers = queued.popleft()
                return json_response(answer, status, headers)
        verdict = None
        if self.limits is not None and request.method == "POST" and path == "/users/@me/channels":
            verdict = self.limits.admit("@me")
            if not verdict.ok:
                self.limited.append(self.requests[-1])
                return rate_limited(verdict)
            verdict = None  # its answer carries no channel bucket's headers
        if (
            self.limits is not None
            and request.method == "POST"
            and path.startswith("/channels/")
            and path.endswith("/messages")
        ):
            verdict = self.limits.admit(path.split("/")[2])
            if not verdict.ok:
                self.limited.append(self.requests[-1])
                return rate_limited(verdict)
        response = self._default(request.method, path, body)
        if verdict is not None:
            response.headers.update(bucket_headers(verdict))
        for route, left in list(self._dropping.items()):
            if left and path.endswith(route):
                self._dropping[route] = left - 1
                assert request.transport is not None
                request.transport.close()  # done, but the answer never arrives
        return response

    def _message(self, channel_id: str, body: dict[str, Any] | None) -> dict[str, Any]:
        body = body or {}
        return {
            "id": self._id(),
            "channel_id": channel_id,
            "type": 0,
            "author": BOT_USER,
            "content": body.get("content") or "",
            "timestamp": "2026-11-30T09:00:00.000000+00:00",
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "pinned": False,
            "flags": body.get("flags", 0),
            "components": body.get("components") or [],
            "nonce": body.get("nonce"),
        }

    def _default(self, method: str, path: str, body: Any) -> web.Response:
        if path == "/users/@me/channels" and method == "POST":
            return self._open_dm(body)
        if path == "/users/@me":
            if not self.token_ok:
                return json_response({"message": "401: Unauthorized", "code": 0}, status=401)
            return json_response(BOT_USER)
        if path == "/oauth2/applications/@me":
            return json_response(
                {
                    "id": APP_ID, "name": "Paperboy", "icon": None, "description": "", "bot_public": True,
                    "bot_require_code_grant": False, "owner": BOT_USER, "verify_key": "0" * 64, "flags": 0,
                    "summary": "", "team": None, "interactions_endpoint_url": None,
                }
            )  # fmt: skip
        if path.endswith("/commands") and method == "PUT":
            return json_response(
                [
                    {**command, "id": self._id(), "application_id": APP_ID, "version": "1"}
                    for command in body or []
                ]
            )
        if path.endswith("/callback"):  # discord.py asks ?with_response=1
            kind = (body or {}).get("type", 4)
            data = (body or {}).get("data") or {}
            clicked = self._clicked.get(path.split("/")[3])
            if kind == 7:  # UPDATE_MESSAGE: the clicked message, edited
                updated = self._edit(clicked, data)
                if updated is None:
                    return json_response({"message": "Unknown Message", "code": 10008}, 404)
                return json_response(
                    {"interaction": {"id": path.split("/")[2], "type": 3},
                     "resource": {"type": 7, "message": updated}}
                )  # fmt: skip
            answer: dict[str, Any] = {
                "interaction": {
                    "id": path.split("/")[2],
                    "type": 2,
                    "response_message_loading": kind == 5,
                    "response_message_ephemeral": bool(data.get("flags", 0) & 64),
                },
                "resource": {"type": kind},
            }
            if kind in (4, 5):
                message = self._message("0", data)
                answer["interaction"]["response_message_id"] = message["id"]
                answer["resource"]["message"] = message
            return json_response(answer)
        if path.startswith("/webhooks/") and method == "POST":
            return json_response(self._message("0", body))
        if path.startswith("/webhooks/") and method == "PATCH":
            token = path.split("/")[3]
            if token in self._clicked and path.endswith("/messages/@original"):
                # After a deferred update (type 6), @original is the clicked message.
                updated = self._edit(self._clicked[token], body or {})
                if updated is not None:
                    return json_response(updated)
            return json_response(self._message("0", body))
        if path.startswith("/channels/") and "/messages/" in path and method == "PATCH":
            updated = self._edit(path.rsplit("/", 1)[1], body or {})
            if updated is None:
                return json_response({"message": "Unknown Message", "code": 10008}, 404)
            return json_response(updated)
        refused = {self.dms[user] for user in self.dm_refused if user in self.dms}
        if method == "POST" and path.endswith("/messages") and path.split("/")[2] in refused:
            body = {"message": "Cannot send messages to this user", "code": 50007}
            return json_response(body, status=403)
        if path.startswith("/channels/") and path.endswith("/messages") and method == "POST":
            invalid = invalid_form(body or {})
            if invalid is not None:
                return invalid
            channel_id = path.split("/")[2]
            nonce = (body or {}).get("nonce")
            if nonce and (body or {}).get("enforce_nonce"):
                known = self._by_nonce.get(str(nonce))  # per author: the bot
                if known is not None:
                    return json_response(known)
            message = self._message(channel_id, body)
            self.created.append(message)
            self.messages[message["id"]] = message
            if nonce:
                self._by_nonce[str(nonce)] = message
            return json_response(message)
        return json_response({"message": "404: Not Found", "code": 0}, status=404)

    def _open_dm(self, body: Any) -> web.Response:
        """`POST /users/@me/channels`: the DM channel with `recipient_id`, as Discord
        answers it (a DM channel object, type 1, its recipient)."""
        user = str((body or {}).get("recipient_id") or "")
        if not user.isdigit() or user in self.unknown_users:
            return json_response({"message": "Invalid Recipient(s)", "code": 50033}, status=400)
        channel = self.dms.setdefault(user, self._id())
        recipient = {"id": user, "username": f"user{user[-4:]}", "discriminator": "0",
                     "global_name": None, "avatar": None}  # fmt: skip
        return json_response(
            {"id": channel, "type": 1, "last_message_id": None, "flags": 0,
             "recipients": [recipient]}
        )  # fmt: skip
