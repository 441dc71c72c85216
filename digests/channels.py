"""Channel references: `local:NAME`, `slack:TEAM/CHANNEL`, `discord:GUILD/CHANNEL`.

Everything Paperboy stores is keyed by the full reference, so two workspaces or
guilds never see each other's subscriptions, digests or deliveries.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

PLATFORMS = ("local", "slack", "discord")
_PATTERNS = {
    "local": re.compile(r"local:(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,63})"),
    "slack": re.compile(r"slack:(?P<team>[A-Z0-9]{2,32})/(?P<name>[A-Z0-9]{2,32})"),
    "discord": re.compile(r"discord:(?P<team>[0-9]{5,25})/(?P<name>[0-9]{5,25})"),
}
EXAMPLES = (
    "local:research, slack:T012AB3C4/C0123456789 or discord:123456789012345678/987654321098765432"
)


class ChannelError(ValueError):
    """Not a channel reference Paperboy understands; the message shows the forms."""


@dataclass(frozen=True)
class ChannelRef:
    platform: str
    team: str | None  # Slack team or Discord guild; None for local
    name: str  # local name, Slack channel id or Discord channel id

    def __str__(self) -> str:
        if self.team is None:
            return f"{self.platform}:{self.name}"
        return f"{self.platform}:{self.team}/{self.name}"


def parse_channel(text: str) -> ChannelRef:
    """Parse a channel reference, or raise ChannelError with the accepted forms."""
    text = text.strip()
    platform = text.split(":", 1)[0].lower()
    pattern = _PATTERNS.get(platform)
    match = pattern.fullmatch(platform + text[len(platform) :]) if pattern else None
    if pattern is None or match is None:
        raise ChannelError(f"{text!r} is not a channel; use {EXAMPLES}")
    return ChannelRef(platform, match.groupdict().get("team"), match.group("name"))
