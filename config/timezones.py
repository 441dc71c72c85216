"""IANA timezone names as people type them: the rule `/papers schedule` and the settings share."""

from __future__ import annotations

import contextlib
import difflib
import functools
import logging
import re
import zoneinfo
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

EXAMPLE = "schedule monday 09:00 Europe/Berlin"


class TimezoneError(ValueError):
    """A timezone Paperboy cannot use; the message says why, with an example."""


# Zone names a person means: Area/City (and the old country groups such as US/Eastern).
# Left out: `localtime`, `Factory`, `posixrules`, abbreviations (EST, CET: some keep no
# daylight saving, all are ambiguous), Etc/GMT+5 (which means UTC-5), and paths.
AREAS = frozenset(
    (  # noqa: SIM905
        "Africa America Antarctica Arctic Asia Atlantic Australia Europe Indian Pacific "
        "US Canada Brazil Chile Mexico"
    ).split()
)
UTC_NAMES = frozenset(
    [
        "utc",
        "gmt",
        "z",
        "zulu",
        "universal",
        "greenwich",
        "uct",
        "etc/utc",
        "etc/gmt",
        "etc/universal",
        "etc/zulu",
    ]
)
ABBREVIATIONS = {
    **dict.fromkeys(("est", "edt", "et", "eastern"), "America/New_York"),
    **dict.fromkeys(("cst", "cdt", "ct", "central"), "America/Chicago"),
    **dict.fromkeys(("mst", "mdt", "mt", "mountain"), "America/Denver"),
    **dict.fromkeys(("pst", "pdt", "pt", "pacific"), "America/Los_Angeles"),
    **dict.fromkeys(("cet", "cest", "met"), "Europe/Berlin"),
    **dict.fromkeys(("eet", "eest"), "Europe/Athens"),
    **dict.fromkeys(("wet", "west"), "Europe/Lisbon"),
    "bst": "Europe/London",
    "ist": "Asia/Kolkata",
    "jst": "Asia/Tokyo",
    "kst": "Asia/Seoul",
    "aest": "Australia/Sydney",
    "hst": "Pacific/Honolulu",
}
# Old country names from the tz database's `backward` file, and what they mean now.
LEGACY_NAMES = {
    "japan": "Asia/Tokyo",
    "prc": "Asia/Shanghai",
    "roc": "Asia/Taipei",
    "rok": "Asia/Seoul",
    "hongkong": "Asia/Hong_Kong",
    "singapore": "Asia/Singapore",
    "israel": "Asia/Jerusalem",
    "iran": "Asia/Tehran",
    "turkey": "Europe/Istanbul",
    "egypt": "Africa/Cairo",
    "libya": "Africa/Tripoli",
    "cuba": "America/Havana",
    "jamaica": "America/Jamaica",
    "navajo": "America/Denver",
    "poland": "Europe/Warsaw",
    "portugal": "Europe/Lisbon",
    "iceland": "Atlantic/Reykjavik",
    "eire": "Europe/Dublin",
    "gb": "Europe/London",
    "gb-eire": "Europe/London",
    "w-su": "Europe/Moscow",
    "nz": "Pacific/Auckland",
}
_FIXED_OFFSET = re.compile(r"(?:etc/)?gmt([+-])0*(\d{1,2})")
_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,30}(?:/[A-Za-z][A-Za-z0-9_+-]{0,30}){0,2}")
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z_-]*(?:/[A-Za-z0-9][A-Za-z0-9_+-]*){1,2}")


@functools.cache
def _zones_by_lower_name() -> dict[str, str]:
    return {
        name.lower(): name
        for name in zoneinfo.available_timezones()
        if _ZONE_NAME.fullmatch(name) and name.split("/")[0] in AREAS
    }


@functools.cache
def _all_lower_names() -> frozenset[str]:
    return frozenset(name.lower() for name in zoneinfo.available_timezones())


def _loadable(typed: str) -> bool:
    """Whether the tz database has a file by this exact name (`posixrules`, `right/UTC`)."""
    if not _PLAIN_NAME.fullmatch(typed):  # no paths such as ../../etc/passwd
        return False
    try:
        zoneinfo.ZoneInfo.no_cache(typed)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def timezone_names() -> list[str]:
    """Every name `parse_timezone` accepts as it stores it (for autocomplete), sorted."""
    return sorted({"UTC", *_zones_by_lower_name().values()})


