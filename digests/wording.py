"""How answers name the digest a command acts on: a channel's, or the asking user's own.

A personal reference (`digests.channels`: `slack:T/@U`, `discord:@USER`) is where every
command typed in the Slack DM with the app acts, and where `--me` acts: an answer about it
says "your personal digest" / "you", never "this channel". One `Here` per answer, so the
handlers and `digests.explain` word both cases the same way without their own conditionals.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from digests.channels import parse_channel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Here:
    """The phrases; each comment shows the channel's wording."""

    subject: str  # "This channel follows …"
    place: str  # "… in this channel"
    owner: str  # "This channel's feedback"
    whose: str  # "… cleared this channel's feedback"
    its: str  # "so its digest would be empty"
    who: str  # "This channel voted it down"
    actor: str  # who made a change, told back: the display name, or "You"
    name: str  # "Status of slack:T0123/C0456": the reference, or the personal digest in words
    target: str  # "… subscribed this channel to", "Delivery to this channel"


def here(channel: str, user: str = "") -> Here:
    """The wording for `channel` (a valid reference), `user` being who asked."""
    if parse_channel(channel).personal:
        return Here(
            "Your personal digest",
            "in your personal digest",
            "Your",
            "your",
            "your",
            "You",
            "You",
            "your personal digest, delivered to you by DM",
            "your personal digest",
        )
    return Here(
        "This channel",
        "in this channel",
        "This channel's",
        "this channel's",
        "its",
        "This channel",
        user,
        channel,
        "this channel",
    )
