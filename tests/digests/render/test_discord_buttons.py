"""Buttons on Discord digest messages: one action row per item, within limits."""

from __future__ import annotations

from dataclasses import replace

from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, custom_id, parse_custom_id, parse_item_ref
from digests.digest import Digest
from digests.render import discord, limits
from digests.replies import Reply
from tests.fakes.discord_digest import recorded  # noqa: F401
from tests.fakes.render import check_discord, extreme  # noqa: F401


def rows_of(message: discord.DiscordMessage) -> list[list[dict]]:  # type: ignore[type-arg]
    return [row["components"] for row in message.components]


def test_each_item_has_its_row_under_its_embed(recorded: Digest) -> None:
    messages = check_discord(recorded)  # every limit, buttons included, and every item once
    assert len(messages) >= 7  # 35+ items, 5 per message (a preview packs 10)
    start = 1  # numbers run through the digest's messages
    for message in messages:
        payload = message.payload()
        assert limits.discord_problems(payload) == []
        assert payload["components"] == message.components
        assert len(message.components) == len(message.embeds) == len(message.paper_ids) <= 5
        for number, (embed, row, paper_id) in enumerate(
            zip(message.embeds, rows_of(message), message.paper_ids, strict=True), start=start
        ):
            assert embed["footer"]["text"] == f"id {paper_id}"  # the row's embed, same order
            assert embed["title"].startswith(f"{number}. ")
            up, down, save, *links = row
            assert [up["custom_id"], down["custom_id"], save["custom_id"]] == [
                custom_id(action, recorded.digest_id, paper_id)  # type: ignore[arg-type]
                for action in (VOTE_UP, VOTE_DOWN, SAVE)
            ]
            assert up["label"] == f"{number}. 👍 More like this"
            assert (down["label"], save["label"]) == ("👎 Less like this", "🔖 Save")
            assert all(link["style"] == 5 and link["label"] in ("PDF", "Code") for link in links)
        start += len(message.embeds)


def test_pdf_and_code_links_are_link_buttons(recorded: Digest) -> None:
    item = recorded.items[0]
    paper = {
        **item.paper,
        "pdf_url": "https://arxiv.org/pdf/2401.00001",
        "code_url": "https://github.com/example/robots",
    }
    digest = replace(recorded, items=(replace(item, paper=paper),))
    [message] = discord.digest_messages(digest)
    [[*_, pdf, code]] = rows_of(message)
    assert pdf == {"type": 2, "style": 5, "label": "PDF", "url": "https://arxiv.org/pdf/2401.00001"}
    assert code["label"] == "Code" and code["url"] == "https://github.com/example/robots"
    assert "custom_id" not in pdf and "custom_id" not in code
    bare = {**item.paper, "pdf_url": None, "code_url": None}
    [plain] = discord.digest_messages(replace(digest, items=(replace(item, paper=bare),)))
    assert len(rows_of(plain)[0]) == 3  # no links: only 👍 👎 🔖


def test_a_preview_has_no_buttons(recorded: Digest) -> None:
    preview = replace(recorded, recorded=False, digest_id=None)
    messages = discord.digest_messages(preview)
    assert all(not m.components and "components" not in m.payload() for m in messages)
    assert max(len(m.embeds) for m in messages) == 10  # packed as before
    assert not any(e["title"].startswith("1. ") for m in messages for e in m.embeds)


def test_with_counts_labels_each_items_votes(recorded: Digest) -> None:
    [first, *_] = discord.digest_messages(recorded)
    one, two = first.paper_ids[:2]
    rows = discord.with_counts(first.components, {one: (3, 1), two: (0, 2)})
    assert [b["label"] for b in rows[0]["components"][:3]] == [
        "1. 👍 More like this · 3",
        "👎 Less like this · 1",
        "🔖 Save",
    ]
    assert [b["label"] for b in rows[1]["components"][:2]] == [
        "2. 👍 More like this",
        "👎 Less like this · 2",
    ]
    assert rows[2:] == first.components[2:]  # no counts: as rendered
    assert first.components[0]["components"][0]["label"] == "1. 👍 More like this"  # unchanged
    assert limits.discord_problems({**first.payload(), "components": rows}) == []
    ids = [parse_custom_id(b.get("custom_id")) for b in rows[0]["components"][:3]]
    assert {parse_item_ref(ref)[1] for _, ref in ids} == {one}  # type: ignore[misc]


