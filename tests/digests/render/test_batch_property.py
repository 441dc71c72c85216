"""Rendering inside `digests.render.view.batch()` on random digests: byte for byte what
each digest renders alone, on every platform, and within Discord's and Slack's limits.

The batch finds an item's view by its row's identity, its topics' labels, its archive
mark and its section, and each platform's piece by the view's identity. These digests
share rows under other topics (two topics with one label but other ids among them),
other archive marks and other places, with titles each platform escapes its own way,
lengths up to and past the limits, and papers with and without links."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import (
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from bot.send import platform_messages
from digests.digest import Digest, DigestItem
from digests.render import discord as discord_render
from digests.render import limits, view
from digests.render import slack as slack_render
from digests.topics import Topic
from tests.fakes.render import paper
from tests.fakes.rendered import PLATFORMS

TOPICS = (
    Topic("t-a", "Attention & <Transformers>", "", ()),
    Topic("t-b", "Offline *RL*", "", ()),
    Topic("custom:x", '"diffusion_policy"', "", ()),
    Topic("custom:y", '"diffusion_policy"', "", ()),  # the same label, another topic
    Topic("custom:long", '"' + "long_topic " * 40 + '"', "", ()),
)
TEXT = st.lists(
    st.sampled_from([*"ab _*~`|&<>[]@#-\\\"'é👍\n", "everyone", "word "]), max_size=40
).map("".join)


@st.composite
def rows(draw: Any, big: bool = False) -> dict[str, Any]:
    """A paper row; `big`: every text and link near what a digest item may show."""
    row = dict(paper("An abstract about attention and offline reinforcement learning."))
    row["id"] = f"p{draw(st.integers(0, 10**6))}"
    row["title"] = draw(TEXT) * draw(st.sampled_from([1, 1, 4])) or "T"
    row["tldr"] = draw(TEXT) * draw(st.sampled_from([60] if big else [1, 8, 60]))
    row["authors"] = draw(st.lists(TEXT.map(lambda t: t * (9 if big else 1)), max_size=5))
    row["venue"] = draw(st.sampled_from([None, "ICLR 2025", "<b>&*Venue*"]))
    if big or draw(st.booleans()):  # links, some long: embeds near Discord's 6,000 in all
        path = "a" * draw(st.sampled_from([450] if big else [1, 200, 450]))  # LINK_MAX: 500
        row["url"] = f"https://example.org/{row['id']}/{path}"
        row["code_url"] = f"https://github.com/x/{row['id']}/{path}"
    return row


@st.composite
def batches(draw: Any, big: bool = False) -> list[Digest]:
    pool = draw(st.lists(rows(big), min_size=1, max_size=6, unique_by=lambda r: r["id"]))
    digests = []
    for number in range(draw(st.integers(1, 6))):
        chosen = draw(st.lists(st.sampled_from(range(len(pool))), max_size=14, unique=True))
        topics = tuple(draw(st.lists(st.sampled_from(TOPICS), max_size=4, unique=True)))
        items = tuple(
            DigestItem(
                pool[index],
                tuple(draw(st.lists(st.sampled_from(TOPICS), max_size=3, unique=True))),
                draw(st.floats(0, 10, allow_nan=False)),
                from_archive=draw(st.booleans()),
            )
            for index in chosen
        )
        recorded = big or draw(st.booleans())
        digests.append(
            Digest(
                f"local:c{number}",
                "2026-W49",
                topics,
                items,
                "2026-11-30T09:00:00+00:00",
                recorded=recorded,
                digest_id=number + 1 if recorded else None,
            )
        )
    return digests


def rendered(digest: Digest) -> list[str]:
    return [json.dumps(platform_messages(digest, p, "post"), sort_keys=True) for p in PLATFORMS]


@hypothesis_settings(max_examples=150, deadline=None)
@given(batches())
def test_a_batch_renders_random_digests_as_each_renders_alone(digests: list[Digest]) -> None:
    alone = [rendered(digest) for digest in digests]
    view.shown_cache_clear()
    with view.batch():
        together = [rendered(digest) for digest in digests]
        again = [rendered(digest) for digest in reversed(digests)][::-1]
    assert together == again == alone


@hypothesis_settings(max_examples=100, deadline=None)
@given(st.one_of(batches(), batches(big=True)))
def test_discord_messages_of_a_batch_keep_to_discords_limits(digests: list[Digest]) -> None:
    with view.batch():
        for digest in digests:
            for message in discord_render.digest_messages(digest, "post"):
                most = (
                    limits.DISCORD_ACTION_ROWS
                    if digest.recorded
                    else limits.DISCORD_EMBEDS_PER_MESSAGE
                )
                assert len(message.embeds) <= most
                sizes = [limits.embed_size(embed) for embed in message.embeds]
                assert sum(sizes) <= limits.DISCORD_EMBED_TOTAL  # numbered titles included
                assert all(
                    len(embed["title"]) <= limits.DISCORD_EMBED_TITLE for embed in message.embeds
                )


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=1, max_size=limits.SLACK_HEADER_TEXT),
    st.text(min_size=1, max_size=limits.SLACK_SECTION_TEXT),
)
def test_the_plain_slack_blocks_are_slack_sdks_for_any_text(header: str, text: str) -> None:
    """A digest's header, intro and footer blocks are plain dicts, not slack_sdk
    blocks validated per digest: the same JSON, key order included, for any text within
    the limits `clamp` keeps them to (whitespace, quotes, any character). Not for "":
    slack_sdk leaves an empty text out, a plain dict sends it empty, and Slack refuses
    both; their templates never make one (test below)."""
    pairs = [
        (slack_render.header_block(header), HeaderBlock(text=PlainTextObject(text=header))),
        (slack_render.section_block(text), SectionBlock(text=MarkdownTextObject(text=text))),
        (slack_render.context_block(text), ContextBlock(elements=[MarkdownTextObject(text=text)])),
    ]
    for plain, sdk in pairs:
        assert json.dumps(plain, ensure_ascii=False) == json.dumps(
            sdk.to_dict(), ensure_ascii=False
        )


@hypothesis_settings(max_examples=100, deadline=None)
@given(batches())
def test_a_digests_plain_slack_blocks_are_never_empty(digests: list[Digest]) -> None:
    """The header, intro and footer texts `digest_messages` makes plain blocks of: never
    empty (where slack_sdk's blocks and the plain dicts would differ), within limits."""
    for digest in digests:
        for message in slack_render.digest_messages(digest, "post"):
            for block in message.blocks:
                if block["type"] == "header":
                    assert 0 < len(block["text"]["text"]) <= limits.SLACK_HEADER_TEXT
                elif block["type"] == "context":
                    assert all(element["text"] for element in block["elements"])
                elif block["type"] == "section":
                    assert 0 < len(block["text"]["text"]) <= limits.SLACK_SECTION_TEXT


def grouped_before(digest: Digest) -> list[tuple[Topic | None, DigestItem]]:
    """A reference `view.grouped`, written plainly (a key computed twice per item)."""
    order = {topic.id: index for index, topic in enumerate(digest.topics)}

    def key(item: DigestItem) -> tuple[int, bool, float]:
        return view.shown_key(
            order, (topic.id for topic in item.topics), item.from_archive, item.score
        )

    result: list[tuple[Topic | None, DigestItem]] = []
    for item in sorted(digest.items, key=key):
        index = key(item)[0]
        result.append((digest.topics[index] if index < len(digest.topics) else None, item))
    return result


@hypothesis_settings(max_examples=300, deadline=None)
@given(batches(), st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e-300]), min_size=14))
def test_grouped_orders_items_as_before(digests: list[Digest], scores: list[float]) -> None:
    """Ties (equal scores, equal topics, -0.0 and 0.0) keep the recorded order."""
    for digest in digests:
        items = tuple(
            DigestItem(i.paper, i.topics, score, i.from_archive)
            for i, score in zip(digest.items, scores, strict=False)
        )
        tied = Digest(digest.channel, digest.week, digest.topics, items, digest.built_at, False)
        assert [(t, id(i)) for t, i in view.grouped(tied)] == [
            (t, id(i)) for t, i in grouped_before(tied)
        ]
