"""Stored timestamps: always UTC, to the second, so that they compare as strings; and the
checks a date from outside (a feed, arXiv, OpenReview) passes first: a real UTC offset, and
for a feed's, a date its parser did not have to make up."""

from __future__ import annotations

import logging
import re
from datetime import UTC, date, datetime, timedelta

log = logging.getLogger(__name__)

# No place keeps a clock further from UTC than Kiribati's +14:00 (the furthest west is
# -12:00): a larger offset is a typo or a forgery, and it would move the date by days.
MAX_UTC_OFFSET = timedelta(hours=14)

# Where lenient date parsers (feedparser's RFC 822 and W3C-DTF ones) find a numeric
# offset: a word of its own (`+0100`, `GMT+01:00`), or glued to the time (`T10:00-05:00`).
_OFFSET_WORD = re.compile(r"(?:etc/)?(?:gmt|utc|ut)?[+-](\d+)(?::(\d+))?")
_GLUED_OFFSET = re.compile(r"[+-](\d+)(?::(\d+))?$")

# feedparser falls back to a lenient ISO 8601 parser (after its W3C-DTF and RFC 822 ones),
# which rolls a field out of range over (`2024-13-01` is 2025-01-01, `2024-00-00`, a year
# only, 2023-11-30, `T25:00` the next day) and takes what the text leaves out from today's
# date: a date without its year (`--12-25`, `-03`), a time alone (`10:00`), a century
# (`20`), or a year it reads no month after (`2024/10/05`, `2024 Oct 05` and `2024-W49`
# are that year with this month).
_ISO_DAY = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})(?!\d)|(\d{2})-(\d{2})-(\d{2})(?!\d)")
_ISO_MONTH = re.compile(r"(\d{4})-(\d{2})(?![-\d])")
_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_PARTS_FROM_TODAY = re.compile(r"-|t?\d{1,2}:|\d{2}$|\d{4}(?:[^-\d]|-\D)")


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
    (`+9999`, which lenient parsers read as 99 hours and 99 minutes), minutes beyond 59
    (`+0960`, read as +10:00), or longer than `hh:mm`. True otherwise: a real offset, `Z`,
    a zone's name, a date without a time."""
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
    if len(hours) > 2 or len(minutes) > 2 or int(minutes or 0) > 59:
        return False
    return real_offset(timedelta(hours=int(hours), minutes=int(minutes or 0)))


def written_date_is_real(text: str) -> bool:
    """False if a lenient parser (feedparser's) would have to make up part of the date
    `text` writes: an offset no clock keeps (`written_offset_is_real`), a month, day, hour,
    minute or second out of range (it rolls them over), or no year, or no month after
    the year (it takes them from today's date). True otherwise, and for an empty text."""
    lowered = text.strip().lower()
    if not lowered:
        return True
    if not written_offset_is_real(lowered) or _PARTS_FROM_TODAY.match(lowered):
        return False
    words = lowered.split()
    day = _ISO_DAY.match(words[0].partition("t")[0])
    if day is not None:
        year, month, mday = (int(n) for n in day.groups() if n is not None)
        if not _real_day(year if year > 99 else 2000 + year, month, mday):
            return False
    elif (month_only := _ISO_MONTH.match(words[0])) and not 1 <= int(month_only[2]) <= 12:
        return False
    for word in words:
        found = _TIME_OF_DAY.match(word.rpartition("t")[2] if "t" in word else word)
        if found is not None and not _real_time(*found.groups()):
            return False
    return True


def _real_day(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _real_time(hours: str, minutes: str, seconds: str | None) -> bool:
    """Up to 23:59:60 (a leap second), or 24:00:00, ISO 8601's end of the day."""
    h, m, s = int(hours), int(minutes), int(seconds or 0)
    return (h <= 23 and m <= 59 and s <= 60) or (h, m, s) == (24, 0, 0)


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
