"""Parsing what arXiv, OpenReview and feeds answer, without a network."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from digests.sources.arxiv import parse_arxiv_page
from digests.sources.errors import ArxivAPIError, NotAFeedError, ParseError
from digests.sources.feeds import parse_feed
from digests.sources.openreview import parse_openreview_page
from digests.sources.records import (
    FetchedPaper,
    html_to_text,
    linked_arxiv_ids,
    split_arxiv_id,
    to_paper_record,
    venue_from_comment,
)
from tests.fakes.arxiv_api import Entry, error_feed, feed_xml
from tests.fakes.feeds import ATOM, HTML, RSS
from tests.fakes.openreview_api import note

T0 = datetime(2025, 1, 2, 18, 59, 59, tzinfo=UTC)


def _page(*entries: Entry, total: int | None = None) -> str:
    return feed_xml(
        list(entries), query="cat:cs.LG", total=total or len(entries), start=0, per_page=10
    )


def test_arxiv_entry_keeps_every_field() -> None:
    entry = Entry(
        "2501.01234",
        "Offline RL\n   Without Pessimism",
        "We study <offline> RL & more.",
        T0,
        version=2,
        updated=datetime(2025, 2, 1, tzinfo=UTC),
        authors=[
            ("Ada Lovelace", ["Analytical Engines Ltd", "Uni of London"]),
            ("Alan Turing", []),
        ],
        categories=["cs.LG", "stat.ML"],
        comment="Accepted at ICML 2025. Code: https://github.com/ada/orl",
        journal_ref="Proc. ICML 2025, PMLR 267",
        doi="10.1234/abcd.5678",
    )
    page = parse_arxiv_page(_page(entry, total=42), source="arxiv:cs.LG")
    assert (page.total, page.start, page.per_page, page.entries) == (42, 0, 10, 1)
    (paper,) = page.papers
    assert paper.arxiv_id == "2501.01234" and paper.arxiv_version == 2
    assert paper.title == "Offline RL Without Pessimism"
    assert paper.abstract == "We study <offline> RL & more."
    assert paper.authors == ["Ada Lovelace", "Alan Turing"]
    assert paper.affiliations == [["Analytical Engines Ltd", "Uni of London"], []]
    assert paper.categories == ["cs.LG", "stat.ML"] and paper.primary_category == "cs.LG"
    assert paper.published == T0 and paper.updated == datetime(2025, 2, 1, tzinfo=UTC)
    assert paper.url == "https://arxiv.org/abs/2501.01234"
    assert paper.pdf_url == "https://arxiv.org/pdf/2501.01234v2"
    assert paper.doi == "10.1234/abcd.5678" and paper.journal_ref == "Proc. ICML 2025, PMLR 267"
    assert paper.comment.startswith("Accepted at ICML 2025")
    assert (paper.venue, paper.year) == ("ICML 2025", 2025)
    assert paper.code_url == "https://github.com/ada/orl"
    assert paper.external_ids() == ["arXiv:2501.01234", "doi:10.1234/abcd.5678"]


def test_arxiv_new_version_is_the_same_paper() -> None:
    v1 = parse_arxiv_page(_page(Entry("2501.01234", "T", "A", T0)), source="s").papers[0]
    v2 = parse_arxiv_page(_page(Entry("2501.01234", "T", "A2", T0, version=2)), source="s").papers[
        0
    ]
    assert (v1.arxiv_version, v2.arxiv_version) == (1, 2)
    assert v1.external_ids() == v2.external_ids() == ["arXiv:2501.01234"]


def test_arxiv_old_style_ids_and_no_venue_without_one() -> None:
    entry = Entry("hep-th/9901001", "Strings", "About strings.", T0, version=3, categories=["hep-th"],
                  comment="12 pages, 3 figures; submitted to NeurIPS 2025")  # fmt: skip
    (paper,) = parse_arxiv_page(_page(entry), source="s").papers
    assert (paper.arxiv_id, paper.arxiv_version) == ("hep-th/9901001", 3)
    assert paper.url == "https://arxiv.org/abs/hep-th/9901001"
    assert paper.venue is None and paper.year == 2025
    record = to_paper_record(paper)
    assert (
        record is not None
        and record.venue == "arXiv"
        and record.external_id == "arXiv:hep-th/9901001"
    )


def test_arxiv_error_feed_is_an_error_not_a_paper() -> None:
    with pytest.raises(ArxivAPIError, match=r"incorrect id format for 1234\.12345"):
        parse_arxiv_page(error_feed("incorrect id format for 1234.12345"), source="s")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_page(Entry("2501.01234", "T", "A", T0))[:300], "not well-formed XML"),
        ("<html><body>Oops</body></html>", "not an Atom feed"),
        ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><feed/>', "DTD"),
        ("", "not well-formed"),
    ],
)
def test_arxiv_malformed_pages(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_arxiv_page(text, source="s")


def test_arxiv_page_with_no_entries_keeps_the_totals() -> None:
    page = parse_arxiv_page(feed_xml([], query="q", total=300, start=100, per_page=100), source="s")
    assert (page.papers, page.total, page.start, page.entries) == ([], 300, 100, 0)


def test_openreview_notes() -> None:
    notes = [
        note(
            "abcXYZ",
            "Planning Agents",
            "We plan.",
            venue="ICLR 2025 Oral",
            keywords=["planning", "RL"],
            tldr="Agents plan.",
            extra={"code": "https://github.com/x/plan", "html": "arXiv:2502.00002v1"},
        ),
        note(
            "noTLDR1",
            "Bare",
            "No extras. We build on arXiv:2501.01234v2 (https://arxiv.org/abs/2501.01234).",
            venue="ICLR 2025 Poster",
        ),
        note("rej", "Rejected", "Nope.", venue="Submitted to ICLR 2025", pdate=None),
        {"id": "junk", "content": "not a dict"},
        "not a note",
    ]
    page = parse_openreview_page(
        json.dumps({"notes": notes, "count": 12}), source="openreview:ICLR.cc/2025/Conference"
    )
    assert (page.count, page.notes) == (12, 5)
    first, bare, rejected = page.papers
    assert first.title == "Planning Agents" and first.tldr == "Agents plan."
    assert first.keywords == ["planning", "RL"] and first.authors == ["Ada Lovelace"]
    assert (first.venue, first.year) == ("ICLR 2025 Oral", 2025)
    assert first.url == "https://openreview.net/forum?id=abcXYZ"
    assert first.pdf_url == "https://openreview.net/pdf/abcXYZ.pdf"
    assert first.code_url == "https://github.com/x/plan"
    assert first.published == datetime(2025, 1, 27, tzinfo=UTC)
    assert first.updated == datetime(2024, 10, 1, 0, 0, 1, tzinfo=UTC)
    # A field whose whole value is an arXiv link or id links the paper's own preprint...
    assert first.external_ids() == ["arXiv:2502.00002", "openreview:abcXYZ"]
    assert bare.tldr is None and bare.keywords == []
    # ...an arXiv id in the abstract's prose may be a cited paper: never a matching key.
    assert bare.linked_arxiv_ids == []
    assert bare.external_ids() == ["openreview:noTLDR1"]
    assert rejected.venue is None and rejected.year == 2025
    assert rejected.published == datetime(2024, 10, 1, tzinfo=UTC)  # cdate when no pdate


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"notes": [', "not JSON"),
        ('{"error": "Forbidden"}', 'without a "notes" list'),
        ("[]", 'without a "notes" list'),
        (b"\xff\xfe\x00", "not JSON"),
    ],
)
def test_openreview_malformed(text: str | bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_openreview_page(text, source="s")


def test_rss_feed() -> None:
    papers = parse_feed(RSS.encode(), source="feed:x", content_type="application/rss+xml")
    first, title_only = papers
    assert first.title == "Conservative Offline Policies Without Pessimism"
    assert "<" not in first.abstract and "alert" not in first.abstract
    assert "offline reinforcement learning needs no pessimism" in first.abstract
    assert first.authors == ["Grace Hopper", "Alan Turing", "Emmy Noether"]
    assert first.url == "https://arxiv.org/abs/2611.01234"
    assert first.linked_arxiv_ids == ["2611.01234"]
    assert first.external_ids() == ["arXiv:2611.01234"]
    assert first.published == datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
    assert first.code_url == "https://github.com/example/cop"
    assert first.keywords == ["cs.LG"]
    assert title_only.abstract == "" and to_paper_record(title_only).abstract == "A Title-Only Item"  # type: ignore[union-attr]


def test_an_arxiv_id_in_a_feed_entrys_text_is_not_its_own() -> None:
    """A journal entry whose summary cites an arXiv paper must not share that paper's key
    (it would be merged into the paper it cites); only the entry's links count."""
    rss = """<?xml version="1.0"?><rss version="2.0"><channel><title>J</title>
    <item><title>Planning Agents Revisited At Scale</title>
    <link>https://journal.example/articles/7</link>
    <description>We extend arXiv:2501.01234 (https://arxiv.org/abs/2402.00001).</description>
    </item></channel></rss>"""
    (paper,) = parse_feed(rss.encode(), source="feed:j", content_type="application/rss+xml")
    assert paper.linked_arxiv_ids == []
    assert paper.external_ids() == []


