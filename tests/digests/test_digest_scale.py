"""Digests at scale: many channels built at once give the digests each would get alone,
from the naive per-channel code; one scorer for many topics gives `score`'s scores;
the backlog reads a bounded number of archive papers, not the store."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from bench.digest import naive_items
from config.settings import Settings
from db import channels as store
from db.papers import decode
from db.store import Store
from digests import digest as digest_module
from digests.digest import build_digest, build_digests, ensure_channel
from digests.ingest import ingest_files
from digests.matching import Matcher, PaperText, Term, normalise, score
from digests.timestamps import stamp
from digests.topics import Catalog, custom_topic
from tests.conftest import NOW
from tests.fakes.digest import deliver_all
from tests.fakes.digest_world import FREE_TEXTS, LONG_AGO, follow, picks, world  # noqa: F401

NOW_MERGED = stamp(NOW - timedelta(hours=5, seconds=17))


def copy_of(db: Store) -> Store:
    copy = Store(sqlite3.connect(":memory:", check_same_thread=False))
    db.conn.backup(copy.conn)
    return copy


@pytest.mark.parametrize("size", [1, 2, 50])
def test_many_channels_built_at_once_get_what_the_old_code_picked_for_each(
    world: Store, catalog: Catalog, settings: Settings, size: int
) -> None:
    settings = replace(settings, digest_size=size)
    week_ago = NOW - timedelta(days=7)
    follow(world, settings, "local:a", "offline-rl", "rlhf", "diffusion policy", at=week_ago)
    follow(world, settings, "local:b", "rlhf", "diffusion policy", "offline-rl", at=week_ago)
    follow(world, settings, "local:c", "graph neural network", "exploration", "diffusion-models")
    follow(world, settings, "local:d", "llm-reasoning-agents", "language model", "robot robot")
    follow(world, settings, "local:e", "exploration", "rlhf", at=week_ago)
    follow(world, settings, "local:f")  # no topics: an empty digest
    store.set_backlog(world, "local:d", True)
    # a: a previous digest that reached it (its papers are claimed, its window shorter);
    # e: one that never did (its papers are new again).
    deliver_all(world, build_digest(world, "local:a", week_ago, catalog=catalog, settings=settings))
    build_digest(world, "local:e", week_ago, catalog=catalog, settings=settings)
    channels = ["local:a", "local:b", "local:c", "local:d", "local:e", "local:f"]
    expected = {ch: naive_items(world, ch, NOW, catalog, settings) for ch in channels}
    assert any(expected.values())
    # The backlog fills empty slots: with one slot a topic, each of local:d's topics has a
    # new paper since free text keeps its phrase, so only 2 and 50 reach it.
    assert size == 1 or any(a for ch in expected.values() for _, a in ch)
    one_by_one = copy_of(world)
    built = list(build_digests(world, channels, NOW, catalog=catalog, settings=settings))
    assert sorted(digest.channel for digest in built) == channels
    assert {digest.channel: picks(digest) for digest in built} == expected
    assert all(digest.recorded for digest in built)
    for channel in channels:
        alone = build_digest(one_by_one, channel, NOW, catalog=catalog, settings=settings)
        assert picks(alone) == expected[channel]
    # Built once: a second batch returns the recorded digests.
    again = build_digests(world, channels, NOW, catalog=catalog, settings=settings)
    assert sorted(d.digest_id for d in again) == sorted(d.digest_id for d in built)


def test_the_backlog_reads_a_bounded_number_of_archive_papers(
    world: Store, catalog: Catalog, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.execute("update papers set added_at = ?", [stamp(LONG_AGO)])  # nothing is new
    follow(world, settings, "local:d", "offline-rl")
    store.set_backlog(world, "local:d", True)
    monkeypatch.setattr(digest_module, "ARCHIVE_LIMIT", 2)
    settings = replace(settings, digest_size=1)  # filled from the first page
    read: list[str] = []

    def counting(row: dict[str, Any]) -> dict[str, Any]:
        read.append(str(row["id"]))
        return decode(row)

    monkeypatch.setattr(digest_module, "decode", counting)
    digest = build_digest(world, "local:d", NOW, catalog=catalog, settings=settings, preview=True)
    assert digest.items and all(item.from_archive for item in digest.items)
    assert len(set(read)) <= 2  # of 38 stored papers: the best 2 full-text matches only


def test_one_scorer_for_many_topics_gives_the_scores_of_score(
    seeded_db: Store, catalog: Catalog
) -> None:
    topics = {topic.id: topic.terms for topic in catalog.topics}
    for text in (*FREE_TEXTS, "a a", "???", "learning learning"):
        topics[custom_topic(text).id] = custom_topic(text).terms
    topics["overlaps"] = (Term.of("a a", 1.0), Term.of("a", 0.7), Term.of("a a a", 2.0))
    matcher = Matcher(topics)
    texts = [PaperText.of(decode(row)) for row in seeded_db.query("select * from papers")]
    texts += [
        PaperText(normalise("a a a b a"), normalise("a a; x"), normalise("a a a b a a a a")),
        PaperText(normalise(""), normalise(""), normalise("")),
        PaperText(" ", " ", normalise("robot robot robot learning learning")),
        PaperText("unnormalised", " ", "robot"),
    ]
    checked = 0
    for text in texts:
        found = matcher.scores(text)
        for key, terms in topics.items():
            assert found.get(key, 0.0) == score(text, terms), (key, text.title)
            checked += bool(found.get(key))
    assert checked > 50


def test_a_window_read_for_one_digest_serves_the_next_only_while_its_papers_are_unchanged(
    tmp_path: Any, seed_paths: list[Any], catalog: Catalog, settings: Settings
) -> None:
    """Channels built one at a time (as the scheduler does) reuse the window the first
    one read; a paper merged (new text), or stamped into the window, is seen by the next."""
    from db import open_db
    from digests.digest import select_items

    db = open_db(tmp_path / "papers.db")
    ingest_files(db, seed_paths, now=LONG_AGO)
    ids = [row["id"] for row in db.query("select id from papers order by id")]
    new = stamp(NOW - timedelta(days=2))
    for paper_id in ids[::2]:
        db.execute("update papers set added_at = ? where id = ?", [new, paper_id])
    settings = replace(settings, digest_size=99)
    for channel in ("local:a", "local:b", "local:c"):
        follow(db, settings, channel, "offline-rl", "diffusion policy", "rlhf")
    first = build_digest(db, "local:a", NOW, catalog=catalog, settings=settings)
    picked = {paper_id for paper_id, _ in picks(first)}
    assert picks(first) == naive_items(db, "local:b", NOW, catalog, settings)
    # A window paper no topic picked is merged into an offline-RL one (its text and
    # `updated_at` change); an archive paper about offline RL is stamped into the window.
    merged = next(paper_id for paper_id in ids[::2] if paper_id not in picked)
    db.execute(
        "update papers set abstract = ?, abstract_text = ?, updated_at = ? where id = ?",
        # (a stamp no other test gives this paper: texts are cached by id and stamp)
        [*["Offline reinforcement learning from logged data. " * 3] * 2, NOW_MERGED, merged],
    )
    papers = [decode(row) for row in db.query("select * from papers order by id")]
    offline = [t for t in catalog.topics if t.id == "offline-rl"]
    matching = select_items(papers, offline, threshold=catalog.threshold, per_topic=99)
    restamped = next(str(i.paper["id"]) for i in matching if i.paper["id"] in ids[1::2])
    db.execute("update papers set added_at = ? where id = ?", [new, restamped])
    expected = naive_items(db, "local:b", NOW, catalog, settings)
    assert {merged, restamped} <= {paper_id for paper_id, _ in expected}
    assert picks(build_digest(db, "local:b", NOW, catalog=catalog, settings=settings)) == expected
    # Unchanged since: the next channel gets the same from the window kept.
    expected = naive_items(db, "local:c", NOW, catalog, settings)
    assert picks(build_digest(db, "local:c", NOW, catalog=catalog, settings=settings)) == expected


def test_a_recorded_digest_is_returned_as_get_digest_reads_it(
    world: Store, settings: Settings
) -> None:
    """insert_digest returns the row it wrote without reading it back: the same values,
    of the same types, as get_digest reads (an int score is a REAL, a str paper id)."""
    from db import digests as digest_store

    ensure_channel(world, "local:rec", settings, NOW)
    paper_ids = [row["id"] for row in world.query("select id from papers order by id limit 2")]
    items = [
        {"paper_id": paper_ids[0], "topics": ["offline-rl", "x"], "score": 5, "from_archive": True},
        {"paper_id": paper_ids[1], "topics": [], "score": 2.5},
    ]
    written = digest_store.insert_digest(
        world, "local:rec", "2026-W49", stamp(NOW), ["offline-rl"], items, since=stamp(LONG_AGO)
    )
    read = digest_store.get_digest(world, "local:rec", "2026-W49")
    assert written == read
    assert [type(item["score"]) for item in written["items"]] == [float, float]
    # Recorded meanwhile by another process: that one is returned, as it was read.
    again = digest_store.insert_digest(world, "local:rec", "2026-W49", stamp(NOW), [], [])
    assert again == read
    empty = digest_store.insert_digest(world, "local:rec", "2026-W50", stamp(NOW), [], [])
    assert empty == digest_store.get_digest(world, "local:rec", "2026-W50")
    whole = digest_store.last_digest(world, "local:rec")
    assert whole is not None and whole["week"] == "2026-W50"
    row = digest_store.last_digest(world, "local:rec", with_items=False)
    assert row == {key: value for key, value in whole.items() if key != "items"}


def test_a_batch_reads_each_picked_papers_row_once(
    world: Store, catalog: Catalog, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The channels of a batch share papers: each picked paper's row is read once per
    build, not once per channel, and every digest still shows the whole row."""
    read: list[str] = []
    real = digest_module._rows

    def counting(db: Store, paper_ids: list[str]) -> dict[str, dict[str, Any]]:
        read.extend(paper_ids)
        return real(db, paper_ids)

    monkeypatch.setattr(digest_module, "_rows", counting)
    channels = [f"local:same{n}" for n in range(4)]
    for channel in channels:
        follow(world, settings, channel, "offline-rl", "rlhf", "diffusion policy")
    built = list(build_digests(world, channels, NOW, catalog=catalog, settings=settings))
    shown = {str(item.paper["id"]) for digest in built for item in digest.items}
    assert shown and sorted(read) == sorted(shown)  # each once, though 4 channels show it
    for digest in built:
        for item in digest.items:
            row = decode(
                next(world.iterate("select * from papers where id = ?", [item.paper["id"]]))
            )
            assert item.paper == row


