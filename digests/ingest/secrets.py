"""Text that looks like a credential is never ingested.

Each line of a source file is checked here before it is parsed (a symlink to `.env` in the
inbox must not turn the bot token into a "paper"); a hit stops the file with a message that
names the kind of secret, never the secret itself.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Iterable

from digests.ingest.errors import IngestError

log = logging.getLogger(__name__)

# Every xox?- kind: bot, user, app, refresh (xoxe-, also in `xoxe.xoxp-`), client...
# A token wrapped after one of its hyphens (a line break in a CSV field, the space a seed
# paragraph joins its lines with) is one too when its body starts with a digit, as a
# real one does and prose after "xoxb-" does not.
_SLACK_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:xox[a-z]|xapp)-"
    r"(?:[A-Za-z0-9-]{8,}|\s*+[0-9](?:[A-Za-z0-9]|-\s*+){7,})"
)
# Incoming-webhook URLs: whoever has one can post to the channel.
_WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,}/[A-Za-z0-9/_-]{8,}"
    r"|discord(?:app)?\.com/api/webhooks/[0-9]{15,22}/[\w-]{20,}",
    re.I,
)
# Markup that rendering drops: `xox`b`-1...` or `$xoxb$-1...` shows as a whole token.
_MARKUP = "`*_~$\\"
# Slack's signing secret (32 hex), and the base64-ish client and webhook secrets of
# Slack and Discord: a long run with a digit in it, right after the name.
_SIGNING_SECRET = re.compile(
    r"(?:signing|client|app|webhook)[\s_-]?secret\W{0,8}"
    r"(?:[0-9a-f]{32}\b|(?=[A-Za-z0-9+/=_-]{0,64}[0-9])[A-Za-z0-9+/=_-]{24,})",
    re.I,
)
# Discord bot token: base64url(user id) . timestamp . HMAC
_DISCORD_HINT = re.compile(r"\.[\w-]{5,8}\.")  # the timestamp part, between two dots
_DISCORD_TOKEN = re.compile(r"(?<![\w-])([\w-]{17,32})\.([\w-]{5,8})\.([\w-]{25,})")
# `.env` lines: NAME=value, NAME in capitals (an optional `export`).
_ENV_LINE = re.compile(
    r"^\s*(?:export\s+)?[A-Z][A-Z0-9_]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|\S*)\s*(?:#.*)?$"
)
# The name is taken whole (possessive: no backtracking into it), then searched for a
# sensitive word; one pattern with the word inside the name would be quadratic.
# Shell, Windows, csh, PowerShell and Dockerfile forms; `NAME: value` (YAML) only when the
# value is one word ending the line, as a setting's is and a sentence's is not.
_ASSIGNMENT = re.compile(
    r"^\s*+(?:(?P<verb>export|set|setenv|ENV)\s++|\$env:)?+(?P<name>[A-Z0-9_]++)"
    r"(?P<rest>\s*+=\s*+\S|:\s*+\S++\s*+$|\s++\S++\s*+$)"
)
_SENSITIVE_WORD = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH")
ENV_LINES_TO_REFUSE = 2  # two NAME=value lines at the top: a .env file, not a paper list


def _decodes_to_an_id(part: str) -> bool:
    try:
        decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return False
    return 15 <= len(decoded) <= 22 and decoded.isdigit()


def _without_markup(text: str) -> str:
    """`text` with every character of _MARKUP deleted (`text` itself if it has none)."""
    for char in _MARKUP:  # `replace` is several times faster than `translate`
        if char in text:
            text = text.replace(char, "")
    return text


def secret_kind(line: str) -> str | None:
    """What kind of secret `line` seems to hold ("a Slack token", ...), or None.

    A Slack token and a signing or client secret are also found with rendering markup
    inside them (`xo**xb**-1...`, `8f14e45f**ceea...**`), and a Slack token wrapped after
    a hyphen (`xoxb-` at a line's end, the rest on the next)."""
    bare = _without_markup(line)
    texts = (line,) if bare is line else (line, bare)
    # Deleting markup keeps "xox" whole: without one in `bare`, neither text has a token.
    if ("xox" in bare or "xapp" in bare) and any(_SLACK_TOKEN.search(t) for t in texts):
        return "a Slack token"
    # Both "hooks." and "webhooks/" hold "hooks": one scan in the common case.
    if "hooks" in line and ("hooks." in line or "webhooks/" in line) and _WEBHOOK.search(line):
        return "a Slack or Discord webhook URL"
    assignment = _ASSIGNMENT.match(line)
    if assignment and _SENSITIVE_WORD.search(assignment["name"]):
        spaced = assignment["rest"].lstrip()[:1] not in ("=", ":")  # `setenv NAME value`
        if not spaced or assignment["verb"] in ("setenv", "ENV"):
            return "a credential setting (NAME=value)"
    # Cheap guards first: these patterns cost more than reading the whole line.
    if "secret" in bare.lower() and any(_SIGNING_SECRET.search(text) for text in texts):
        return "a signing or client secret"
    if _DISCORD_HINT.search(line):
        for match in _DISCORD_TOKEN.finditer(line):
            if _decodes_to_an_id(match.group(1)):
                return "a Discord bot token"
    return None


def refuse_secrets(texts: Iterable[str | None], path: str, line: int) -> None:
    """Raise IngestError at `path:line` if any of `texts` looks like a secret; the message
    names the kind, never the text."""
    for text in texts:
        kind = secret_kind(text) if text else None
        if kind is not None:
            log.debug("%s:%d: refused: looks like %s", path, line, kind)
            raise IngestError(path, line, f"looks like it holds {kind}; refusing the file")


def is_env_line(line: str) -> bool:
    """A `.env`-style NAME=value line."""
    return bool(_ENV_LINE.match(line))