def test_atom_feed_even_when_served_as_html() -> None:
    (paper,) = parse_feed(ATOM.encode(), source="feed:y", content_type="text/html; charset=utf-8")
    assert paper.title == "Learning to Plan"
    assert paper.abstract == "Agents that plan. Second paragraph."
    assert paper.authors == ["Ada Lovelace", "Charles Babbage"]
    assert paper.doi == "10.1234/joe.2026.7"
    assert paper.linked_arxiv_ids == ["2501.01234"]
    assert paper.published == datetime(2026, 11, 27, 7, 0, tzinfo=UTC)
    assert paper.external_ids() == ["arXiv:2501.01234", "doi:10.1234/joe.2026.7"]


@pytest.mark.parametrize(
    "body", [HTML.encode(), b"just some text, no markup", b"\x89PNG\r\n\x1a\n\x00\x00", b""]
)
def test_not_a_feed(body: bytes) -> None:
    with pytest.raises(NotAFeedError, match="not a feed"):
        parse_feed(body, source="feed:z", content_type="text/html")


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("Accepted at ICML 2025", ("ICML 2025", 2025)),
        ("ICLR 2025 (Oral)", ("ICLR 2025 Oral", 2025)),
        ("NeurIPS 2024 camera-ready", ("NeurIPS 2024", 2024)),
        ("To appear in CVPR'25", ("CVPR 2025", 2025)),
        ("Accepted to the ICML 2025 Workshop on Agents", ("ICML 2025 Workshop", 2025)),
        ("accepted by NIPS 2017", ("NeurIPS 2017", 2017)),
        ("Submitted to NeurIPS 2025", None),
        ("Under review at ICLR 2026", None),
        ("12 pages, 5 figures", None),
        ("UAI 15 pages", None),
        (None, None),
    ],
)
def test_venue_from_comment(comment: str | None, expected: tuple[str, int] | None) -> None:
    assert venue_from_comment(comment) == expected


