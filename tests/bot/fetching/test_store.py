"""Storing fetched papers: one paper whatever the source, the best of each
field, and fetches that resume without duplicates or gaps."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from bot.fetching import FetchConfig
from bot.fetching.store import SourceFetcher
from config.settings import Settings
from db import open_db
from db import papers as paper_store
from db import sources as source_store
from digests.digest import build_digest, ensure_channel
from digests.ingest import ingest_files
from digests.ingest.fetched import prepare_page, store_page
from digests.timestamps import stamp
from digests.topics import Catalog
from tests.fakes.arxiv_api import FakeArxiv
from tests.fakes.fetch_time import FakeTime
from tests.fakes.fetched import (
    NOW,
    OR_ABSTRACT,
    TITLE,
    V1,
    add,
    arxiv_paper,
    entries,
    fetch,
    openreview_paper,
    store,
)
from tests.fakes.server import serve

V2 = V1 + " We also add results on AntMaze and Kitchen, and release code."


def test_one_paper_from_arxiv_v1_v2_openreview_and_a_seed_list(
    tmp_path: Path, catalog: Catalog, settings: Settings
) -> None:
    db = open_db(":memory:")
    assert store(db, arxiv_paper(1, V1)) == (1, 0)
    (first,) = list(db.query("select id, added_at from papers"))

    # v2: the same paper, updated in place: not a new one, added_at unchanged.
    later = NOW + timedelta(days=1)
    assert store(db, arxiv_paper(2, V2), now=later) == (0, 1)
    paper = paper_store.get_paper(db, first["id"])
    assert paper is not None
    assert paper["abstract"] == V2 and paper["arxiv_version"] == 2
    assert paper["pdf_url"].endswith("v2") and paper["added_at"] == first["added_at"]

    # OpenReview: no arXiv link; same title (other case and punctuation), a shared author.
    assert store(db, openreview_paper(), now=later) == (0, 1)
    # A title-less seed list with OpenReview's abstract, and one with arXiv v1's.
    (tmp_path / "iclr2025.txt").write_text(f"ICLR 2025 papers\n\n{OR_ABSTRACT}\n")
    (tmp_path / "old.txt").write_text(f"Some list\n\n{V1}\n")
    summary = ingest_files(
        db, [tmp_path / "iclr2025.txt", tmp_path / "old.txt"], now=later, venue="ICLR 2025"
    )
    assert summary.added == 0

    assert paper_store.count_papers(db) == 1
    paper = paper_store.get_paper(db, first["id"])
    assert paper is not None
    assert paper["title"] == TITLE and not paper["title_derived"]  # the real one kept
    assert paper["venue"] == "ICLR 2025 Poster" and paper["year"] == 2025  # over "arXiv"
    assert paper["tldr_source"] == "authors" and paper["tldr"].startswith("A diffusion prior")
    assert paper["abstract"] == V2  # the newest arXiv version's
    assert paper["authors"] == ["Ada Lovelace", "Bob Smith"]
    assert paper["keywords"] == ["cs.LG", "cs.AI", "offline RL", "diffusion"]
    assert paper["categories"] == ["cs.LG", "cs.AI"]
    assert paper["affiliations"] == [["Analytical Engines Ltd"], []]
    assert paper["openreview_url"] == "https://openreview.net/forum?id=abcXYZ"
    assert paper["arxiv_url"] == "https://arxiv.org/abs/2511.01234"
    assert paper["published_at"] == stamp(NOW - timedelta(days=3))  # the earliest
    assert paper["added_at"] == first["added_at"]
    for ref in ("arXiv:2511.01234", "openreview:abcXYZ"):
        assert paper_store.resolve_paper(db, ref)["id"] == first["id"]  # type: ignore[index]
    assert set(paper["sources"]) >= {"arxiv:cs.LG", "iclr2025.txt", "old.txt"}

    # The digest shows it once, with its venue.
    ensure_channel(db, "local:lab", settings, later)
    from db import channels

    channels.add_subscription(db, "local:lab", "offline-rl", None, "t", stamp(NOW))
    digest = build_digest(db, "local:lab", later, catalog=catalog, settings=settings, preview=True)
    shown = [item.paper["id"] for item in digest.items]
    assert shown == [first["id"]]
    assert digest.items[0].paper["venue"] == "ICLR 2025 Poster"


def test_an_older_version_never_overwrites_a_newer_one() -> None:
    db = open_db(":memory:")
    store(db, arxiv_paper(2, V2))
    assert store(db, arxiv_paper(1, V1)) == (0, 0)
    (paper,) = [paper_store.decode(row) for row in db.query("select * from papers")]
    assert paper["abstract"] == V2 and paper["arxiv_version"] == 2


def test_same_title_without_a_shared_author_is_another_paper() -> None:
    db = open_db(":memory:")
    store(db, arxiv_paper(1, V1))
    other = replace(openreview_paper(), authors=["Grace Hopper"])
    assert store(db, other) == (1, 0)
    assert paper_store.count_papers(db) == 2


def test_two_arxiv_papers_with_one_title_and_authors_stay_two() -> None:
    """A follow-up that reuses its predecessor's title (same group, another arXiv id)
    is another paper: the title match never joins two different arXiv ids."""
    db = open_db(":memory:")
    store(db, arxiv_paper(1, V1))
    sequel = arxiv_paper(1, "A different abstract about a sequel.", arxiv_id="2511.05555",
                         url="https://arxiv.org/abs/2511.05555")  # fmt: skip
    assert store(db, sequel) == (1, 0)
    assert paper_store.count_papers(db) == 2
    # An OpenReview note with that title and no arXiv link still merges (into the first).
    assert store(db, openreview_paper()) == (0, 1)
    assert paper_store.count_papers(db) == 2


@pytest.mark.parametrize(
    ("title", "authors", "merges"),
    [
        ("Editorial", ["Ada Lovelace"], False),  # one word
        ("Deep Learning", ["Ada Lovelace"], False),  # two words
        ("Editorial for the special issue on offline learning", ["Ada Lovelace"], False),
        ("Introduction to the special issue on planning", ["Ada Lovelace"], False),
        ("Erratum to: learning to plan with agents", ["Ada Lovelace"], False),
        ("Offline Policy Learning", ["Ada Lovelace", "Grace Hopper"], False),  # 1 shared
        ("Offline Policy Learning", ["Ada Lovelace"], True),  # all of a single author
        ("Offline Policy Learning", ["Ada Lovelace", "Bob Smith"], True),  # 2 shared
        ("Offline Policy Learning Revisited", ["Ada Lovelace"], True),  # 4 words, 1 shared
    ],
)
def test_short_and_generic_titles_do_not_match_on_title_alone(
    title: str, authors: list[str], merges: bool
) -> None:
    db = open_db(":memory:")
    first = replace(openreview_paper(), title=title, openreview_id="n1",
                    authors=["Ada Lovelace", "Bob Smith"], abstract="First abstract, one.")  # fmt: skip
    second = replace(openreview_paper(), title=title, openreview_id="n2",
                     authors=authors, abstract="Another abstract entirely, two.")  # fmt: skip
    store(db, first)
    store(db, second)
    assert paper_store.count_papers(db) == (1 if merges else 2)


def test_a_paper_with_a_secret_is_skipped_not_the_page() -> None:
    leaked = arxiv_paper(1, V1 + " token xoxb-1234567890-1234567890-abcdefghijABCDEFGHIJklmn")
    clean = replace(arxiv_paper(1, V2), arxiv_id="2511.09999", title="Another paper on RL")
    prepared, skipped = prepare_page([leaked, clean], NOW)
    assert skipped == 1 and len(prepared) == 1


# --- fetching into the store ---------------------------------------------------------


@pytest.fixture
async def arxiv_server():  # type: ignore[no-untyped-def]
    fake = FakeArxiv(entries(12))
    runner, port = await serve(fake.app())
    config = FetchConfig(
        arxiv_url=f"http://127.0.0.1:{port}/api", arxiv_page_size=5, arxiv_revisions=False
    )
    try:
        yield fake, config
    finally:
        await runner.cleanup()


async def test_a_fetch_stores_papers_and_a_second_adds_nothing(
    tmp_path: Path,
    arxiv_server: tuple[FakeArxiv, FetchConfig],
) -> None:
    _, config = arxiv_server
    path = tmp_path / "p.db"
    db = open_db(path)
    add(db, "arxiv:cs.LG")
    (outcome,) = await fetch(path, config)
    assert (outcome.read, outcome.added, outcome.error, outcome.complete) == (12, 12, None, True)
    assert outcome.describe() == (
        "arxiv:cs.LG: 12 papers read: 12 added, 0 merged, 0 skipped (already stored); 0 errors"
    )
    row = source_store.get_source(db, "arxiv:cs.LG")
    assert row is not None
    assert row["papers_added"] == 12 and row["last_success_at"] == stamp(NOW)
    assert row["cursor"] == stamp(NOW - timedelta(hours=1)) and row["fetching_by"] is None
    (again,) = await fetch(path, config, clock=NOW + timedelta(hours=1))
    assert (again.added, again.merged, again.error) == (0, 0, None)
    assert paper_store.count_papers(db) == 12
    published = {r["published_at"] for r in db.query("select published_at from papers")}
    assert stamp(NOW - timedelta(hours=1)) in published


async def test_each_page_is_stamped_when_it_is_stored(
    tmp_path: Path, arxiv_server: tuple[FakeArxiv, FetchConfig]
) -> None:
    """A digest built while a fetch is under way must find the later pages new next time:
    their added_at is when they were stored, not when the fetch began."""
    _, config = arxiv_server
    path = tmp_path / "p.db"
    db = open_db(path)
    add(db, "arxiv:cs.LG")
    ticks = iter(NOW + timedelta(minutes=minute) for minute in range(100))
    fetcher = SourceFetcher(
        lambda: open_db(path), config, clock=lambda: next(ticks), sleep=FakeTime().sleep,
        monotonic=FakeTime().clock,
    )  # fmt: skip
    (outcome,) = await fetcher.fetch(None)
    assert outcome.added == 12  # three pages of 5, 5 and 2
    added = sorted({r["added_at"] for r in db.query("select added_at from papers")})
    assert len(added) == 3 and added[0] > stamp(NOW)


async def test_a_fetch_cut_off_after_a_page_resumes_without_gaps_or_duplicates(
    tmp_path: Path,
    arxiv_server: tuple[FakeArxiv, FetchConfig],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, config = arxiv_server
    path = tmp_path / "p.db"
    db = open_db(path)
    add(db, "arxiv:cs.LG")
    real = SourceFetcher._store
    pages: list[int] = []

    def dies_after_one_page(self, prepared, now):  # type: ignore[no-untyped-def]
        pages.append(len(prepared))
        if len(pages) == 2:
            raise RuntimeError("killed")  # as if the process died before page 2 was stored
        return real(self, prepared, now)

    monkeypatch.setattr(SourceFetcher, "_store", dies_after_one_page)
    (cut,) = await fetch(path, config)
    assert cut.error == "unexpected failure (RuntimeError: killed)" and cut.added == 5
    row = source_store.get_source(db, "arxiv:cs.LG")
    assert row is not None and row["cursor"] is None and row["last_error"] == cut.error
    assert row["next_try_at"] == stamp(NOW + timedelta(minutes=15))
    monkeypatch.setattr(SourceFetcher, "_store", real)
    (resumed,) = await fetch(path, config, clock=NOW + timedelta(minutes=20))
    assert resumed.error is None and (resumed.added, resumed.read) == (7, 12)
    assert paper_store.count_papers(db) == 12
    ids = {r["alias"] for r in db.query("select alias from paper_aliases")}
    assert {f"arXiv:2511.{i:05d}" for i in range(12)} <= ids
    row = source_store.get_source(db, "arxiv:cs.LG")
    assert row is not None and row["consecutive_failures"] == 0 and row["next_try_at"] is None


async def test_a_failing_source_stops_no_other(
    tmp_path: Path,
    arxiv_server: tuple[FakeArxiv, FetchConfig],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, config = arxiv_server
    path = tmp_path / "p.db"
    db = open_db(path)
    add(db, "arxiv:cs.LG")
    add(db, "feed:http://127.0.0.1:9/nothing.rss")  # nothing listens on port 9
    config = replace(config, attempts=1)
    outcomes = await fetch(path, config)
    by_name = {o.name: o for o in outcomes}
    assert by_name["arxiv:cs.LG"].added == 12 and not by_name["arxiv:cs.LG"].failed
    failed = by_name["feed:http://127.0.0.1:9/nothing.rss"]
    assert failed.failed and "\n" not in failed.describe()
    row = source_store.get_source(db, failed.name)
    assert row is not None and row["consecutive_failures"] == 1 and row["last_error"]
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and "fetch of" in r.message]
    assert len(warnings) == 1 and warnings[0].exc_info is None


async def test_a_source_another_live_process_fetches_is_left_alone(
    tmp_path: Path, arxiv_server: tuple[FakeArxiv, FetchConfig]
) -> None:
    import os

    from bot.delivery import MACHINE

    fake, config = arxiv_server
    path = tmp_path / "p.db"
    db = open_db(path)
    add(db, "arxiv:cs.LG")
    other = f"{MACHINE}:{os.getppid()}"  # alive: our parent
    assert source_store.claim(db, "arxiv:cs.LG", other, stamp(NOW), None)
    (outcome,) = await fetch(path, config)
    assert outcome.busy and not outcome.failed and fake.requests == []
    # A claim by a process that is gone is taken over.
    db.execute("update sources set fetching_by = ?", [f"{MACHINE}:999999999"])
    db.conn.commit()
    (outcome,) = await fetch(path, config)
    assert outcome.added == 12


async def test_a_feed_is_asked_again_with_its_validators(tmp_path: Path) -> None:
    from tests.fakes.feeds import FakeFeeds

    fake = FakeFeeds()
    runner, port = await serve(fake.app())
    try:
        path = tmp_path / "p.db"
        db = open_db(path)
        name = f"feed:http://127.0.0.1:{port}/cs.LG.rss"
        add(db, name)
        (first,) = await fetch(path, FetchConfig())
        assert (first.read, first.added, first.error) == (2, 2, None)
        row = source_store.get_source(db, name)
        assert row is not None and row["etag"] == '"v1"'
        assert row["last_modified"] == "Sat, 28 Nov 2026 12:00:00 GMT"
        (second,) = await fetch(path, FetchConfig(), clock=NOW + timedelta(days=1))
        assert fake.requests[-1]["If-None-Match"] == '"v1"'
        assert (second.read, second.added, second.error) == (0, 0, None)
        row = source_store.get_source(db, name)
        assert row is not None and row["etag"] == '"v1"'  # kept through the 304
        assert row["last_success_at"] == stamp(NOW + timedelta(days=1))
        linked = paper_store.resolve_paper(db, "arXiv:2611.01234")
        assert linked is not None and linked["authors"] == [
            "Grace Hopper", "Alan Turing", "Emmy Noether"
        ]  # fmt: skip
    finally:
        await runner.cleanup()


async def test_a_venue_read_again_enriches_only_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from digests.ingest import fetched
    from tests.fakes.openreview_api import FakeOpenReview, note

    fake = FakeOpenReview(
        [note(f"n{i}", f"Paper number {i} on offline RL", f"Abstract of paper {i}.",
              venue="ICLR 2025" if i == 3 else "ICLR 2025 Poster")
         for i in range(5)]
    )  # fmt: skip
    runner, port = await serve(fake.app())
    enriched: list[str] = []
    real = fetched.fetched_row

    def counted(paper, now, limits=None):  # type: ignore[no-untyped-def]
        enriched.append(paper.openreview_id)
        return real(paper, now, limits)

    monkeypatch.setattr(fetched, "fetched_row", counted)
    try:
        path = tmp_path / "p.db"
        db = open_db(path)
        add(db, "openreview:ICLR.cc/2025/Conference")
        config = FetchConfig(openreview_url=f"http://127.0.0.1:{port}")
        (first,) = await fetch(path, config)
        assert (first.added, len(enriched)) == (5, 5)
        enriched.clear()
        fake.notes[3]["content"]["venue"]["value"] = "ICLR 2025 Oral"  # more precise
        fake.notes[1]["tmdate"] += 5000  # touched, nothing changed
        (second,) = await fetch(path, config, clock=NOW + timedelta(days=1))
        assert enriched == ["n3"]
        assert (second.read, second.added, second.merged, second.skipped) == (5, 0, 1, 4)
        oral = paper_store.resolve_paper(db, "openreview:n3")
        assert oral is not None and oral["venue"] == "ICLR 2025 Oral"
    finally:
        await runner.cleanup()


async def test_a_fetch_cancelled_twice_still_releases_its_claim(tmp_path: Path) -> None:
    """A stop cancels a fetch twice (the runner's halt, then the scheduler's). The second
    cancel landed while the first was being recorded: the claim stayed held (the
    paperboy run SIGTERM test failed about one run in two)."""
    import asyncio

    from aiohttp import web

    asked, never = asyncio.Event(), asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        asked.set()
        await never.wait()
        return web.Response(text="")

    app = web.Application()
    app.router.add_get("/api/query", hang)
    runner, port = await serve(app)
    path = tmp_path / "p.db"
    add(open_db(path), "arxiv:cs.LG")
    finishing, proceed = asyncio.Event(), asyncio.Event()

    async def in_thread(func, *args):  # type: ignore[no-untyped-def]
        if getattr(func, "__name__", "") == "_finish":
            finishing.set()
            await proceed.wait()  # the moment the second cancel arrives
        return await asyncio.to_thread(func, *args)

    fetcher = SourceFetcher(
        lambda: open_db(path), FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api"),
        clock=lambda: NOW, in_thread=in_thread,
    )  # fmt: skip
    task = asyncio.create_task(fetcher.fetch())
    try:
        await asked.wait()
        task.cancel()
        await finishing.wait()
        task.cancel()
        await asyncio.sleep(0)
        proceed.set()
        await asyncio.wait([task])
    finally:
        never.set()
        await runner.cleanup()
    assert task.cancelled()
    row = source_store.get_source(open_db(path), "arxiv:cs.LG")
    assert row is not None and row["fetching_by"] is None
    assert row["last_success_at"] is None and row["last_error"] is None


# --- what a fetch line counts ----------------------------------------------------------


def test_the_same_paper_from_a_second_source_is_already_stored_not_merged() -> None:
    db = open_db(":memory:")
    assert store(db, arxiv_paper(1, V1)) == (1, 0)
    # A phrase search finds the paper the category listing stored: it brings only its
    # source's name, and a reader sees nothing new.
    prepared, _ = prepare_page([replace(arxiv_paper(1, V1), source='arxiv:"offline rl"')], NOW)
    summary = store_page(db, prepared, NOW + timedelta(hours=1))
    assert (summary.added, summary.merged, summary.skipped, summary.restamped) == (0, 0, 1, 1)
    (paper,) = list(db.query("select sources from papers"))
    assert paper["sources"] == '["arxiv:cs.LG", "arxiv:\\"offline rl\\""]'  # still recorded
    # One that brings what the paper lacked is a merge.
    summary = store_page(db, prepare_page([openreview_paper()], NOW)[0], NOW)
    assert (summary.added, summary.merged, summary.skipped) == (0, 1, 0)


async def test_a_fetch_line_adds_up_and_names_what_it_did_not_store(tmp_path: Path) -> None:
    secret = "token xoxb-1234567890-1234567890-abcdefghijABCDEFGHIJklmn"
    leaked = replace(entries(1)[0], arxiv_id="2511.99999", abstract=f"Leaked: {secret}.")
    fake = FakeArxiv([*entries(4), leaked])
    runner, port = await serve(fake.app())
    try:
        config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api", arxiv_revisions=False)
        path = tmp_path / "p.db"
        db = open_db(path)
        add(db, "arxiv:cs.LG")
        add(db, 'arxiv:"offline reinforcement learning"')
        first, second = await fetch(
            path, config, "arxiv:cs.LG", 'arxiv:"offline reinforcement learning"'
        )
    finally:
        await runner.cleanup()
    assert first.describe() == (
        "arxiv:cs.LG: 5 papers read: 4 added, 0 merged, 0 skipped (already stored), "
        "1 not stored (empty, too long or holding a secret); 0 errors"
    )
    # The papers the first source just stored are already stored for the second.
    assert second.describe() == (
        'arxiv:"offline reinforcement learning": 5 papers read: 0 added, 0 merged, '
        "4 skipped (already stored), 1 not stored (empty, too long or holding a secret); "
        "0 errors"
    )
    for outcome in (first, second):
        assert outcome.read == outcome.added + outcome.merged + outcome.skipped + outcome.ignored
    assert second.as_json()["skipped"] == 4 and second.as_json()["ignored"] == 1


def test_an_older_arxiv_version_never_lengthens_the_abstract_its_authors_shortened() -> None:
    db = open_db(":memory:")
    store(db, arxiv_paper(2, V1))  # v2 is V1: the authors cut v1's last sentence
    summary = store_page(db, prepare_page([arxiv_paper(1, V2)], NOW)[0], NOW)
    (paper,) = list(db.query("select abstract, arxiv_version from papers"))
    assert (paper["abstract"], paper["arxiv_version"]) == (V1, 2)
    assert (summary.merged, summary.skipped, summary.other_abstracts) == (0, 1, 0)


async def test_a_fetch_line_names_the_abstracts_it_did_not_store(tmp_path: Path) -> None:
    fake = FakeArxiv(entries(3))
    path = tmp_path / "p.db"
    db = open_db(path)
    # A list stored two of these papers first, with other abstracts of theirs.
    lines = [
        json.dumps(
            {
                "title": entry.title,
                "abstract": f"Another text of paper {n}.",
                "authors": ["Ada Lovelace"],
            }
        )
        for n, entry in enumerate(entries(2))
    ]
    (tmp_path / "list.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ingest_files(db, [tmp_path / "list.jsonl"], now=NOW)
    add(db, "arxiv:cs.LG")
    runner, port = await serve(fake.app())
    try:
        config = FetchConfig(arxiv_url=f"http://127.0.0.1:{port}/api", arxiv_revisions=False)
        (outcome,) = await fetch(path, config)
    finally:
        await runner.cleanup()
    # What was not stored is said beside the counts, before the errors.
    assert outcome.describe() == (
        "arxiv:cs.LG: 3 papers read: 1 added, 2 merged, 0 skipped (already stored); "
        "2 with a different abstract (the stored one kept); 0 errors"
    )
    shown = outcome.as_json()
    assert (shown["skipped"], shown["ignored"], shown["other_abstracts"]) == (0, 0, 2)
    assert {row["abstract"] for row in db.query("select abstract from papers")} >= {
        "Another text of paper 0.",
        "Another text of paper 1.",
    }
