"""Slash-command requests signed exactly as Slack signs them."""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import urlencode

SIGNING_SECRET = "8f742231b10e8888abcd99aaabbb85a5"
BOT_TOKEN = "xoxb-1234567890-test-token"
APP_TOKEN = "xapp-1-A0001-test-app-token"


def slash_body(
    text: str,
    response_url: str,
    *,
    user: str = "U0001",
    channel: str = "C0001",
    team: str = "T0001",
) -> str:
    return urlencode(
        {
            "token": "legacy-verification-token",
            "team_id": team,
            "team_domain": "lab",
            "channel_id": channel,
            "channel_name": "papers",
            "user_id": user,
            "user_name": "alice" if user == "U0001" else user.lower(),
            "command": "/papers",
            "text": text,
            "api_app_id": "A0001",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        }
    )


def signed_headers(
    body: str, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    """`v0=` + HMAC-SHA256 of `v0:{timestamp}:{body}`, as Slack sends it."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": f"v0={digest}",
    }
