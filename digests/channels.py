"""Channel references: `local:NAME`, `slack:TEAM/CHANNEL`, `discord:GUILD/CHANNEL`, and
personal digests: `slack:TEAM/@USER` and `discord:@USER`.

Everything Paperboy stores is keyed by the full reference, so two workspaces or guilds
never share anything. A personal reference is a channel like any other but delivered as a
direct message (`bot/dm.py`); a Discord one belongs to no guild; there is no local one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

PLATFORMS = ("local", "slack", "discord")
_PATTERNS = {
    "local": re.compile(r"local:(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,63})"),
    "slack": re.compile(
        r"slack:(?P<team>[A-Z0-9]{2,32})/(?:(?P<name>[A-Z0-9]{2,32})|@(?P<user>[UW][A-Z0-9]{2,32}))"
    ),
    "discord": re.compile(
        r"discord:(?:(?P<team>[0-9]{5,25})/(?P<name>[0-9]{5,25})|@(?P<user>[0-9]{5,25}))"
    ),
}
EXAMPLES = (
    "local:research, slack:T012AB3C4/C0123456789 or discord:123456789012345678/987654321098765432"
    " (a personal digest: slack:T012AB3C4/@U0123ABCD or discord:@123456789012345678)"
)
PERSONAL_MARK = "@"


class ChannelError(ValueError):
    """Not a channel reference Paperboy understands; the message shows the forms."""


@dataclass(frozen=True)
class ChannelRef:
    platform: str
    team: str | None  # Slack team or Discord guild; None for local and Discord personal
    # The local name, Slack channel id or Discord channel id; for a personal digest, the
    # user's id after "@" (never a channel id, so nothing posts to it by mistake).
    name: str

    def __str__(self) -> str:
        if self.team is None:
            return f"{self.platform}:{self.name}"
        return f"{self.platform}:{self.team}/{self.name}"

    @property
    def personal(self) -> bool:
        """A user's own digest, delivered as a direct message."""
        return self.name.startswith(PERSONAL_MARK)

    @property
    def user(self) -> str | None:
        """The user a personal digest goes to (Slack user id, Discord user id), else None."""
        return self.name[len(PERSONAL_MARK) :] if self.personal else None


def parse_channel(text: str) -> ChannelRef:
    """Parse a channel reference, or raise ChannelError with the accepted forms."""
    text = text.strip()
    platform = text.split(":", 1)[0].lower()
    pattern = _PATTERNS.get(platform)
    match = pattern.fullmatch(platform + text[len(platform) :]) if pattern else None
    if pattern is None or match is None:
        raise ChannelError(f"{text!r} is not a channel; use {EXAMPLES}")
    groups = match.groupdict()
    if groups.get("user"):
        return ChannelRef(platform, groups.get("team"), PERSONAL_MARK + groups["user"])
    return ChannelRef(platform, groups.get("team"), match.group("name"))


def personal_channel(user_key: str) -> str | None:
    """The personal digest of a user, from their user key (`digests.actions.user_key`:
    `slack:T0123/U0456`, `discord:123456789012345678`): `slack:T0123/@U0456`,
    `discord:@123456789012345678`. None when the key names no user who can get a direct
    message (a `local:` user, or anything malformed)."""
    platform, _, rest = user_key.partition(":")
    if platform == "slack":
        team, _, user = rest.partition("/")
        candidate = f"slack:{team}/{PERSONAL_MARK}{user}"
    elif platform == "discord":
        candidate = f"discord:{PERSONAL_MARK}{rest}"
    else:
        return None
    try:
        ref = parse_channel(candidate)
    except ChannelError:
        return None
    # parse_channel strips and accepts any case of the platform: insist on the exact form.
    return candidate if str(ref) == candidate else None
