"""A paper's date with a UTC offset no clock keeps (beyond ±14:00) is unknown, and the
paper is kept: on every path a date enters by (a feed's RFC 822 or ISO 8601 dates,
arXiv's API, OpenReview's epoch milliseconds), parsed and as stored.

A feed date feedparser would have to make up is unknown, and the paper kept: a month,
day, hour, minute or offset minute out of range (its ISO 8601 / W3C-DTF parser rolls it
over: `2024-00-00`, a year only, became 2023-11-30), or a date with no year (it takes the
missing parts from today's date: `-03` became 2003 with this month). Real dates, leap days
and the ISO forms without those faults are kept as before."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from digests.ingest.fetched import fetched_row
from digests.sources.arxiv import parse_arxiv_page
from digests.sources.feeds import parse_feed
from digests.sources.openreview import parse_openreview_page
from digests.timestamps import source_moment, written_date_is_real, written_offset_is_real
from tests.fakes.arxiv_api import Entry, feed_xml
from tests.fakes.openreview_api import note

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _rss(pub_date: str) -> bytes:
    return f"""<?xml version="1.0"?><rss version="2.0"><channel><title>J</title>
    <item><title>Planning Agents Revisited At Scale</title>
    <link>https://journal.example/articles/7</link>
    <description>We plan.</description><pubDate>{pub_date}</pubDate>
    </item></channel></rss>""".encode()


def _atom(published: str, updated: str | None = None) -> bytes:
    updated_element = f"<updated>{updated}</updated>" if updated else ""
    return f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>J</title><id>https://j.example/feed</id>
  <entry><title>Learning to Plan</title><id>https://j.example/article/7</id>
    <link rel="alternate" href="https://j.example/article/7"/>
    <published>{published}</published>{updated_element}
    <summary>Agents that plan.</summary></entry>
</feed>""".encode()


@pytest.mark.parametrize(
    "pub_date",
    [
        "Thu, 01 Jan 1970 00:00:00 +9999",  # what feedparser made 1969-12-27
        "Mon, 30 Nov 2026 08:00:00 +9999",
        "Mon, 30 Nov 2026 08:00:00 -9999",
        "Mon, 30 Nov 2026 08:00:00 +1401",
        "Mon, 30 Nov 2026 08:00:00 -1430",
        "Mon, 30 Nov 2026 08:00:00 GMT+15:00",
        "Mon, 30 Nov 2026 08:00:00 +010000",
        "30 Nov 2026 08 +9999",
    ],
)
def test_an_rss_date_with_an_offset_beyond_14_hours_is_unknown(pub_date: str) -> None:
    (paper,) = parse_feed(_rss(pub_date), source="feed:j", content_type="application/rss+xml")
    assert paper.title == "Planning Agents Revisited At Scale"
    assert (paper.published, paper.updated, paper.year) == (None, None, None)
    row = fetched_row(paper, NOW)
    assert row is not None and row["published_at"] is None and row["revised_at"] is None


@pytest.mark.parametrize(
    ("pub_date", "expected"),
    [
        ("Mon, 30 Nov 2026 08:00:00 +1400", datetime(2026, 11, 29, 18, 0, tzinfo=UTC)),
        ("Mon, 30 Nov 2026 08:00:00 -1400", datetime(2026, 11, 30, 22, 0, tzinfo=UTC)),
        ("Mon, 30 Nov 2026 08:00:00 +0530", datetime(2026, 11, 30, 2, 30, tzinfo=UTC)),
        ("Mon, 30 Nov 2026 08:00:00 GMT", datetime(2026, 11, 30, 8, 0, tzinfo=UTC)),
        ("Mon, 30 Nov 2026 08:00:00 EST", datetime(2026, 11, 30, 13, 0, tzinfo=UTC)),
    ],
)
def test_an_rss_date_with_a_real_offset_is_kept(pub_date: str, expected: datetime) -> None:
    (paper,) = parse_feed(_rss(pub_date), source="feed:j", content_type="application/rss+xml")
    assert paper.published == expected and paper.year == 2026


