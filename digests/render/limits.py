"""Platform limits that every rendered message must respect, and checks for them.

discord.py does not enforce Discord's limits and Slack rejects oversized blocks with an
error at send time, so Paperboy splits long digests into several messages itself,
whole items per message, and the tests check every limit below.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

SLACK_MAX_BLOCKS = 50
SLACK_SECTION_TEXT = 3000
SLACK_HEADER_TEXT = 150
SLACK_CONTEXT_ELEMENTS = 10
SLACK_FALLBACK_TEXT = 3000  # far below Slack's 40,000: it is a notification line
SLACK_ACTION_ELEMENTS = 25  # elements of one actions block
SLACK_BUTTON_TEXT = 75
SLACK_BUTTON_VALUE = 2000
SLACK_BUTTON_URL = 3000
SLACK_ID = 255  # action_id and block_id
# All the text of one message's blocks together (`slack_text_size`). Slack refuses a
# message past a limit it does not document, with `msg_blocks_too_long`: reports put it
# near 12,000 characters ("12,000 text characters with a buffer for block containers", a
# Slack engineer in slackapi/bolt-js#2509, where a message was refused at ~13,200), and
# bolt-js#2867 was refused at 11,341 characters of section, header, divider and
# rich_text text. 10,000 stays ~12% under the lowest refusal reported, leaving room for
# whatever else Slack counts (block containers, or characters counted as more than one).
SLACK_MESSAGE_TEXT = 10_000

DISCORD_CONTENT = 2000
DISCORD_EMBED_TITLE = 256
DISCORD_EMBED_DESCRIPTION = 4096
DISCORD_EMBED_FIELDS = 25
DISCORD_FIELD_NAME = 256
DISCORD_FIELD_VALUE = 1024
DISCORD_FOOTER_TEXT = 2048
DISCORD_AUTHOR_NAME = 256
DISCORD_EMBEDS_PER_MESSAGE = 10
DISCORD_EMBED_TOTAL = 6000  # all embeds of one message together
DISCORD_ACTION_ROWS = 5  # action rows per message
DISCORD_ROW_BUTTONS = 5  # buttons per action row
DISCORD_CUSTOM_ID = 100
DISCORD_BUTTON_LABEL = 80
DISCORD_BUTTON_URL = 512


def embed_size(embed: dict[str, Any]) -> int:
    """Characters that count toward Discord's 6,000 per message."""
    size = len(embed.get("title", "")) + len(embed.get("description", ""))
    size += len(embed.get("footer", {}).get("text", ""))
    size += len(embed.get("author", {}).get("name", ""))
    for item in embed.get("fields", []):
        size += len(item["name"]) + len(item["value"])
    return size


def slack_text_size(value: Any) -> int:
    """Characters of text in Slack blocks (a block, a list of them, or any part): every
    string under a "text" key, at any depth (section and header text, context elements,
    section fields, button labels); not URLs, ids or values. What `SLACK_MESSAGE_TEXT`
    bounds for one message."""
    if isinstance(value, dict):
        size = 0
        for key, item in value.items():
            if type(item) is str:
                if key == "text":
                    size += len(item)
            elif isinstance(item, (dict, list)):
                size += slack_text_size(item)
        return size
    if isinstance(value, list):
        return sum(slack_text_size(item) for item in value)
    return 0


def slack_problems(message: dict[str, Any]) -> list[str]:
    """Every Slack limit a message breaks (empty when it is fine)."""
    problems = []
    blocks = message.get("blocks", [])
    if len(blocks) > SLACK_MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks > {SLACK_MAX_BLOCKS}")
    text = slack_text_size(blocks)
    if text > SLACK_MESSAGE_TEXT:
        problems.append(f"{text} characters of text in blocks > {SLACK_MESSAGE_TEXT}")
    if len(message.get("text", "")) > SLACK_FALLBACK_TEXT:
        problems.append("fallback text too long")
    for block in blocks:
        if block["type"] == "header" and len(block["text"]["text"]) > SLACK_HEADER_TEXT:
            problems.append("header text too long")
        section = block.get("text", {}).get("text", "")  # a section may have fields instead
        if block["type"] == "section" and len(section) > SLACK_SECTION_TEXT:
            problems.append("section text too long")
        if block["type"] == "context" and len(block["elements"]) > SLACK_CONTEXT_ELEMENTS:
            problems.append("context has too many elements")
        if block["type"] == "actions":
            problems += _actions_problems(block)
    block_ids = [block["block_id"] for block in blocks if "block_id" in block]
    if len(set(block_ids)) != len(block_ids):
        problems.append("block_id repeated")
    return problems


