"""A schedule said in plain English, read as the `schedule` arguments it likely means."""

from __future__ import annotations

import pytest

from config import timezones
from config.timezones import zone_for_place
from digests.schedule import Schedule, read_natural


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("daily at 8am berlin", "daily 08:00 Europe/Berlin"),
        ("every monday at 9", "monday 09:00"),
        ("weekdays 8:30am", "weekdays 08:30"),
        ("at 8pm", "friday 20:00"),  # no day said: the schedule's own
        ("Mondays at 9 a.m., New York time", "monday 09:00 America/New_York"),
        ("every day at noon UTC", "daily 12:00 UTC"),
        ("every weekday at 7.30 london", "weekdays 07:30 Europe/London"),
        ("on wednesdays at 10h tokyo", "wednesday 10:00 Asia/Tokyo"),
        ("tuesday 9:00 pst", "tuesday 09:00 America/Los_Angeles"),
        ("daily 8:00 europe/berlin", "daily 08:00 Europe/Berlin"),
    ],
)
def test_plain_english_reads_as_the_schedule_it_means(text: str, meant: str) -> None:
    assert read_natural(text, "friday") == meant


@pytest.mark.parametrize(
    "text",
    [
        "daily",  # no time
        "at 8am and 9am",  # two times
        "monday and friday at 9",  # two days: no schedule has them
        "daily at 13pm",
        "daily at 25",
        "daily at 8am berlin germany",  # a word that is no place
        "daily at 8am new daily york",  # a place's words apart
    ],
)
def test_anything_it_cannot_read_whole_is_no_suggestion(text: str) -> None:
    assert read_natural(text, "monday") is None


def test_the_day_word_is_what_schedule_takes() -> None:
    assert Schedule("tue", "09:00", "UTC").day_word == "tuesday"
    assert Schedule("tue", "09:00", "UTC", "daily").day_word == "daily"
    assert Schedule("tue", "09:00", "UTC", "weekdays").day_word == "weekdays"


@pytest.mark.parametrize(
    ("place", "zone"),
    [
        ("berlin", "Europe/Berlin"),
        ("New York", "America/New_York"),
        ("EUROPE/BERLIN", "Europe/Berlin"),
        ("gmt", "UTC"),
        ("eastern", "America/New_York"),  # US/Eastern and Canada/Eastern: the abbreviation's
        ("japan", "Asia/Tokyo"),
        ("istanbul", "Europe/Istanbul"),  # Asia/Istanbul is a link to it: one zone
        ("buenos aires", "America/Argentina/Buenos_Aires"),
        ("indianapolis", "America/Indiana/Indianapolis"),
        ("atlantis", None),
    ],
)
def test_a_place_names_one_zone_or_none(place: str, zone: str | None) -> None:
    assert zone_for_place(place) == zone


def test_a_city_two_different_zones_end_with_is_no_zone() -> None:
    """US/Central and Canada/Central are different zones (`central` as an abbreviation
    is another matter: America/Chicago)."""
    assert timezones._zones_by_city()["central"] is None
    assert timezones._zones_by_city()["istanbul"] == "Europe/Istanbul"


def test_a_link_to_another_city_s_zone_keeps_its_own_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tzdata package links zones that share rules since 1970 (Europe/Oslo to
    Europe/Berlin): `oslo` must still be Europe/Oslo, not another country's zone."""
    links = {"Europe/Oslo": "Europe/Berlin", "Asia/Istanbul": "Europe/Istanbul"}
    monkeypatch.setattr(timezones, "_link_targets", lambda: links)
    timezones._zones_by_city.cache_clear()
    try:
        assert zone_for_place("oslo") == "Europe/Oslo"
        assert zone_for_place("istanbul") == "Europe/Istanbul"
    finally:
        timezones._zones_by_city.cache_clear()
