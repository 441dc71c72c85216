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
from datetime import date, datetime, timedelta

from apscheduler.triggers.cron import CronTrigger

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

    def trigger(self) -> CronTrigger:
        """The weekly APScheduler trigger, with the day as a name (APScheduler 3 counts
        Monday as 0, crontab counts Sunday as 0: names cannot be misread)."""
        hour, minute = (int(part) for part in self.time.split(":"))
        return CronTrigger(day_of_week=self.weekday, hour=hour, minute=minute, timezone=self.zone)

    def next_after(self, now: datetime) -> datetime:
        """The first scheduled moment strictly after `now`, in the schedule's timezone."""
        fire: datetime | None = self.trigger().get_next_fire_time(
            None, _utc(now) + timedelta(microseconds=1)
        )
        assert fire is not None  # a weekly cron always fires again
        return fire.astimezone(self.zone)

    def last_at_or_before(self, now: datetime) -> datetime:
        """The most recent scheduled moment at or before `now`."""
        # Arithmetic in UTC: local wall-clock arithmetic goes wrong in a repeated hour.
        trigger, now = self.trigger(), _utc(now)
        moment: datetime | None = trigger.get_next_fire_time(None, now - timedelta(days=8))
        last = moment
        while moment is not None and _utc(moment) <= now:
            last = moment
            moment = trigger.get_next_fire_time(moment, _utc(moment) + timedelta(seconds=1))
        assert last is not None and _utc(last) <= now
        return last.astimezone(self.zone)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(zoneinfo.ZoneInfo("UTC"))


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