def _actions_problems(block: dict[str, Any]) -> list[str]:
    """An actions block's limits: 1 to 25 elements, action_ids unique in the block, ids
    of 255 characters at most; a button has a label of 75 characters at most and either a
    url (3,000) or a value (2,000)."""
    problems = []
    elements = block.get("elements", [])
    if not 1 <= len(elements) <= SLACK_ACTION_ELEMENTS:
        problems.append(
            f"actions block with {len(elements)} elements (1 to {SLACK_ACTION_ELEMENTS})"
        )
    if len(block.get("block_id", "")) > SLACK_ID:
        problems.append("block_id too long")
    action_ids = [element.get("action_id", "") for element in elements]
    if len(set(action_ids)) != len(action_ids):
        problems.append("action_id repeated in an actions block")
    for element in elements:
        if not element.get("action_id") or len(element["action_id"]) > SLACK_ID:
            problems.append("action_id missing or too long")
        if element.get("type") != "button":
            continue
        if not 1 <= len(element.get("text", {}).get("text", "")) <= SLACK_BUTTON_TEXT:
            problems.append("button text empty or too long")
        if "url" in element and len(element["url"]) > SLACK_BUTTON_URL:
            problems.append("button url too long")
        if len(element.get("value", "")) > SLACK_BUTTON_VALUE:
            problems.append("button value too long")
    return problems


def discord_problems(message: dict[str, Any]) -> list[str]:
    """Every Discord limit a message breaks (empty when it is fine)."""
    problems = []
    embeds = message.get("embeds", [])
    if len(message.get("content") or "") > DISCORD_CONTENT:
        problems.append("content too long")
    if len(embeds) > DISCORD_EMBEDS_PER_MESSAGE:
        problems.append(f"{len(embeds)} embeds > {DISCORD_EMBEDS_PER_MESSAGE}")
    if sum(embed_size(embed) for embed in embeds) > DISCORD_EMBED_TOTAL:
        problems.append("embeds exceed 6000 characters together")
    for embed in embeds:
        if len(embed.get("title", "")) > DISCORD_EMBED_TITLE:
            problems.append("embed title too long")
        if len(embed.get("description", "")) > DISCORD_EMBED_DESCRIPTION:
            problems.append("embed description too long")
        if len(embed.get("fields", [])) > DISCORD_EMBED_FIELDS:
            problems.append("too many fields")
        if len(embed.get("footer", {}).get("text", "")) > DISCORD_FOOTER_TEXT:
            problems.append("footer too long")
        for item in embed.get("fields", []):
            if len(item["name"]) > DISCORD_FIELD_NAME or len(item["value"]) > DISCORD_FIELD_VALUE:
                problems.append("field too long")
            if not item["name"] or not item["value"]:
                problems.append("empty field")
    problems += _component_problems(message.get("components", []))
    if not message.get("content") and not embeds:
        problems.append("empty message")
    return problems


def _component_problems(rows: list[dict[str, Any]]) -> list[str]:
    """The limits of a message's buttons: 5 action rows of 5 buttons; a link button has
    a URL and no custom_id, any other a custom_id (unique in the message, 100 characters
    at most); labels of 80 characters at most."""
    problems = []
    if len(rows) > DISCORD_ACTION_ROWS:
        problems.append(f"{len(rows)} action rows > {DISCORD_ACTION_ROWS}")
    seen: set[str] = set()
    for row in rows:
        buttons = row.get("components", [])
        if row.get("type") != 1 or not buttons:
            problems.append("not an action row of buttons")
        if len(buttons) > DISCORD_ROW_BUTTONS:
            problems.append(f"{len(buttons)} buttons in a row > {DISCORD_ROW_BUTTONS}")
        for button in buttons:
            label, custom, url = button.get("label"), button.get("custom_id"), button.get("url")
            if button.get("type") != 2 or not label:
                problems.append("not a labelled button")
            elif len(label) > DISCORD_BUTTON_LABEL:
                problems.append("button label too long")
            if button.get("style") == 5:  # a link
                if not url or custom is not None:
                    problems.append("a link button needs a url and no custom_id")
                elif len(url) > DISCORD_BUTTON_URL:
                    problems.append("button url too long")
            elif not custom or url is not None:
                problems.append("a button needs a custom_id and no url")
            elif len(custom) > DISCORD_CUSTOM_ID:
                problems.append("custom_id too long")
            elif custom in seen:
                problems.append("custom_id repeated")
            if custom:
                seen.add(custom)
    return problems
