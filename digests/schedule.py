"""Schedules: a cadence, a time and an IANA timezone; period keys; the next digest time.

Three cadences: `weekly` (on the channel's weekday), `daily`, and `weekdays` (Monday to
Friday). A digest is keyed by its period in the channel's timezone: the ISO week
(`2026-W49`) for a weekly channel, the date (`2026-11-30`) for a daily or weekdays one.

Weekdays are stored as APScheduler's day names (`mon` .. `sun`), never as numbers:
APScheduler 3 counts Monday as 0, crontab counts Sunday as 0.
"""

from __future__ import annotations

import logging
import re
import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from apscheduler.triggers.cron import CronTrigger

from config import timezones
from config.timezones import EXAMPLE

log = logging.getLogger(__name__)

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEKLY, DAILY, WEEKDAYS_CADENCE = "weekly", "daily", "weekdays"
CADENCES = (WEEKLY, DAILY, WEEKDAYS_CADENCE)
# What each cadence's cron fires on: the weekday is only a weekly schedule's.
_DAYS_OF_WEEK = {DAILY: "*", WEEKDAYS_CADENCE: "mon-fri"}


class ScheduleError(ValueError):
    """A weekday, time or timezone Paperboy cannot use; the message has an example."""


@dataclass(frozen=True)
class Schedule:
    weekday: str  # mon .. sun; used by the weekly cadence only (kept for a switch back)
    time: str  # HH:MM, 24-hour
    timezone: str  # IANA name
    cadence: str = WEEKLY  # weekly | daily | weekdays

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.timezone)

    def describe(self) -> str:
        if self.cadence == DAILY:
            return f"daily at {self.time} ({self.timezone})"
        if self.cadence == WEEKDAYS_CADENCE:
            return f"weekdays (Monday to Friday) at {self.time} ({self.timezone})"
        return f"{WEEKDAY_NAMES[WEEKDAYS.index(self.weekday)]}s at {self.time} ({self.timezone})"

    @property
    def day_word(self) -> str:
        """The day as `schedule` takes it: `daily`, `weekdays` or `monday` .. `sunday`."""
        if self.cadence == WEEKLY:
            return WEEKDAY_NAMES[WEEKDAYS.index(self.weekday)].lower()
        return self.cadence

    def key(self, moment: datetime) -> str:
        """The period `moment` falls in, in this schedule's timezone: its ISO week for a
        weekly schedule (`2026-W49`), its date for a daily or weekdays one (`2026-11-30`)."""
        return period_key(moment, self.timezone, self.cadence)

    def trigger(self) -> CronTrigger:
        """The APScheduler trigger, with days as names (APScheduler 3 counts Monday as 0,
        crontab counts Sunday as 0: names cannot be misread): the weekday for a weekly
        schedule, `mon-fri` for weekdays, `*` for daily."""
        hour, minute = (int(part) for part in self.time.split(":"))
        days = _DAYS_OF_WEEK.get(self.cadence, self.weekday)
        return CronTrigger(day_of_week=days, hour=hour, minute=minute, timezone=self.zone)

    def next_after(self, now: datetime) -> datetime:
        """The first scheduled moment strictly after `now`, in the schedule's timezone."""
        fire: datetime | None = self.trigger().get_next_fire_time(
            None, _utc(now) + timedelta(microseconds=1)
        )
        assert fire is not None  # every cadence fires again within a week
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


def parse_when(text: str) -> tuple[str, str | None]:
    """`daily`, `weekdays` or a weekday -> (cadence, weekday): `("daily", None)`,
    `("weekdays", None)`, `("weekly", "mon")`."""
    typed = text.strip().lower()
    if typed in ("daily", "everyday", "every-day", "day", "days"):
        return DAILY, None
    if typed in ("weekdays", "weekday", "workdays", "mon-fri"):
        return WEEKDAYS_CADENCE, None
    try:
        return WEEKLY, parse_weekday(text)
    except ScheduleError:
        raise ScheduleError(
            f"{text[:40]!r} is not daily, weekdays or a weekday; e.g. `{EXAMPLE}`, "
            "`schedule daily 09:00` or `schedule weekdays 09:00`"
        ) from None