@pytest.mark.parametrize(
    "published",
    [
        "2026-11-30T08:00:00+99:99",
        "2026-11-30T08:00:00+9999",
        "2026-11-30T08:00:00-23:59",
        "2026-11-30T08:00:00.250+14:01",
        "2026-11-30T8+9999",
        "2026-11-30 08:00:00+15:00",
    ],
)
def test_an_iso_8601_feed_date_with_an_offset_beyond_14_hours_is_unknown(published: str) -> None:
    (paper,) = parse_feed(_atom(published), source="feed:j", content_type="application/atom+xml")
    assert paper.title == "Learning to Plan"
    assert (paper.published, paper.year) == (None, None)
    row = fetched_row(paper, NOW)
    assert row is not None and row["published_at"] is None


def test_a_feed_entrys_refused_published_date_falls_back_to_its_updated_one() -> None:
    """As when the entry has no published date at all; each date is judged on its own."""
    body = _atom("2026-11-27T08:00:00+99:99", "2026-11-28T12:00:00-14:00")
    (paper,) = parse_feed(body, source="feed:j", content_type="application/atom+xml")
    assert paper.published == paper.updated == datetime(2026, 11, 29, 2, 0, tzinfo=UTC)
    body = _atom("2026-11-27T08:00:00+14:00", "2026-11-28T12:00:00+99:99")
    (paper,) = parse_feed(body, source="feed:j", content_type="application/atom+xml")
    assert (paper.published, paper.updated) == (datetime(2026, 11, 26, 18, 0, tzinfo=UTC), None)


def _arxiv_page(published: str) -> str:
    entry = Entry("2501.01234", "Offline RL", "We study RL.", datetime(2025, 1, 2, tzinfo=UTC))
    page = feed_xml([entry], query="cat:cs.LG", total=1, start=0, per_page=10)
    return page.replace(
        "<published>2025-01-02T00:00:00Z</published>", f"<published>{published}</published>"
    )


@pytest.mark.parametrize(
    "published",
    [
        "2025-01-02T00:00:00+15:00",
        "2025-01-02T00:00:00-23:59",
        "2025-01-02T00:00:00+2300",
        "2025-01-02T00:00:00+99:99",
        "0001-01-01T00:00:00+01:00",  # before the first datetime once in UTC
    ],
)
def test_an_arxiv_date_out_of_range_is_unknown_and_the_paper_kept(published: str) -> None:
    (paper,) = parse_arxiv_page(_arxiv_page(published), source="arxiv:cs.LG").papers
    assert paper.arxiv_id == "2501.01234" and paper.title == "Offline RL"
    assert (paper.published, paper.year) == (None, None)
    row = fetched_row(paper, NOW)
    assert row is not None and row["published_at"] is None


@pytest.mark.parametrize(
    ("published", "expected"),
    [
        ("2025-01-02T00:00:00+14:00", datetime(2025, 1, 1, 10, 0, tzinfo=UTC)),
        ("2025-01-02T00:00:00-12:00", datetime(2025, 1, 2, 12, 0, tzinfo=UTC)),
        ("2025-01-02T00:00:00Z", datetime(2025, 1, 2, tzinfo=UTC)),
    ],
)
def test_an_arxiv_date_with_a_real_offset_is_kept(published: str, expected: datetime) -> None:
    (paper,) = parse_arxiv_page(_arxiv_page(published), source="arxiv:cs.LG").papers
    assert paper.published == expected


@pytest.mark.parametrize(
    "millis",
    [
        1,
        1_737_936_000,  # 2025-01-27 in seconds, read as milliseconds: January 1970
        -1_000,
        253_402_300_800_000,  # the year 10000
        10**400,
        float("nan"),
        float("inf"),
        "1737936000000",
        True,
    ],
)
def test_an_openreview_timestamp_out_of_range_is_unknown(millis: object) -> None:
    notes = [note("abc", "Planning Agents", "Agents plan.", venue="ICLR 2025 Oral")]
    notes[0].update(cdate=millis, pdate=millis, mdate=millis, tmdate=millis)
    page = parse_openreview_page(json.dumps({"notes": notes, "count": 1}), source="openreview:x")
    (paper,) = page.papers
    assert paper.title == "Planning Agents" and paper.year == 2025  # from the venue label
    assert (paper.published, paper.updated) == (None, None)
    row = fetched_row(paper, NOW)
    assert row is not None and row["published_at"] is None


