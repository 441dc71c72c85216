"""Weekly schedules: weekday, time and IANA timezone; ISO weeks; the next digest time.

Weekdays are stored as APScheduler's day names (`mon` .. `sun`), never as numbers:
APScheduler 3 counts Monday as 0, crontab counts Sunday as 0.
"""

from __future__ import annotations

import functools
import logging
import re
import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

log = logging.getLogger(__name__)

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
EXAMPLE = "schedule monday 09:00 Europe/Berlin"


class ScheduleError(ValueError):
    """A weekday, time or timezone Paperboy cannot use; the message has an example."""


@dataclass(frozen=True)
class Schedule:
    weekday: str  # mon .. sun
    time: str  # HH:MM, 24-hour
    timezone: str  # IANA name

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.timezone)

    def describe(self) -> str:
        return f"{WEEKDAY_NAMES[WEEKDAYS.index(self.weekday)]}s at {self.time} ({self.timezone})"

    def next_after(self, now: datetime) -> datetime:
        """The first scheduled moment strictly after `now`, in the schedule's timezone.

        A time skipped by a DST jump happens at the same wall time shifted forward
        (zoneinfo's fold rules); a repeated hour happens once, at its first occurrence.
        """
        local_now = now.astimezone(self.zone)
        hour, minute = (int(part) for part in self.time.split(":"))
        day_index = WEEKDAYS.index(self.weekday)
        days_ahead = (day_index - local_now.weekday()) % 7
        for extra in (0, 7, 14):
            day = local_now.date() + timedelta(days=days_ahead + extra)
            candidate = datetime.combine(day, time(hour, minute), tzinfo=self.zone)
            # Normalise a wall time that does not exist (spring forward) via UTC.
            candidate = candidate.astimezone(zoneinfo.ZoneInfo("UTC")).astimezone(self.zone)
            if candidate > local_now:
                return candidate
        raise AssertionError("unreachable: a weekly schedule fires within three weeks")


def parse_weekday(text: str) -> str:
    """`Monday`, `mon`, `MONDAY`, `tues` -> `mon` / `tue`: three letters at least."""
    typed = text.strip().lower()
    for short, name in zip(WEEKDAYS, WEEKDAY_NAMES, strict=True):
        if len(typed) >= 3 and name.lower().startswith(typed):
            return short
    raise ScheduleError(f"{text!r} is not a weekday; use monday .. sunday, e.g. `{EXAMPLE}`")


def parse_time(text: str) -> str:
    """`9:00`, `09:00`, `9am`, `5:30pm` -> `HH:MM` (24-hour)."""
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?", text.strip().lower())
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        suffix = match.group(3)
        if suffix and 1 <= hour <= 12:
            hour = hour % 12 + (12 if suffix == "pm" else 0)
        elif suffix:
            hour = 99
        if (match.group(2) or suffix) and hour < 24 and minute < 60:
            return f"{hour:02d}:{minute:02d}"
    raise ScheduleError(f"{text!r} is not a time; use 24-hour HH:MM, e.g. `{EXAMPLE}`")


@functools.cache
def _zones_by_lower_name() -> dict[str, str]:
    return {name.lower(): name for name in zoneinfo.available_timezones()}


def parse_timezone(text: str) -> str:
    """An IANA timezone name, matched case-insensitively (`europe/berlin` works)."""
    name = _zones_by_lower_name().get(text.strip().lower())
    if name is None and text.strip().upper() in ("UTC", "GMT", "Z"):
        name = "UTC"
    if name is None:
        raise ScheduleError(
            f"{text!r} is not an IANA timezone; use a name like Europe/Berlin, "
            f"America/New_York or UTC, e.g. `{EXAMPLE}`"
        )
    return name


def week_key(moment: datetime, timezone: str) -> str:
    """The ISO week of `moment` in `timezone`: `2026-W49`."""
    year, week, _ = moment.astimezone(zoneinfo.ZoneInfo(timezone)).isocalendar()
    return f"{year}-W{week:02d}"


def week_start(key: str) -> date:
    """The Monday of an ISO week key."""
    year, week = key.split("-W")
    return date.fromisocalendar(int(year), int(week), 1)
