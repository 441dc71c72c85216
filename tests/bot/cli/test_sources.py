"""`paperboy sources add|list|remove`, `paperboy fetch` and the sources in `status` and
`/papers sources`."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.fetching import store as fetch_store
from tests.fakes.arxiv_api import Entry, FakeArxiv
from tests.fakes.server import ServedInThread

NOW = datetime.now(UTC)


def test_add_list_remove(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    added = run("sources", "add", "arxiv:cs.lg")
    assert added.exit_code == 0 and "Added arxiv:cs.LG" in added.output
    again = run("sources", "add", "arxiv:cs.LG")
    assert again.exit_code == 0 and "already a source" in again.output
    venue = ("openreview:ICLR.cc/2025/Conference", "--cron", "0 */6 * * *", "--no-check")
    assert run("sources", "add", *venue).exit_code == 0
    listed = run("sources", "list")
    lines = listed.output.splitlines()
    assert len(lines) == 2 and lines[0].startswith("arxiv:cs.LG: last success never, 0 papers")
    assert "next fetch" in lines[1]
    document = json.loads(run("sources", "list", "--json").output)
    assert [s["name"] for s in document] == ["arxiv:cs.LG", "openreview:ICLR.cc/2025/Conference"]
    assert document[1]["schedule"] == "0 */6 * * *" and document[0]["schedule"] == "0 5 * * *"
    removed = run("sources", "remove", "arxiv:CS.LG")
    assert removed.exit_code == 0 and "Removed arxiv:cs.LG" in removed.output
    assert len(run("sources", "list").output.splitlines()) == 1
    status = run("status")
    assert "Sources:\n  openreview:ICLR.cc/2025/Conference: last success never" in status.output


def test_a_feed_shown_with_its_query_hidden_can_be_named_as_shown(run, quick) -> None:  # type: ignore[no-untyped-def]
    """`sources list` hides a feed's query string (a token): the name it prints, and the
    `paperboy fetch` hint `sources add` prints, must work for fetch and remove."""
    added = run("sources", "add", "feed:http://127.0.0.1:9/f.rss?token=s3cr3t", "--no-check")
    shown = "feed:http://127.0.0.1:9/f.rss?…"
    assert f"paperboy fetch '{shown}'" in added.output and "s3cr3t" not in added.output
    assert run("sources", "list").output.startswith(f"{shown}: last success never")
    fetched = run("fetch", shown)
    assert fetched.exit_code == 1 and f"\n{shown}: 0 papers read; 1 error" in "\n" + fetched.output
    run("sources", "add", "feed:http://127.0.0.1:9/f.rss?token=other", "--no-check")
    both = run("fetch", shown)
    assert both.exit_code == 2 and "stands for 2 feeds" in both.output
    removed = run("sources", "remove", "feed:http://127.0.0.1:9/f.rss?token=other")
    assert removed.exit_code == 0
    removed = run("sources", "remove", shown)
    assert removed.exit_code == 0 and f"Removed {shown}" in removed.output
    assert run("sources", "list").output.startswith("No sources yet")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("sources", "add", "arxiv:cs.LGG"),
            "error: source 'arxiv:cs.LGG': 'cs.LGG' is not an arXiv category; did you mean cs.LG?",
        ),
        (
            ("sources", "add", "rss:https://x.org/a.rss"),
            "error: source 'rss:https://x.org/a.rss': unknown kind 'rss'",
        ),
        (
            ("sources", "add", "feed:ftp://x.org/a"),
            "error: source 'feed:ftp://x.org/a': a feed is an http:// or https:// URL",
        ),
        (
            ("sources", "add", "arxiv:cs.LG", "--cron", "0 5 * *"),
            "error: --cron '0 5 * *' is not valid",
        ),
    ],
)
def test_bad_sources_are_one_line_and_change_nothing(run, tmp_path: Path, args, message) -> None:  # type: ignore[no-untyped-def]
    result = run(*args)
    assert result.exit_code == 2
    assert result.output.startswith(message) and result.output.count("\n") == 1
    assert not (tmp_path / "db" / "paperboy.db").exists()


def test_read_only_commands_need_a_database(run) -> None:  # type: ignore[no-untyped-def]
    for args in (("sources", "list"), ("sources", "remove", "arxiv:cs.LG"), ("fetch",)):
        result = run(*args)
        assert result.exit_code == 2 and result.output.startswith("error: no database at")


def test_an_unknown_name_or_date_for_fetch(run) -> None:  # type: ignore[no-untyped-def]
    run("sources", "add", "arxiv:cs.LG")
    result = run("fetch", "arxiv:cs.AI")
    assert result.exit_code == 2 and "no source 'arxiv:cs.AI'; add it first" in result.output
    result = run("fetch", "--since", "last week")
    assert result.exit_code == 2 and "use YYYY-MM-DD" in result.output


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """No 3 s waits between requests to the fake (politeness is tested in test_fetch_arxiv)."""
    real = fetch_store.fetch_config
    monkeypatch.setattr(
        fetch_store,
        "fetch_config",
        lambda settings: replace(real(settings), arxiv_delay=0, attempts=1, arxiv_page_size=4),
    )


def test_fetch_one_line_per_source_exit_1_when_one_fails(run, quick) -> None:  # type: ignore[no-untyped-def]
    fake = FakeArxiv(
        [
            Entry(f"2511.{i:05d}", f"Paper {i} on offline learning", f"Abstract number {i}.",
                  NOW - timedelta(hours=i + 1))
            for i in range(6)
        ]
    )  # fmt: skip
    with ServedInThread(fake.app()) as server:
        env = {"PAPERBOY_ARXIV_URL": f"http://127.0.0.1:{server.port}/api"}
        run("sources", "add", "arxiv:cs.LG")
        run("sources", "add", "feed:http://127.0.0.1:9/feed.rss", "--no-check")  # nothing there
        result = run("fetch", **env)
        lines = result.output.splitlines()
        assert result.exit_code == 1
        assert lines[0] == (
            "arxiv:cs.LG: 6 papers read: 6 added, 0 merged, 0 skipped (already stored); 0 errors"
        )
        assert lines[1].startswith("feed:http://127.0.0.1:9/feed.rss: 0 papers read; 1 error (")
        assert len(lines) == 2
        only = run("fetch", "arxiv:cs.LG", "--json", **env)
        assert only.exit_code == 0
        (document,) = json.loads(only.output)
        assert (document["read"], document["added"], document["error"]) == (6, 0, None)
        listed = run("sources", "list").output
        assert "arxiv:cs.LG: last success" in listed and "6 papers added" in listed
        assert "feed:http://127.0.0.1:9/feed.rss: last success never" in listed
        assert "last error" in listed and "(1 failure in a row)" in listed
        chat = run("chat", "--channel", "local:lab", "sources")
        assert chat.exit_code == 0 and "Papers come from 2 sources:" in chat.output
        assert run("find", "offline").exit_code == 0


def test_a_feed_is_read_before_it_is_added(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.fakes.feeds import FakeFeeds

    with ServedInThread(FakeFeeds().app()) as server:
        base = f"http://127.0.0.1:{server.port}"
        for path, message in (
            ("/index.html", "not a feed (an HTML page)"),
            ("/gone.rss", "HTTP 404"),
        ):
            result = run("sources", "add", f"feed:{base}{path}")
            assert result.exit_code == 2, result.output
            assert result.output.startswith(f"error: feed:{base}{path}: ")
            assert message in result.output and result.output.count("\n") == 1
            assert "nothing added" in result.output
        assert not (tmp_path / "db" / "paperboy.db").exists()  # nothing changed
        added = run("sources", "add", f"feed:{base}/cs.LG.rss")
        assert added.exit_code == 0 and f"Added feed:{base}/cs.LG.rss" in added.output
    unreachable = run("sources", "add", "feed:http://127.0.0.1:9/x.rss")
    assert unreachable.exit_code == 2 and "cannot reach 127.0.0.1:9" in unreachable.output
    assert len(run("sources", "list").output.splitlines()) == 1


def test_status_counts_fetched_papers_beside_the_last_ingest(run, quick) -> None:  # type: ignore[no-untyped-def]
    # `status` said "last ingest ... 19 added" of a store of 25, leaving out the 6 fetched.
    from digests.samples import sample_paths

    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"
    fake = FakeArxiv(
        [
            Entry(f"2511.{i:05d}", f"Paper {i} on offline learning", f"Abstract number {i}.",
                  NOW - timedelta(hours=i + 1))
            for i in range(6)
        ]
    )  # fmt: skip
    run("ingest", str(sample_paths()[0]))
    run("chat", "--channel", "local:lab", "subscribe offline-rl")
    run("sources", "add", "arxiv:cs.LG")
    waiting = "Papers: 19; last ingest {0}, 19 added; 1 source, not fetched yet."
    assert re.search(waiting.format(stamp), run("status").output)
    with ServedInThread(fake.app()) as server:
        env = {"PAPERBOY_ARXIV_URL": f"http://127.0.0.1:{server.port}/api"}
        assert run("fetch", **env).exit_code == 0
    counts = "last ingest {0}, 19 added; 6 papers fetched from 1 source, last fetch {0}\\."
    assert re.search("Papers: 25; " + counts.format(stamp), run("status").output)
    shown = run("chat", "--channel", "local:lab", "status").output
    assert re.search("Papers stored: 25; " + counts.format(stamp), shown), shown
