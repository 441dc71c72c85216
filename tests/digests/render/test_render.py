"""Rendering digests for Slack, Discord and the terminal: limits, splitting, escaping."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from slack_sdk.models.blocks import Block

from config.settings import Settings
from db import open_db
from db.papers import decode
from db.store import Store
from digests.digest import Digest, build_digest
from digests.ingest import ingest_files
from digests.render import discord, limits, slack
from digests.render.text import digest_text
from digests.topics import Catalog, custom_topic
from tests.conftest import NOW
from tests.fakes.digest import CHANNEL, subscribe
from tests.fakes.render import check_discord, extreme, make_digest, paper  # noqa: F401


def check_slack(digest: Digest) -> list[slack.SlackMessage]:
    messages = slack.digest_messages(digest)
    for message in messages:
        assert limits.slack_problems(message.payload()) == []
        for block in message.blocks:  # each parses back into a valid slack_sdk block
            Block.parse(block).validate_json()  # type: ignore[union-attr]
    ids_per_message = [item_sections(m) for m in messages]
    assert sum(len(group) for group in ids_per_message) == len(digest.items)
    return messages


def item_sections(message: slack.SlackMessage) -> list[str]:
    """The texts of a message's paper sections (in the first message, after the divider)."""
    blocks = message.blocks
    if any(block["type"] == "header" for block in blocks):
        divider = next((i for i, b in enumerate(blocks) if b["type"] == "divider"), len(blocks))
        blocks = blocks[divider + 1 :]
    return [block["text"]["text"] for block in blocks if block["type"] == "section"]


@pytest.fixture
def seed_digest(seeded_db: Store, catalog: Catalog, settings: Settings) -> Digest:
    subscribe(seeded_db, settings, *catalog.ids)
    big = replace(settings, digest_size=50)
    return build_digest(seeded_db, CHANNEL, NOW, catalog=catalog, settings=big, preview=True)


def test_the_38_seeds_in_one_channel(seed_digest: Digest) -> None:
    assert len(seed_digest.items) >= 35
    check_slack(seed_digest)
    check_discord(seed_digest)
    assert "Change topics" in digest_text(seed_digest)


def test_200_iclr_papers_in_one_channel(iclr2021: Path, catalog: Catalog) -> None:
    db = open_db(":memory:")
    ingest_files(db, [iclr2021], now=NOW)
    papers = [decode(row) for row in db.query("select * from papers order by id limit 200")]
    digest = make_digest(papers, list(catalog.topics[:3]))
    slack_messages = check_slack(digest)
    # 200 sections of ~380 characters: by blocks alone 46 + 49 + 49 + 49 + 7 (~18,000
    # characters of text a message, which Slack refuses), by text 25 to 27 a message
    assert len(slack_messages) == 8  # 27, 27, 25, 26, 27, 27, 25, 16
    discord_messages = check_discord(digest)
    assert len(discord_messages) >= 20  # at most 10 embeds per message


def test_every_slack_limit_holds(extreme: Digest) -> None:
    messages = check_slack(extreme)
    for message in messages:
        assert len(message.blocks) <= limits.SLACK_MAX_BLOCKS
        for block in message.blocks:
            if block["type"] == "section":
                assert len(block["text"]["text"]) <= limits.SLACK_SECTION_TEXT
            if block["type"] == "header":
                assert len(block["text"]["text"]) <= limits.SLACK_HEADER_TEXT


def test_every_discord_limit_holds(extreme: Digest) -> None:
    messages = check_discord(extreme)
    assert len(messages) >= 3
    for message in messages:
        assert len(message.content) <= limits.DISCORD_CONTENT
        assert len(message.embeds) <= limits.DISCORD_EMBEDS_PER_MESSAGE
        assert sum(limits.embed_size(e) for e in message.embeds) <= limits.DISCORD_EMBED_TOTAL
        for embed in message.embeds:
            assert len(embed["title"]) <= limits.DISCORD_EMBED_TITLE
            assert len(embed["description"]) <= limits.DISCORD_EMBED_DESCRIPTION
            assert len(embed["fields"]) <= limits.DISCORD_EMBED_FIELDS
            assert all(len(f["value"]) <= limits.DISCORD_FIELD_VALUE for f in embed["fields"])
            assert all(len(f["name"]) <= limits.DISCORD_FIELD_NAME for f in embed["fields"])


def test_limit_checks_catch_violations() -> None:
    assert limits.discord_problems({"content": "x" * 2001}) == ["content too long"]
    too_many = {"content": "", "embeds": [{"title": "t"}] * 11}
    assert "11 embeds > 10" in limits.discord_problems(too_many)
    fat = {"content": "", "embeds": [{"description": "d" * 4000}, {"description": "d" * 2500}]}
    assert "embeds exceed 6000 characters together" in limits.discord_problems(fat)
    fields = {"content": "", "embeds": [{"fields": [{"name": "n", "value": "v" * 1025}] * 26}]}
    assert {"too many fields", "field too long"} <= set(limits.discord_problems(fields))
    assert limits.slack_problems({"blocks": [{"type": "divider"}] * 51}) == ["51 blocks > 50"]