# Words a schedule said in plain English carries that say nothing of it: "every monday
# at 9", "daily at 8am berlin time".
_FILLER = frozenset(
    "at on every each in the time tz timezone o'clock oclock please".split()  # noqa: SIM905
)
_DAY_WORDS = {
    **dict.fromkeys(("daily", "everyday", "every-day", "day", "days"), DAILY),
    **dict.fromkeys(
        ("weekdays", "weekday", "workdays", "workday", "mon-fri", "monday-friday"), WEEKDAYS_CADENCE
    ),
}
_LOOSE_TIME = re.compile(r"(\d{1,2})(?:[:.h](\d{2}))?(am|pm|h)?")


def read_natural(text: str, current_day: str) -> str | None:
    """`schedule`'s arguments read from a plain-English phrasing, as a suggestion: "daily
    at 8am berlin" -> `daily 08:00 Europe/Berlin`, "every monday at 9" -> `monday 09:00`,
    "at 8pm" -> `<current_day> 20:00`. None unless every word is read: one day (else
    `current_day`, the schedule's now), one time, at most one place naming one zone."""
    typed = re.sub(r"(\d)\s*([ap])\.?m\.?(?!\w)", r"\1\2m", text.lower())
    typed = typed.replace("noon", "12:00").replace("midnight", "00:00")
    days: set[str] = set()
    times: list[str] = []
    place: list[tuple[int, str]] = []  # (position, word): a place is one run of words
    for at, word in enumerate(re.sub(r"[,;!?]|\.(?!\d)", " ", typed).split()):
        clock = _LOOSE_TIME.fullmatch(word)
        if word in _FILLER:
            continue
        if word in _DAY_WORDS:
            days.add(_DAY_WORDS[word])
        elif clock is not None:
            hour, minute, suffix = int(clock[1]), int(clock[2] or 0), clock[3]
            if suffix in ("am", "pm"):
                if not 1 <= hour <= 12:
                    return None
                hour = hour % 12 + (12 if suffix == "pm" else 0)
            if hour > 23 or minute > 59:
                return None
            times.append(f"{hour:02d}:{minute:02d}")
        elif (weekday := _weekday_or_none(word.removesuffix("s") or word)) is not None:
            days.add(WEEKDAY_NAMES[WEEKDAYS.index(weekday)].lower())
        else:
            place.append((at, word))
    run = place and place[-1][0] - place[0][0] == len(place) - 1
    zone = timezones.zone_for_place(" ".join(word for _, word in place)) if run else None
    if len(days) > 1 or len(times) != 1 or (place and zone is None):
        return None
    return " ".join([next(iter(days), current_day), times[0], *([zone] if zone else [])])


def _weekday_or_none(word: str) -> str | None:
    try:
        return parse_weekday(word)
    except ScheduleError:
        return None


def parse_cadence(value: str | None) -> str:
    """A stored cadence; anything unknown (or NULL) reads as weekly, as before cadences."""
    return value if value in CADENCES else WEEKLY


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


def parse_timezone(text: str) -> str:
    """`config.timezones.parse_timezone`, raising ScheduleError."""
    try:
        return timezones.parse_timezone(text)
    except timezones.TimezoneError as error:
        raise ScheduleError(str(error)) from None


def timezone_names() -> list[str]:
    """Every name `parse_timezone` accepts as it stores it (for autocomplete), sorted."""
    return timezones.timezone_names()


def week_key(moment: datetime, timezone: str) -> str:
    """The ISO week of `moment` in `timezone`: `2026-W49`."""
    year, week, _ = moment.astimezone(zoneinfo.ZoneInfo(timezone)).isocalendar()
    return f"{year}-W{week:02d}"


def day_key(moment: datetime, timezone: str) -> str:
    """The date of `moment` in `timezone`: `2026-11-30`."""
    return moment.astimezone(zoneinfo.ZoneInfo(timezone)).date().isoformat()


def period_key(moment: datetime, timezone: str, cadence: str = WEEKLY) -> str:
    """The digest period of `moment`: an ISO week for `weekly`, a date otherwise."""
    return week_key(moment, timezone) if cadence == WEEKLY else day_key(moment, timezone)


def is_week_key(key: str) -> bool:
    return "-W" in key


def week_start(key: str) -> date:
    """The Monday of an ISO week key; the date itself for a daily key (`2026-11-30`)."""
    if not is_week_key(key):
        return date.fromisoformat(key)
    year, week = key.split("-W")
    return date.fromisocalendar(int(year), int(week), 1)


def period_label(key: str) -> str:
    """How a digest names its period: `week of 30 Nov 2026`, or `Mon 30 Nov 2026`."""
    if is_week_key(key):
        return f"week of {week_start(key).strftime('%-d %b %Y')}"
    return date.fromisoformat(key).strftime("%a %-d %b %Y")
