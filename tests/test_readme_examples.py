"""The rendered examples of the README (a text digest) and of the Slack and Discord how-to
pages (a digest item, an item's row of buttons) are what the renderers make today for the
paper they show: examples drift otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from digests.render import discord, slack, text
from digests.topics import Catalog
from tests.fakes.cql_digest import cql_digest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SLACK_HOWTO = (ROOT / "docs" / "how-to" / "slack.md").read_text(encoding="utf-8")
DISCORD_HOWTO = (ROOT / "docs" / "how-to" / "discord.md").read_text(encoding="utf-8")


def readme_json(heading: str, page: str) -> Any:
    """The first ```json block after `heading` in `page`."""
    part = page[page.index(heading) :]
    start = part.index("```json") + len("```json")
    return json.loads(part[start : part.index("```", start)])


def test_the_slack_example_is_the_rendered_section_and_buttons(catalog: Catalog) -> None:
    (message,) = slack.digest_messages(cql_digest(catalog, "slack:T012AB3C4/C0123456789"))
    blocks = message.blocks
    (actions,) = [i for i, block in enumerate(blocks) if block.get("type") == "actions"]
    assert blocks[actions - 1 : actions + 1] == readme_json(
        "## Buttons on digest items", SLACK_HOWTO
    )


def test_the_discord_example_is_the_rendered_row(catalog: Catalog) -> None:
    (message,) = discord.digest_messages(cql_digest(catalog, "discord:123456789012345678/987"))
    assert message.components[0] == readme_json("## Buttons on Discord digests", DISCORD_HOWTO)


def test_the_readme_digest_is_the_rendered_text(catalog: Catalog) -> None:
    part = README[README.index("## A digest") :]
    start = part.index("```text\n") + len("```text\n")
    assert part[start : part.index("\n```", start)] == text.digest_text(
        cql_digest(catalog, "local:lab")
    )