def test_an_openreview_timestamp_in_range_is_kept() -> None:
    notes = [note("abc", "Planning Agents", "Agents plan.", cdate=631_152_000_000, pdate=None)]
    (paper,) = parse_openreview_page(json.dumps({"notes": notes}), source="openreview:x").papers
    assert paper.published == datetime(1990, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "real"),
    [
        ("Mon, 30 Nov 2026 08:00:00 +1400", True),
        ("Mon, 30 Nov 2026 08:00:00 -1400", True),
        ("Mon, 30 Nov 2026 08:00:00 +1401", False),
        ("Mon, 30 Nov 2026 08:00:00 Etc/GMT+9999", False),
        ("2026-11-30T08:00:00Z", True),
        ("2026-11-30T08:00:00-05:00", True),
        ("20261130T080000+1500", False),
        ("2026-12-31", True),  # the date's own dashes are no offset
        ("Sat, 31 Oct 2026", True),
        ("Mon, 30 Nov 2026 08:00:00 +" + "9" * 5000, False),
    ],
)
def test_written_offsets(text: str, real: bool) -> None:
    assert written_offset_is_real(text) is real


def test_source_moment() -> None:
    naive = datetime(2026, 11, 30, 8, 0)
    assert source_moment(naive) == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    east = datetime(2026, 11, 30, 8, 0, tzinfo=timezone(timedelta(hours=14)))
    assert source_moment(east) == datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    beyond = datetime(2026, 11, 30, 8, 0, tzinfo=timezone(timedelta(hours=14, seconds=1)))
    assert source_moment(beyond) is None and source_moment(None) is None


# --- dates a lenient parser would make up ------------------------------------------------


@pytest.mark.parametrize(
    "published",
    [
        "2024-00-00",  # a year only, as bibliographic systems write it: was 2023-11-30
        "2024-10-00",  # was 2024-09-30
        "2024-00-10",  # was 2023-12-10
        "2024-13-01",  # was 2025-01-01
        "2024-02-30",  # was 2024-03-01
        "2023-02-29",  # not a leap year: was 2023-03-01
        "2024-10-32T10:00:00Z",
        "20241305",
        "2024-10-05T25:00:00Z",  # was the next day
        "2024-10-05T10:61:00Z",
        "2024-10-05T10:00:61Z",
        "2024-10-05T10:00:00+09:60",  # was read as +10:00
        "2024-10-05T10:00:00+0099",  # was read as +01:39
        "-03",  # no year: was 2003 with today's month
        "--12-25",  # was the 25th of December this year
        "---05",
        "-335",
        "20",  # a century: was 1901 with today's month
        "2024/10/05",  # read as 2024 with today's month
        "2024 Oct 05",
        "2024-W49",
        "10:00:00Z",  # a time alone: was today
        "T10:00",
    ],
)
def test_a_feed_date_feedparser_would_make_up_is_unknown(published: str) -> None:
    (paper,) = parse_feed(_atom(published), source="feed:j", content_type="application/atom+xml")
    assert paper.title == "Learning to Plan"
    assert (paper.published, paper.year) == (None, None)
    row = fetched_row(paper, NOW)
    assert row is not None and row["published_at"] is None