def test_limit_checks_catch_button_violations() -> None:
    def button(n: int) -> dict:  # type: ignore[type-arg]
        return {"type": 2, "style": 2, "label": "b", "custom_id": f"pb:up:1:p{n}"}

    ok = {"content": "x", "components": [{"type": 1, "components": [button(1)]}]}
    assert limits.discord_problems(ok) == []
    six_rows = [{"type": 1, "components": [button(n)]} for n in range(6)]
    assert "6 action rows > 5" in limits.discord_problems({**ok, "components": six_rows})
    wide = [{"type": 1, "components": [button(n) for n in range(6)]}]
    assert "6 buttons in a row > 5" in limits.discord_problems({**ok, "components": wide})

    def problems(**changes: object) -> list[str]:
        return limits.discord_problems(
            {**ok, "components": [{"type": 1, "components": [{**button(1), **changes}]}]}
        )

    assert problems(custom_id="x" * 101) == ["custom_id too long"]
    assert problems(label="l" * 81) == ["button label too long"]
    assert problems(label="") == ["not a labelled button"]
    assert problems(style=5, url="https://example.org") == [
        "a link button needs a url and no custom_id"
    ]
    assert problems(style=5, custom_id=None, url="https://example.org/" + "x" * 500) == [
        "button url too long"
    ]
    assert problems(custom_id=None) == ["a button needs a custom_id and no url"]
    twice = [{"type": 1, "components": [button(1), button(1)]}]
    assert limits.discord_problems({**ok, "components": twice}) == ["custom_id repeated"]


def test_an_item_whose_ids_make_no_custom_id_leaves_the_digest_without_buttons(
    recorded: Digest,
) -> None:
    """All or none: a row sits under its embed by position, so one item that cannot have
    buttons (an id Paperboy did not make) must not shift the others; the digest still goes."""
    odd = replace(recorded.items[0], paper={**recorded.items[0].paper, "id": "odd id/with:colon"})
    digest = replace(recorded, items=(odd, *recorded.items[1:]))
    messages = discord.digest_messages(digest)
    assert all(not m.components for m in messages)
    assert max(len(m.embeds) for m in messages) == 10  # packed as a preview
    assert sum(len(m.embeds) for m in messages) == len(recorded.items)


def test_a_command_reply_shows_a_recorded_digest_without_buttons(recorded: Digest) -> None:
    """`/papers digest` once the digest is built: shown to the asker only, as a preview."""
    messages = discord.reply_messages(Reply(text="This week's digest:", digest=recorded))
    assert all(not m.components for m in messages)
    assert not any(e["title"].startswith("1. ") for m in messages for e in m.embeds)


def test_every_discord_limit_holds_with_buttons(extreme: Digest) -> None:
    """Test_render's items built to break every limit, recorded: with their buttons too."""
    long_links = {
        "pdf_url": "https://arxiv.org/pdf/" + "9" * 470,  # within the 500 a link may have
        "code_url": "https://github.com/" + "x" * 600,  # too long: no Code button
    }
    items = tuple(replace(i, paper={**i.paper, **long_links}) for i in extreme.items)
    digest = replace(extreme, items=items, recorded=True, digest_id=123456789012345678)
    messages = check_discord(digest)
    assert len(messages) >= 6  # 30 items, at most 5 per message
    for message in messages:
        assert len(message.components) == len(message.embeds) <= limits.DISCORD_ACTION_ROWS
        for row in rows_of(message):
            assert [b["label"] for b in row[3:]] == ["PDF"]
            assert all(len(b.get("custom_id", "")) <= limits.DISCORD_CUSTOM_ID for b in row)
        assert sum(limits.embed_size(e) for e in message.embeds) <= limits.DISCORD_EMBED_TOTAL


def test_packing_leaves_room_for_the_numbers_titles_get() -> None:
    """Titles are numbered ("1. ") after packing: the 6,000 characters must allow for it."""
    first, second = {"description": "a" * 3000}, {"description": "b" * 2997}
    assert discord._fits([first], second)  # 5,997: fits unnumbered
    assert not discord._fits([first], second, numbered=True)  # 5,997 + 2 x "N. " does not