def parse_timezone(text: str) -> str:
    """An IANA timezone a person would mean, matched case-insensitively
    (`europe/berlin` works); UTC and GMT are "UTC". Raises TimezoneError with a
    suggestion for a typo, a bare city or an abbreviation."""
    key = text.strip().lower()
    if key in UTC_NAMES:
        return "UTC"
    name = _zones_by_lower_name().get(key)
    if name is None:
        raise TimezoneError(_timezone_problem(text.strip()[:60]))
    return name


def _timezone_problem(typed: str) -> str:
    key = typed.lower()
    if key in ABBREVIATIONS:
        zone = ABBREVIATIONS[key]
        return (
            f"{typed!r} is an abbreviation, not a timezone; use a city zone such as {zone} "
            f"(it follows the local daylight-saving rules), e.g. `schedule monday 09:00 {zone}`"
        )
    fixed = _FIXED_OFFSET.fullmatch(key)
    if fixed and int(fixed.group(2)):
        sign = "-" if fixed.group(1) == "+" else "+"  # POSIX style: the sign is inverted
        return (
            f"{typed!r} means UTC{sign}{int(fixed.group(2))} all year, with no daylight saving "
            "(its sign is inverted); use a city zone such as America/New_York or "
            f"Europe/Berlin, e.g. `{EXAMPLE}`"
        )
    if key in LEGACY_NAMES:
        zone = LEGACY_NAMES[key]
        return (
            f"{typed!r} is an old name for a timezone; use its Area/City name, {zone}, "
            f"e.g. `schedule monday 09:00 {zone}`"
        )
    zones = _zones_by_lower_name()
    if key in _all_lower_names() or _loadable(typed):
        return (
            f"{typed!r} is a system or legacy timezone name, not one Paperboy accepts; use an "
            f"Area/City name such as Europe/Berlin, America/New_York or UTC, e.g. `{EXAMPLE}`"
        )
    city = key.replace(" ", "_")
    by_city = sorted(name for lower, name in zones.items() if lower.rsplit("/", 1)[-1] == city)
    close = difflib.get_close_matches(key, list(zones), n=1, cutoff=0.8)
    suggestion = by_city[0] if by_city else zones[close[0]] if close else None
    return (
        f"{typed!r} is not an IANA timezone; use a name like Europe/Berlin, "
        f"America/New_York or UTC, e.g. `{EXAMPLE}`"
        + (f". Did you mean {suggestion}?" if suggestion else "")
    )


@functools.cache
def _link_targets() -> dict[str, str]:
    """{a zone name that is a link (`Asia/Istanbul`): the zone it links to}, from the
    tz database's `tzdata.zi` (the system's, else the tzdata package's); {} without one."""
    places = [Path(folder) / "tzdata.zi" for folder in zoneinfo.TZPATH]
    with contextlib.suppress(ModuleNotFoundError):
        places.append(Path(str(resources.files("tzdata.zoneinfo") / "tzdata.zi")))
    for place in places:
        try:
            lines = place.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        return {parts[2]: parts[1] for parts in map(str.split, lines) if parts[:1] == ["L"]}
    return {}


@functools.cache
def _zones_by_city() -> dict[str, str | None]:
    """{a zone's last part, lowercase (`berlin`, `new_york`): its zone}; None where two
    different zones end so: the city alone does not say which. Names that link to one
    zone (`Asia/Istanbul` to `Europe/Istanbul`) are that zone."""
    links, names = _link_targets(), _zones_by_lower_name()
    found: dict[str, set[str]] = {}
    for lower, name in names.items():
        # Only a link to the same city (Asia/Istanbul -> Europe/Istanbul): a tz database
        # may link a city to another country's zone that shares its rules (Oslo -> Berlin).
        target = links.get(name, name)
        same_city = target.rsplit("/", 1)[-1].lower() == lower.rsplit("/", 1)[-1]
        zone = target if same_city and target.lower() in names else name
        found.setdefault(lower.rsplit("/", 1)[-1], set()).add(zone)
    return {city: zones.pop() if len(zones) == 1 else None for city, zones in found.items()}


def zone_for_place(text: str) -> str | None:
    """The zone a place as people say it names (`berlin`, `New York`, `europe/berlin`,
    `utc`, `pst`), or None when none or more than one zone could be meant. A guess, for a
    suggestion only: `parse_timezone` is what a schedule accepts."""
    key = "_".join(text.strip().lower().split())
    if key in UTC_NAMES:
        return "UTC"
    name = _zones_by_lower_name().get(key) or _zones_by_city().get(key)
    return name or ABBREVIATIONS.get(key) or LEGACY_NAMES.get(key)