def test_ids_and_text_helpers() -> None:
    assert split_arxiv_id("http://arxiv.org/abs/2501.01234v12") == ("2501.01234", 12)
    assert split_arxiv_id("arXiv:math.OC/0601001") == ("math.OC/0601001", None)
    assert split_arxiv_id("https://arxiv.org/pdf/2501.01234v1.pdf") == ("2501.01234", 1)
    assert split_arxiv_id("10.1234/5678") is None
    assert linked_arxiv_ids("doi 10.1234/2501.01234 and page 2501.01234", None) == []
    assert linked_arxiv_ids(
        "https://arxiv.org/pdf/2501.01234v1 arXiv: 2402.00001 arxiv.org/abs/2501.01234"
    ) == [
        "2501.01234",
        "2402.00001",
    ]
    assert html_to_text("<p>a</p><p>b&amp;c</p><style>x{}</style>\u202eok") == "a b&c ok"


def test_to_paper_record_carries_what_it_can() -> None:
    paper = FetchedPaper(source="openreview:V", title="T", abstract="A", authors=["X"], venue="ICLR 2025 Oral",
                         year=2025, url="https://openreview.net/forum?id=n", keywords=["k"], openreview_id="n",
                         linked_arxiv_ids=["2501.01234"])  # fmt: skip
    record = to_paper_record(paper, line=3)
    assert record is not None
    assert (record.abstract, record.title, record.venue, record.year, record.line) == (
        "A",
        "T",
        "ICLR 2025 Oral",
        2025,
        3,
    )
    assert record.external_id == "arXiv:2501.01234" and record.keywords == ["k"]
    assert to_paper_record(FetchedPaper(source="s")) is None


def test_a_feed_declaring_entities_is_refused() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><rss version="2.0"><channel><title>&c;</title>'
        b"<item><title>&c;</title></item></channel></rss>"
    )
    with pytest.raises(NotAFeedError, match="declares XML entities"):
        parse_feed(bomb, source="feed:z", content_type="application/rss+xml")
