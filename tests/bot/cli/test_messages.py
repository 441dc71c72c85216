"""Regressions found walking through the README as a new user and an operator."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from digests.lookup import shown_venue, venue_label
from digests.samples import sample_paths

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"


def ok(result: Any) -> str:
    """The output of a command that must have succeeded."""
    assert result.exit_code == 0, result.output
    return str(result.output)


def test_a_fetched_venue_that_names_its_year_is_not_shown_with_it_twice() -> None:
    # An arXiv comment "Accepted at ICML 2026" stores venue "ICML 2026" and year 2026
    # (no split, unlike a file's venue); it was shown as "ICML 2026 2026".
    assert shown_venue({"venue": "ICML 2026", "year": 2026}) == "ICML 2026"
    assert shown_venue({"venue": "ICLR 2025 Oral", "year": 2025}) == "ICLR 2025 Oral"
    assert venue_label({"venue": "ICLR 2025 Poster", "year": 2025}) == "ICLR 2025 Poster"
    # A venue without its year, or with another year, still gets the year.
    assert shown_venue({"venue": "ICLR", "year": 2025}) == "ICLR 2025"
    assert venue_label({"venue": "Workshop 2024", "year": 2025}) == "Workshop 2024 2025"
    assert venue_label({"venue": None, "year": None}) == "venue unknown"


def test_sources_reply_counts_in_words(run) -> None:  # type: ignore[no-untyped-def]
    # It said "Papers come from 1 source(s):".
    ok(run("sources", "add", "arxiv:cs.LG"))
    assert "Papers come from 1 source:" in ok(run("chat", "--channel", "local:lab", "sources"))
    ok(run("sources", "add", "arxiv:cs.AI"))
    assert "Papers come from 2 sources:" in ok(run("chat", "--channel", "local:lab", "sources"))


async def test_a_fetch_given_up_after_one_attempt_says_attempt() -> None:
    # `paperboy sources list` showed "(gave up after 1 attempts)".
    from datetime import UTC, datetime, timedelta

    import pytest
    from aiohttp import web

    from bot.fetching import FetchConfig, FetchError
    from tests.fakes.arxiv_fetch import run
    from tests.fakes.fetch_time import FakeTime
    from tests.fakes.server import serve

    runner, port = await serve(web.Application())
    await runner.cleanup()  # nothing listens on that port now
    config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api", attempts=1)
    with pytest.raises(FetchError, match=r"\(gave up after 1 attempt\)$"):
        await run(config, FakeTime(), datetime.now(UTC) - timedelta(days=1))


def test_status_times_read_like_the_sources_and_fetched_papers_are_not_nothing(run) -> None:  # type: ignore[no-untyped-def]
    # status printed "last ingest 2026-11-29T23:43 UTC" beside sources' "2026-11-29 23:49
    # UTC", and "Papers: 10; nothing ingested yet." for papers that came from sources.
    ok(run("chat", "--channel", "local:lab", "subscribe offline-rl"))
    assert "Papers: 0; no file ingested yet." in ok(run("status"))
    ok(run("ingest", str(sample_paths()[0])))
    assert re.search(rf"Papers: 19; last ingest {STAMP}, 19 added\.", ok(run("status")))
    shown = ok(run("chat", "--channel", "local:lab", "status"))
    assert re.search(rf"Papers stored: 19; last ingest {STAMP}, 19 added\.", shown)


def test_the_sources_commands_print_no_markdown_in_the_terminal(run) -> None:  # type: ignore[no-untyped-def]
    # "Added arxiv:cs.LG. `paperboy run` fetches it ..." and "see `paperboy sources add`":
    # backticks are Markdown, which a terminal shows raw.
    run("chat", "--channel", "local:lab", "subscribe offline-rl")
    status = run("status")
    added = run("sources", "add", "arxiv:cs.LG")
    run("sources", "remove", "arxiv:cs.LG")
    missing = run("sources", "remove", "arxiv:cs.LG")
    assert "Sources: none" in status.output and "Added arxiv:cs.LG" in added.output
    assert missing.exit_code == 2 and "no source 'arxiv:cs.LG'" in missing.output
    for result in (status, added, missing):
        assert "`" not in result.output, result.output


def test_a_fetch_line_accounts_for_papers_already_stored() -> None:
    # A second fetch said "arxiv:cs.LG: 5 papers read, 0 added, 0 merged, 0 errors".
    from bot.fetching.store import SourceOutcome

    again = SourceOutcome("arxiv:cs.LG", read=5, skipped=5, complete=True)
    assert again.describe() == (
        "arxiv:cs.LG: 5 papers read: 0 added, 0 merged, 5 skipped (already stored); 0 errors"
    )
    first = SourceOutcome("arxiv:cs.LG", read=5, added=5, complete=True)
    assert first.describe() == (
        "arxiv:cs.LG: 5 papers read: 5 added, 0 merged, 0 skipped (already stored); 0 errors"
    )


def test_show_finds_a_fetched_openreview_paper_by_its_note_id() -> None:
    # README: show accepts "an OpenReview id"; that held for a file's id column (stored
    # bare) but not for a note fetched from OpenReview (stored as "openreview:ID").
    from db import open_db
    from digests.lookup import resolve
    from tests.fakes.fetched import openreview_paper, store

    db = open_db(":memory:")
    assert store(db, openreview_paper()) == (1, 0)
    found = resolve(db, "abcXYZ").paper
    assert found is not None and found["venue"] == "ICLR 2025 Poster"
    assert resolve(db, "abcXYZW").paper is None


def test_channel_status_times_and_counts_read_like_the_rest(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # /papers status showed "Last digest: 2026-11-29, 1 papers, built 2026-11-29T23:46."
    # and "Last delivery: sent 2026-11-29T23:46 (part 1).": a T, no zone, "1 papers".
    paper = tmp_path / "one.tsv"
    paper.write_text(
        "title\tabstract\n"
        "Offline RL with conservative critics\tWe propose ConsQ, an offline reinforcement "
        "learning method with conservative value estimates for offline RL datasets.\n"
    )
    ok(run("ingest", str(paper), "--venue", "ICLR 2026"))
    ok(run("chat", "--channel", "local:lab", "subscribe offline-rl"))
    assert "1 paper." in ok(run("digest", "--channel", "local:lab", "--send"))
    shown = ok(run("chat", "--channel", "local:lab", "status"))
    assert re.search(rf"Last digest: \S+, 1 paper, built {STAMP}\.", shown), shown
    assert re.search(rf"Last delivery: sent {STAMP} \(part 1\)\.", shown), shown


def test_show_gives_a_fetched_papers_pdf_as_its_digest_item_does() -> None:
    # The digest item of an OpenReview or arXiv paper linked its PDF; `show` did not.
    from db import open_db
    from digests.lookup import format_paper, show
    from tests.fakes.fetched import openreview_paper, store

    db = open_db(":memory:")
    store(db, openreview_paper())
    result = show(db, "abcXYZ")
    assert result is not None and result["pdf_url"] == "https://openreview.net/pdf/abcXYZ.pdf"
    text = format_paper(result)
    links = text.split("Links:\n", 1)[1].splitlines()
    assert links[:2] == [
        "  page: https://openreview.net/forum?id=abcXYZ",
        "  PDF: https://openreview.net/pdf/abcXYZ.pdf",
    ]


def test_a_digest_of_a_channel_with_no_topics_is_refused_and_records_nothing(run) -> None:  # type: ignore[no-untyped-def]
    # `paperboy digest --channel local:fresh` before subscribing recorded an empty digest
    # for the week; subscribing then still gave "Nothing new ... (no topics yet)" all week.
    # `--preview` of a mistyped channel created it (listed by status from then on).
    assert run("ingest", *map(str, sample_paths())).exit_code == 0
    for extra in ([], ["--preview"], ["--format", "json"]):
        refused = run("digest", "--channel", "local:fresh", *extra)
        assert refused.exit_code == 2
        assert "local:fresh follows no topics yet" in refused.output
    assert "local:fresh" not in run("status").output
    run("chat", "--channel", "local:fresh", "subscribe offline-rl")
    built = run("digest", "--channel", "local:fresh")
    assert built.exit_code == 0 and "== Offline RL ==" in built.output