def test_the_archive_ranks_a_topics_matches_once_for_all_its_pages(
    world: Store, catalog: Catalog, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages past the first come from the same full-text query (ranking every match is
    its cost), and hold what a query per page held."""
    world.execute("update papers set added_at = ?", [stamp(LONG_AGO)])  # nothing is new
    follow(world, settings, "local:d", "offline-rl")
    store.set_backlog(world, "local:d", True)
    monkeypatch.setattr(digest_module, "ARCHIVE_LIMIT", 1)
    monkeypatch.setattr(digest_module, "ARCHIVE_PAGES", 3)
    topic = catalog.get("offline-rl")
    assert topic is not None
    queries: list[str] = []
    world.conn.set_trace_callback(
        lambda sql: queries.append(sql) if sql.startswith("select rowid from papers_fts") else None
    )
    archive = digest_module._Archive(stamp(NOW), 0.0)
    pages = [archive.hits(world, topic, page) for page in range(3)]
    world.conn.set_trace_callback(None)
    assert len(queries) == 1
    expression = " OR ".join(dict.fromkeys(f'"{t.phrase.strip()}"' for t in topic.terms))
    ranked = [
        row[0]
        for row in world.execute(
            "select rowid from papers_fts where papers_fts match ? order by rank", [expression]
        )
    ]
    assert len(ranked) >= 3
    for page, (candidates, more) in enumerate(pages):
        (paper_id,) = [
            r[0] for r in world.execute("select id from papers where rowid = ?", [ranked[page]])
        ]
        assert [c[0] for c in candidates] == [paper_id]
        assert more


def test_a_window_of_more_than_keep_papers_is_not_kept(
    tmp_path: Any,
    seed_paths: list[Any],
    catalog: Catalog,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept windows are bounded: one of more than KEEP_PAPERS papers serves its own build
    and is then dropped (read again by the next), a smaller one is kept."""
    from db import open_db

    db = open_db(tmp_path / "papers.db")
    ingest_files(db, seed_paths, now=NOW - timedelta(days=2))  # all 38 new
    follow(db, settings, "local:a", "offline-rl")
    follow(db, settings, "local:b", "offline-rl")
    reads: list[int] = []
    real = digest_module._Window.read

    def counting(*args: Any, **kwargs: Any) -> Any:
        window = real(*args, **kwargs)
        reads.append(len(window.papers))
        return window

    monkeypatch.setattr(digest_module._Window, "read", counting)
    digest_module.WINDOWS.clear()
    monkeypatch.setattr(digest_module._Windows, "KEEP_PAPERS", 37)
    big = build_digest(db, "local:a", NOW, catalog=catalog, settings=settings, preview=True)
    assert reads == [38] and not digest_module.WINDOWS._cached
    again = build_digest(db, "local:a", NOW, catalog=catalog, settings=settings, preview=True)
    assert reads == [38, 38] and picks(again) == picks(big)
    monkeypatch.setattr(digest_module._Windows, "KEEP_PAPERS", 38)
    build_digest(db, "local:a", NOW, catalog=catalog, settings=settings, preview=True)
    kept = build_digest(db, "local:b", NOW, catalog=catalog, settings=settings, preview=True)
    assert reads == [38, 38, 38] and picks(kept) == picks(big)
    digest_module.WINDOWS.clear()
