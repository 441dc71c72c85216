"""The per-paper view cache (digests/render/view.py): the many digests of one scheduler
batch share papers, so each paper's escaped text is computed once; the output must be
byte-identical to rendering afresh, and a paper whose shown fields change is never
rendered from its old text."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.fetching.schedule import FetchJobs
from bot.send import platform_messages
from bot.services import Services
from config.settings import load_settings
from digests.digest import Digest, DigestItem
from digests.render import discord as discord_render
from digests.render import slack as slack_render
from digests.render import view
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.render import make_digest, paper
from tests.fakes.rendered import channel_digests, rendered, uncached  # noqa: F401


def test_cached_and_uncached_rendering_are_identical(
    channel_digests: list[Digest], monkeypatch: pytest.MonkeyPatch
) -> None:
    view.shown_cache_clear()
    cold = rendered(channel_digests)
    warm = rendered(channel_digests)  # every paper view now comes from the cache
    with monkeypatch.context() as patch:
        uncached(patch)
        fresh = rendered(channel_digests)
    assert cold == warm == fresh
    assert "Change topics" in fresh


def test_each_paper_is_viewed_once_per_platform(
    channel_digests: list[Digest], monkeypatch: pytest.MonkeyPatch
) -> None:
    view.shown_cache_clear()
    calls: list[str] = []
    real = view._shown

    def counting(paper: dict[str, Any], escape: view.Escape) -> view._Shown:
        calls.append(str(paper["id"]))
        return real(paper, escape)

    monkeypatch.setattr(view, "_shown", counting)
    rendered(channel_digests)
    papers = {str(item.paper["id"]) for d in channel_digests for item in d.items}
    assert len(calls) == 3 * len(papers)  # slack, discord, plain escapes


def one_paper_digest(row: dict[str, Any], catalog: Catalog) -> Digest:
    return make_digest([row], list(catalog.topics[:2]))


@pytest.mark.parametrize(
    "change",
    [
        {"title": "A New Title For Scaling Sparse Attention"},
        {"tldr": "The new TLDR says something else entirely."},
        {"authors": ["Ada Lovelace", "Alan Turing"]},
        {"venue": "NeurIPS", "year": 2026},
        {"url": "https://example.org/new-page"},
        {"code_url": "https://github.com/example/new-code"},
    ],
)
def test_a_changed_paper_shows_its_new_text_in_the_next_batch(
    catalog: Catalog, change: dict[str, Any]
) -> None:
    view.shown_cache_clear()
    row = paper(
        "We propose Sparse Attention at scale. It beats dense attention.",
        title="An Old Title For Sparse Attention",
        url="https://example.org/old-page",
    )
    before = one_paper_digest(row, catalog)
    first = rendered([before])
    # same id, same updated_at stamp (two merges in one ingest share it): only fields change
    after = one_paper_digest({**row, **change}, catalog)
    second = rendered([after])
    assert second != first
    for value in change.values():
        shown = value if not isinstance(value, list) else value[0]
        assert str(shown) in second
    view.shown_cache_clear()
    assert rendered([after]) == second  # what a fresh process renders


def test_a_paper_with_an_unhashable_field_is_rendered_uncached(catalog: Catalog) -> None:
    view.shown_cache_clear()
    row = paper("We propose Odd Authors. It works.", title="Odd Authors")
    odd = {**row, "authors": [{"name": "Ada"}]}
    text = rendered([one_paper_digest(odd, catalog)])
    assert "Odd Authors" in text
    assert rendered([one_paper_digest(odd, catalog)]) == text


def test_the_cache_is_bounded(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    view.shown_cache_clear()
    monkeypatch.setattr(view, "SHOWN_CACHE_SIZE", 5)
    rows = [paper(f"We propose Method{i}. It works.", title=f"Method {i}") for i in range(12)]
    items = tuple(DigestItem(r, (), 1.0) for r in rows)
    digest = one_paper_digest(rows[0], catalog)
    rendered([replace(digest, items=items)])
    assert len(view._shown_cache) <= 5


def test_each_platform_item_is_made_once_per_view(
    channel_digests: list[Digest], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Slack section or Discord embed is made once per distinct paper view (paper,
    topics, section, archive mark), however many digests show it."""
    view.shown_cache_clear()
    made: list[str] = []
    for module, name in ((slack_render, "paper_section"), (discord_render, "paper_embed")):
        real = getattr(module, name)
        monkeypatch.setattr(
            module, name, lambda paper, real=real, name=name: made.append(name) or real(paper)
        )
    first = rendered(channel_digests)
    count = len(made)
    assert count > 0
    assert rendered(channel_digests) == first
    assert len(made) == count  # the second time, every item came from the cache


def test_a_caller_changing_a_rendered_item_changes_no_other_message(
    channel_digests: list[Digest],
) -> None:
    view.shown_cache_clear()
    first = rendered(channel_digests)
    for digest in channel_digests:
        for payload, _ in platform_messages(digest, "discord", "post"):
            for embed in payload["embeds"]:
                embed["description"] = "changed"
                embed["fields"].append({"name": "x", "value": "y"})
        for payload, _ in platform_messages(digest, "slack", "post"):
            for block in payload["blocks"]:
                block.get("text", {})["text"] = "changed"
    assert rendered(channel_digests) == first


def test_the_item_cache_is_bounded(
    channel_digests: list[Digest], monkeypatch: pytest.MonkeyPatch
) -> None:
    view.shown_cache_clear()
    monkeypatch.setattr(view, "ITEM_CACHE_SIZE", 5)
    rendered(channel_digests)
    assert 0 < len(view._item_cache) <= 5


class SlowFetcher:
    """A SourceFetcher stand-in whose `due` takes a while (a busy sources table)."""

    def __init__(self) -> None:
        self.asked: list[datetime] = []
        self.release = threading.Event()
        self.answer = ["arxiv:cs.LG"]

    def due(self, now: datetime, older_than: timedelta) -> list[str]:
        self.asked.append(now)
        self.release.wait(5)
        return list(self.answer)


def fetch_jobs(tmp_path: Path, catalog: Catalog) -> tuple[FetchJobs, SlowFetcher, list[list[str]]]:
    settings = load_settings({"PAPERBOY_LOCAL_DIR": str(tmp_path / "outbox")}, dotenv=None)
    services = Services(tmp_path / "p.db", settings, catalog, clock=lambda: NOW)
    fetcher = SlowFetcher()
    jobs = FetchJobs(services, AsyncIOScheduler(), lambda work, name: None, fetcher=fetcher)  # type: ignore[arg-type]
    started: list[list[str]] = []
    jobs.start = lambda names: started.append(list(names)) or []  # type: ignore[method-assign]
    return jobs, fetcher, started


async def test_digests_firing_together_ask_once_which_sources_are_due(
    tmp_path: Path, catalog: Catalog
) -> None:
    jobs, fetcher, started = fetch_jobs(tmp_path, catalog)
    runs = [
        asyncio.ensure_future(jobs.before_digest(NOW + timedelta(milliseconds=i), f"local:c{i}"))
        for i in range(50)
    ]
    await asyncio.sleep(0.05)  # every run is waiting for the one ask under way
    fetcher.release.set()
    await asyncio.gather(*runs)
    assert fetcher.asked == [NOW]
    assert started == [["arxiv:cs.LG"]] * 50  # each run still starts (or joins) the fetches
    # Once that ask is done, the next digest asks anew (a source may have become due).
    fetcher.answer = []
    await jobs.before_digest(NOW + timedelta(hours=1), "local:late")
    assert fetcher.asked == [NOW, NOW + timedelta(hours=1)]
    assert started[-1] == []
