"""A `/papers` command as Slack sends it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import signed_headers, slash_body


async def slash(
    http: Any, fake: FakeSlack, text: str, *, channel: str, name: str, user: str = "U0001"
) -> dict[str, Any]:
    """`/papers TEXT` by `user` in conversation `channel` named `name` (as Slack names
    them: `directmessage`, `mpdm-…`, or the channel's name), over the HTTP endpoint."""
    fields = dict(parse_qsl(slash_body(text, fake.response_url(), user=user, channel=channel)))
    body = urlencode(fields | {"channel_name": name})
    response = await http.post("/slack/events", data=body, headers=signed_headers(body))
    assert response.status == 200
    answer: dict[str, Any] = json.loads(await response.text())
    return answer
