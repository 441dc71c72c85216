"""Stored timestamps: always UTC, to the second, so that they compare as strings."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

log = logging.getLogger(__name__)


def stamp(moment: datetime) -> str:
    """`2026-11-30T09:00:00+00:00`: the moment in UTC. Naive datetimes are refused."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).isoformat(timespec="seconds")
