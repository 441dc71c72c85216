"""A fake OpenReview API v2 (`GET /notes`) on loopback, shaped like the real one.

Notes carry `content.FIELD.value`, epoch-millisecond dates, `/pdf/ID.pdf` paths; paging
by `offset`/`limit` with the total in `count`. Quirks on demand: `empty_once` (offsets
answered with no notes once), `failures` (status, Retry-After) for the next requests,
`malformed` (next N answers are cut-off JSON). Requests are recorded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


def note(
    note_id: str,
    title: str,
    abstract: str,
    *,
    venueid: str = "ICLR.cc/2025/Conference",
    venue: str = "ICLR 2025 Poster",
    authors: tuple[str, ...] = ("Ada Lovelace",),
    keywords: list[str] | None = None,
    tldr: str | None = None,
    cdate: int = 1727740800000,  # 2024-10-01
    pdate: int | None = 1737936000000,  # 2025-01-27
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    content: dict[str, Any] = {
        "title": {"value": title},
        "abstract": {"value": abstract},
        "authors": {"value": list(authors)},
        "authorids": {"value": [f"~{a.replace(' ', '_')}1" for a in authors]},
        "venue": {"value": venue},
        "venueid": {"value": venueid},
        "pdf": {"value": f"/pdf/{note_id}.pdf"},
        "primary_area": {"value": "reinforcement learning"},
    }
    if keywords is not None:
        content["keywords"] = {"value": keywords}
    if tldr is not None:
        content["TLDR"] = {"value": tldr}
    content.update({k: {"value": v} for k, v in (extra or {}).items()})
    return {
        "id": note_id,
        "forum": note_id,
        "number": 1000,
        "invitations": [f"{venueid}/-/Submission"],
        "domain": venueid,
        "cdate": cdate,
        "pdate": pdate,
        "mdate": cdate,
        "tmdate": cdate + 1000,
        "signatures": [f"{venueid}/Submission1000/Authors"],
        "readers": ["everyone"],
        "writers": [venueid],
        "license": "CC BY 4.0",
        "version": 2,
        "content": content,
    }


@dataclass
class Seen:
    at: float
    params: dict[str, str]
    user_agent: str


@dataclass
class FakeOpenReview:
    notes: list[dict[str, Any]] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic
    empty_once: set[int] = field(default_factory=set)
    failures: list[tuple[int, str | None]] = field(default_factory=list)
    malformed: int = 0
    requests: list[Seen] = field(default_factory=list)

    async def list_notes(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        self.requests.append(Seen(self.clock(), params, request.headers.get("User-Agent", "")))
        if self.failures:
            status, retry_after = self.failures.pop(0)
            headers = {"Retry-After": retry_after} if retry_after else {}
            return web.json_response(
                {"name": "ServerError", "message": "busy"}, status=status, headers=headers
            )
        venueid = params.get("content.venueid")
        found = [
            n for n in self.notes if venueid is None or n["content"]["venueid"]["value"] == venueid
        ]
        offset = int(params.get("offset", "0"))
        limit = int(params.get("limit", "1000"))
        page = found[offset : offset + limit]
        if offset in self.empty_once:
            self.empty_once.discard(offset)
            page = []
        text = json.dumps({"notes": page, "count": len(found)})
        if self.malformed:
            self.malformed -= 1
            text = text[: len(text) // 2]
        return web.Response(text=text, content_type="application/json")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/notes", self.list_notes)
        return app