# One sentence, so that all of it lands in the TL;DR that digests show.
HOSTILE = (
    "We propose PingNet, a method for <!channel> @everyone @here <@U123> <#C1> & more "
    "with ~strike~ and 2*3*4 and a bound of "
    r"$\tilde{\mathcal{O}}(\sqrt{eH^5N})$ using \(\hat{\pi}_{\text{ref}}\)"
)


def test_paper_text_cannot_ping_or_format_in_slack() -> None:
    item = paper(HOSTILE, title="<!channel> Ping & <b>")
    digest = make_digest([item], [custom_topic("<!here> topic")])
    text = json.dumps([m.payload() for m in slack.digest_messages(digest)], ensure_ascii=False)
    assert "<!channel>" not in text and "<!here>" not in text and "<@U123>" not in text
    assert "&lt;!channel&gt;" in text
    assert "Õ(√(eH^5N))" in text and "π̂_ref" in text  # maths reads sensibly
    assert "\\\\tilde" not in text and "$" not in text


def test_paper_text_cannot_ping_or_format_in_discord() -> None:
    item = paper(HOSTILE, title="@everyone Ping 2*3*4 | spoiler")
    digest = make_digest([item], [custom_topic("@here topic")])
    messages = discord.digest_messages(digest)
    text = json.dumps([m.payload() for m in messages], ensure_ascii=False)
    assert "@everyone" not in text and "@here" not in text
    assert "@\u200beveryone" in text
    assert "<@U123>" not in text
    assert "2\\\\*3\\\\*4" in text and "\\\\|" in text  # JSON-encoded backslash escapes
    assert "Õ(√(eH^5N))" in text and "π̂\\\\_ref" in text


def test_empty_week_notice_or_nothing() -> None:
    empty = make_digest([], [custom_topic("anything")])
    assert "Nothing new for your topics this week" in digest_text(empty)
    assert slack.digest_messages(empty, empty="skip") == []
    assert discord.digest_messages(empty, empty="skip") == []
    [notice] = slack.digest_messages(empty, empty="notice")
    assert "nothing new" in notice.text.lower()
    [message] = discord.digest_messages(empty, empty="notice")
    assert "Nothing new" in message.content and message.embeds == []


def test_a_digest_groups_items_under_topics(seed_digest: Digest) -> None:
    text = digest_text(seed_digest)
    first_topic = seed_digest.topics[0].label
    assert f"== {first_topic} ==" in text or first_topic not in text
    assert text.count(" id: ") == len(seed_digest.items)


def test_templates_exist_for_every_target() -> None:
    from digests.render.view import environment

    names = environment().list_templates()
    for target in ("text/", "slack/", "discord/"):
        assert any(name.startswith(target) for name in names), target


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://example.org/a b<c>|d", "https://example.org/a%20b%3Cc%3E%7Cd"),
        ('https://example.org/q?x="{y}"', "https://example.org/q?x=%22%7By%7D%22"),
        ("https://exa mple.org/x", None),
        ("javascript:alert(1)", None),
        ("https://github.com@evil.example/x", None),
        ("https://example.org/\x1b[2J", None),
        ("https://example.org:99999/", None),
        ("https://müller.de/ä", "https://xn--mller-kva.de/%C3%A4"),
        ("N/A", None),
        # urlsplit drops tabs and newlines silently: the link would not be the text shown
        ("https://exa\tmple.org/x", None),
        ("https://example.org/a\nb", None),
        ("http://[fe80::1%25eth0]/x", None),  # a zone only means something on one machine
        ("https://example.org:0/", None),
        ("http://[2001:db8::1]:8080/a", "http://[2001:db8::1]:8080/a"),
    ],
)
def test_only_well_formed_http_urls_are_linked(url: str, shown: str | None) -> None:
    from digests.render.text import digest_text

    row = paper("We propose UrlNet, a method for links.", title="UrlNet", url=url)
    digest = make_digest([row], [custom_topic("links")], channel="discord:123456/654321")
    [message] = check_discord(digest)
    assert message.embeds[0].get("url") == shown
    sections = [
        block["text"]["text"]
        for block in check_slack(replace(digest, channel=CHANNEL))[0].blocks
        if block["type"] == "section" and "UrlNet" in block["text"]["text"]
    ]
    text = digest_text(digest)
    if shown is None:
        assert "*UrlNet*" in sections[0] and "<" not in sections[0]
        assert url not in text
    else:
        assert f"*<{shown}|UrlNet>*" in sections[0]
        assert shown in text


def test_a_slack_link_is_only_made_from_a_checked_url() -> None:
    from digests.render.escape import slack_link

    assert (
        slack_link("https://example.org/a b|c>", "T|t") == "<https://example.org/a%20b%7Cc%3E|T∣t>"
    )
    for bad in ("javascript:alert(1)", "https://x.org\n/a", "https://u:p@example.org/"):
        assert slack_link(bad, "Title <b>") == "Title &lt;b&gt;"