@pytest.mark.parametrize(
    ("published", "expected"),
    [
        ("2024-02-29", datetime(2024, 2, 29, tzinfo=UTC)),  # a leap day
        ("2024-10-05", datetime(2024, 10, 5, tzinfo=UTC)),
        ("2024-10", datetime(2024, 10, 1, tzinfo=UTC)),
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("20241005", datetime(2024, 10, 5, tzinfo=UTC)),
        ("2024-337", datetime(2024, 12, 2, tzinfo=UTC)),  # an ordinal date
        ("24-10-05", datetime(2024, 10, 5, tzinfo=UTC)),
        ("2024-10-05T23:59:59Z", datetime(2024, 10, 5, 23, 59, 59, tzinfo=UTC)),
        ("2024-10-05T24:00:00Z", datetime(2024, 10, 6, tzinfo=UTC)),  # ISO's end of day
        ("2024-10-05T10:00:00+05:45", datetime(2024, 10, 5, 4, 15, tzinfo=UTC)),
        ("2024-10-05T10:00:00.250-09:30", datetime(2024, 10, 5, 19, 30, tzinfo=UTC)),
        ("2024-10-05 10:00:00", datetime(2024, 10, 5, 10, 0, tzinfo=UTC)),
    ],
)
def test_a_real_iso_feed_date_is_kept(published: str, expected: datetime) -> None:
    (paper,) = parse_feed(_atom(published), source="feed:j", content_type="application/atom+xml")
    assert paper.published == expected


@pytest.mark.parametrize(
    ("pub_date", "expected"),
    [
        ("Sat, 05 Oct 2024 10:00:00 GMT", datetime(2024, 10, 5, 10, 0, tzinfo=UTC)),
        ("Sat, 5 Oct 24 10:00 +0100", datetime(2024, 10, 5, 9, 0, tzinfo=UTC)),
        ("Thu, 29 Feb 2024 23:59:59 -0000", datetime(2024, 2, 29, 23, 59, 59, tzinfo=UTC)),
        ("Sat Oct  5 16:29:06 2024", datetime(2024, 10, 5, 16, 29, 6, tzinfo=UTC)),
        ("Fri, 2006/09/15 08:19:53 EDT", datetime(2006, 9, 15, 12, 19, 53, tzinfo=UTC)),
        ("2004-07-08 23:56:58.0", datetime(2004, 7, 8, 23, 56, 58, tzinfo=UTC)),
    ],
)
def test_a_real_rss_date_is_kept(pub_date: str, expected: datetime) -> None:
    (paper,) = parse_feed(_rss(pub_date), source="feed:j", content_type="application/rss+xml")
    assert paper.published == expected


@pytest.mark.parametrize(
    "pub_date", ["Sat, 05 Oct 2024 10:00:00 +0960", "Sat, 05 Oct 2024 10:00:00 GMT+01:99"]
)
def test_an_rss_offset_with_its_minutes_out_of_range_is_unknown(pub_date: str) -> None:
    (paper,) = parse_feed(_rss(pub_date), source="feed:j", content_type="application/rss+xml")
    assert (paper.published, paper.year) == (None, None)


def test_an_arxiv_offset_with_its_minutes_out_of_range_is_unknown() -> None:
    """Python's fromisoformat reads `+09:60` as +10:00."""
    for published in ("2025-01-02T00:00:00+09:60", "2025-01-02T00:00:00+1360"):
        (paper,) = parse_arxiv_page(_arxiv_page(published), source="arxiv:cs.LG").papers
        assert (paper.published, paper.year) == (None, None), published
    page = parse_arxiv_page(_arxiv_page("2025-01-02T00:00:00+09:59"), source="arxiv:cs.LG")
    (paper,) = page.papers
    assert paper.published == datetime(2025, 1, 1, 14, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "real"),
    [
        ("2024-02-29", True),
        ("2100-02-29", False),  # not a leap year
        ("2000-02-29", True),
        ("2024-1-5", True),  # not what feedparser's ISO parser reads; left alone
        ("2024-10-05t23:59:60z", True),  # a leap second
        ("2024-10-05T24:00:01Z", False),
        ("Sat, 05 Oct 2024 10:00:00 +1359", True),
        ("Sat, 05 Oct 2024 10:00:00 +1360", False),
        ("Sat, 05 Oct 2024 10:00:00 UT", True),
        ("  --12-25  ", False),
        ("", True),  # nothing written: nothing made up
    ],
)
def test_written_dates(text: str, real: bool) -> None:
    assert written_date_is_real(text) is real
