"""Stored timestamps: always UTC, to the second, so that they compare as strings; and the
check a date from outside (a feed, arXiv, OpenReview) passes first: a real UTC offset."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta

log = logging.getLogger(__name__)

# No place keeps a clock further from UTC than Kiribati's +14:00 (the furthest west is
# -12:00): a larger offset is a typo or a forgery, and it would move the date by days.
MAX_UTC_OFFSET = timedelta(hours=14)

# Where lenient date parsers (feedparser's RFC 822 and W3C-DTF ones) find a numeric
# offset: a word of its own (`+0100`, `GMT+01:00`), or glued to the time (`T10:00-05:00`).
_OFFSET_WORD = re.compile(r"(?:etc/)?(?:gmt|utc|ut)?[+-](\d+)(?::(\d+))?")
_GLUED_OFFSET = re.compile(r"[+-](\d+)(?::(\d+))?$")


def stamp(moment: datetime) -> str:
    """`2026-11-30T09:00:00+00:00`: the moment in UTC. Naive datetimes are refused."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def real_offset(offset: timedelta | None) -> bool:
    """True if `offset` is one a clock somewhere keeps: within ±14:00 (None, no offset, is)."""
    return offset is None or abs(offset) <= MAX_UTC_OFFSET


def written_offset_is_real(text: str) -> bool:
    """False if `text` writes a numeric UTC offset that no clock keeps: beyond ±14:00
    (`+9999`, which lenient parsers read as 99 hours and 99 minutes) or longer than
    `hh:mm`. True otherwise: a real offset, `Z`, a zone's name, a date without a time."""
    for word in text.lower().split():
        found = _OFFSET_WORD.fullmatch(word)
        if found is None and ("t" in word or ":" in word):
            # The time is after the `T`, or starts before the first colon (`10:00+0100`).
            time_of_day = word.rpartition("t")[2] if "t" in word else word.partition(":")[2]
            found = _GLUED_OFFSET.search(time_of_day)
        if found is not None and not _real_written(*found.groups()):
            return False
    return True


def _real_written(digits: str, after_colon: str | None) -> bool:
    hours, minutes = (digits, after_colon) if after_colon is not None else (digits[:2], digits[2:])
    if len(hours) > 2 or len(minutes) > 2:
        return False
    return real_offset(timedelta(hours=int(hours), minutes=int(minutes or 0)))


def source_moment(moment: datetime | None) -> datetime | None:
    """`moment` in UTC (a naive one is taken as UTC already), or None, a date unknown, if
    its UTC offset is beyond ±14:00 or it is out of a datetime's range in UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    if not real_offset(moment.utcoffset()):
        log.debug("date %s refused: its UTC offset is beyond 14 hours", moment.isoformat())
        return None
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before the first datetime in UTC
        return None
