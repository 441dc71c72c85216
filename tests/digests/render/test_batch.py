"""Rendering a batch of digests inside `digests.render.view.batch()` (the scope the
scheduler renders a group of digests in): each item's view and each platform's piece is
made once per paper, topics, archive mark and section, found again by the row's
identity; the output is byte for byte what rendering each digest afresh gives. And the
plain-dict Slack blocks of a digest's header and footer are slack_sdk's own."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import replace
from typing import Any

import pytest
from slack_sdk.models.blocks import (
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

import bot.scheduler as scheduler_module
from bot.local import LocalPoster
from bot.scheduler import DigestScheduler
from bot.send import platform_messages
from bot.services import Services
from digests.digest import Digest
from digests.render import discord as discord_render
from digests.render import limits, view
from digests.render import slack as slack_render
from digests.topics import Topic
from tests.fakes.clock import Clock
from tests.fakes.render import make_digest, paper
from tests.fakes.rendered import PLATFORMS, channel_digests, rendered, uncached
from tests.fakes.scheduler_batch import CHANNELS, DUE, clock, fire_all, services

__all__ = ["channel_digests", "clock", "services"]  # fixtures shared with those files


def recorded(digests: list[Digest]) -> list[Digest]:
    """The previews as recorded digests (ids given): every item gets its buttons."""
    return [replace(d, recorded=True, digest_id=n) for n, d in enumerate(digests, start=1)]


def test_a_batch_renders_byte_for_byte_what_each_digest_renders_alone(
    channel_digests: list[Digest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The digests share paper rows under other topics, archive marks and places in their
    # topic groups (so other sections): a key that forgot one of these would show one
    # digest's item in another's.
    # Without its first item, a digest's second item heads its group (a section).
    shifted = [replace(d, channel=f"{d.channel}-b", items=d.items[1:]) for d in channel_digests]
    # The same rows under the same topics, archive marks the other way round.
    flipped = [
        replace(
            d,
            channel=f"{d.channel}-c",
            items=tuple(replace(i, from_archive=not i.from_archive) for i in d.items),
        )
        for d in channel_digests
    ]
    digests = channel_digests + recorded(channel_digests) + shifted + flipped
    with monkeypatch.context() as patch:
        uncached(patch)
        alone = rendered(digests)
    view.shown_cache_clear()
    with view.batch():
        first = rendered(digests)
        again = rendered(digests)  # every view and piece found again
    assert first == again == alone
    assert rendered(digests) == alone  # after the batch, as before it


def test_a_batch_makes_each_item_view_and_piece_once(
    channel_digests: list[Digest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    digests = recorded(channel_digests)
    views: list[str] = []
    real = view._item_view

    def counting(item: Any, escape: Any, section: Any) -> view.PaperView:
        views.append(str(item.paper["id"]))
        return real(item, escape, section)

    monkeypatch.setattr(view, "_item_view", counting)
    view.shown_cache_clear()
    with view.batch():
        rendered(digests)
        made = len(views)
        assert made > 0
        rendered(digests)
        assert len(views) == made  # the second time, no view made afresh
        first = view.digest_view(digests[0], slack_render.slack_escape).items
        second = view.digest_view(digests[0], slack_render.slack_escape).items
        assert all(a is b for a, b in zip(first, second, strict=True))
    rendered(digests)
    assert len(views) > made  # outside a batch, views are made per digest


def test_a_digest_in_a_batch_is_rendered_from_its_own_rows(
    channel_digests: list[Digest],
) -> None:
    """Two rows with equal ids but other text (another batch's row for the paper) are
    two views: identity, not the id, keys the batch."""
    base = recorded(channel_digests)[0]
    item = base.items[0]
    renamed = replace(item, paper={**item.paper, "title": "A Title Changed Since"})
    other = replace(base, channel="local:other", items=(renamed, *base.items[1:]))
    with view.batch():
        text = rendered([base, other])
    assert "A Title Changed Since" in text
    assert text == rendered([base, other])


async def test_the_scheduler_renders_a_group_of_digests_in_one_batch(
    services: Services,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scopes: list[Any] = []
    real = scheduler_module.platform_messages

    def spy(digest: Digest, platform: str, empty: str) -> Any:
        scopes.append(view._scope.get())
        return real(digest, platform, empty)

    monkeypatch.setattr(scheduler_module, "platform_messages", spy)
    clock.now = DUE
    scheduler = DigestScheduler(
        services, {"local": LocalPoster(services.settings.local_dir, clock)}
    )
    await fire_all(scheduler)
    assert len(scopes) == len(CHANNELS)
    assert scopes[0] is not None
    assert all(scope is scopes[0] for scope in scopes)  # one batch for the group
    assert view._scope.get() is None


@pytest.mark.parametrize("size", [1, 80, limits.SLACK_HEADER_TEXT])
def test_a_digests_plain_slack_blocks_are_slack_sdks_own(size: int) -> None:
    text = ("Paperboy & <friends> *bold* " * 200)[:size]
    long = ("x " * 2000)[: limits.SLACK_SECTION_TEXT]
    pairs = [
        (slack_render.header_block(text), HeaderBlock(text=PlainTextObject(text=text))),
        (slack_render.section_block(long), SectionBlock(text=MarkdownTextObject(text=long))),
        (slack_render.context_block(text), ContextBlock(elements=[MarkdownTextObject(text=text)])),
    ]
    for plain, sdk in pairs:
        assert json.dumps(plain) == json.dumps(sdk.to_dict())  # key order too: same bytes
    assert slack_render.DIVIDER == {"type": "divider"}


def test_a_batch_keeps_a_bounded_number_of_entries(
    channel_digests: list[Digest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows that are not shared (digests rebuilt one at a time after a batch failed,
    recorded digests read again) make an entry per item, each keeping its row alive:
    the scope keeps at most BATCH_KEPT of each kind, and renders the same."""
    monkeypatch.setattr(view, "BATCH_KEPT", 5, raising=False)
    digests = recorded(channel_digests)
    assert sum(len(digest.items) for digest in digests) > 5

    def own_rows(digest: Digest) -> Digest:  # each item's row read again: a new dict
        return replace(digest, items=tuple(replace(i, paper=dict(i.paper)) for i in digest.items))

    alone = [rendered([digest]) for digest in digests]
    sizes: list[int] = []
    texts = []
    with view.batch():
        scope = view._scope.get()
        assert scope is not None
        for digest in digests:
            texts.append(rendered([own_rows(digest)]))
            sizes += [len(scope.views), len(scope.items)]
    assert texts == alone
    assert 0 < max(sizes) <= 5


def test_a_batch_renders_each_platform_with_its_own_escaping(
    channel_digests: list[Digest],
) -> None:
    """The scheduler's groups mix Slack, Discord and local channels over the same rows:
    a row's view is one per escape function (Slack's entities, Discord's backslashes),
    never one platform's text in another's message."""
    hostile = "Fast & <Loose> *Attention* _under_ ~noise~ | `code` [x] @everyone"
    digests = [
        replace(
            digest,
            items=tuple(
                replace(item, paper={**item.paper, "title": f"{hostile} {n}"})
                for n, item in enumerate(digest.items)
            ),
        )
        for digest in recorded(channel_digests)
    ]
    alone = rendered(digests)
    assert "&amp;" in alone and "\\\\*Attention" in alone  # each escaping is there
    with view.batch():
        # One platform at a time, over the same rows: the first fills the scope.
        each = [
            [platform_messages(digest, platform, "post") for digest in digests]
            for platform in PLATFORMS
        ]
    assert json.dumps([list(d) for d in zip(*each, strict=True)], sort_keys=True) == alone


@pytest.mark.parametrize("in_batch", [False, True])
def test_a_recorded_discord_digest_leaves_room_for_its_numbers(
    monkeypatch: pytest.MonkeyPatch, in_batch: bool
) -> None:
    """A recorded digest's embed titles are numbered ("1. ") after packing: its packing
    (sizes remembered with each embed) keeps room for that. Two embeds that fit one
    message unnumbered do not once numbered."""
    topic = Topic("t-a", "Attention", "", ())
    rows = [paper("Attention is all you need, again.", title=f"Paper {n}") for n in (1, 2)]
    preview = make_digest(rows, [topic])
    digest = replace(preview, recorded=True, digest_id=7)
    sizes = [
        limits.embed_size(e) for m in discord_render.digest_messages(preview) for e in m.embeds
    ]
    assert len(sizes) == 2
    monkeypatch.setattr(limits, "DISCORD_EMBED_TOTAL", sum(sizes) + len("1. ") + len("2. ") - 1)
    with view.batch() if in_batch else contextlib.nullcontext():
        assert len(discord_render.digest_messages(preview)) == 1  # unnumbered: one message
        messages = discord_render.digest_messages(digest)
    assert [e["title"] for m in messages for e in m.embeds] == ["1. Paper 1", "2. Paper 2"]
    assert [len(m.embeds) for m in messages] == [1, 1]
    for message in messages:
        total = sum(limits.embed_size(e) for e in message.embeds)
        assert total <= limits.DISCORD_EMBED_TOTAL


async def test_a_batch_in_a_worker_thread_is_that_threads_own(
    channel_digests: list[Digest],
) -> None:
    """The scheduler renders each group in a worker thread of its own (BUILD_THREADS at
    once, `in_daemon_thread`): each batch's scope is its thread's, none is seen by the
    event loop or by another thread, and none is left behind."""
    import threading

    from bot.services import in_daemon_thread

    both = threading.Barrier(2, timeout=30)

    def work(digests: list[Digest]) -> tuple[int, str, int | None]:
        with view.batch():
            scope = view._scope.get()
            assert scope is not None
            text = rendered(digests)
            both.wait()  # the two batches are open at once
            seen = id(view._scope.get())
        assert view._scope.get() is None
        return seen, text, id(scope)

    async def run() -> list[tuple[int, str, int | None]]:
        first = in_daemon_thread(work, channel_digests)
        second = in_daemon_thread(work, recorded(channel_digests))
        return list(await asyncio.gather(first, second))

    (seen_a, text_a, scope_a), (seen_b, text_b, scope_b) = await run()
    assert seen_a == scope_a and seen_b == scope_b and scope_a != scope_b
    assert view._scope.get() is None
    assert text_a == rendered(channel_digests) and text_b == rendered(recorded(channel_digests))


@pytest.mark.parametrize("text", ["find alpha dpo", "find diffusion policy", "help", "topics"])
def test_a_command_replys_plain_slack_blocks_are_slack_sdks_own(
    seeded_db: Any, settings: Any, catalog: Any, text: str
) -> None:
    """A reply's blocks are plain dicts (no per-block slack_sdk validation): each is
    exactly what slack_sdk makes of it, bytes included, and valid."""
    from slack_sdk.models.blocks import Block

    from digests.commands import Context, handle
    from tests.conftest import NOW

    reply = handle(text, Context(seeded_db, "slack:T0001/C0001", "alice", NOW, settings, catalog))
    blocks = [block for m in slack_render.reply_messages(reply) for block in m.blocks]
    assert blocks
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()
        assert json.dumps(parsed.to_dict()) == json.dumps(block)
