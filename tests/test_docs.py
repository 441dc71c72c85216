"""The README and the docs match the code: quickstart, commands and settings."""

from __future__ import annotations

import re
from pathlib import Path

from bot.cli import main
from config.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The pages that hold the command line and `/papers` tables, and the settings' reference.
GETTING_STARTED = (ROOT / "docs" / "tutorial" / "getting-started.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")


def quickstart_commands() -> list[str]:
    section = README.split("## Quickstart", 1)[1]
    block = re.search(r"```\w*\n(.*?)```", section, re.S)
    assert block
    return [
        line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")
    ]


def test_quickstart_has_exactly_two_commands() -> None:
    commands = [line.split("#")[0].strip() for line in quickstart_commands()]
    assert commands == ["python3 tasks.py demo", "python3 tasks.py test"]


def test_every_command_is_documented() -> None:
    for name in main.commands:
        assert f"`paperboy {name}" in GETTING_STARTED, name


def test_every_setting_is_documented() -> None:
    for setting in SETTINGS:
        assert f"`{setting.env}`" in CONFIGURATION, setting.env


def test_every_chat_command_is_documented() -> None:
    from digests.commands import VERBS

    for verb in VERBS:
        assert f"`/papers {verb.name}" in GETTING_STARTED, verb.name


def test_the_slack_manifest_matches_the_grammar() -> None:
    from digests.commands.grammar import usage_hint

    manifest = (ROOT / "deploy" / "slack-manifest.yml").read_text()
    assert "command: /papers" in manifest
    assert f'usage_hint: "{usage_hint()}"' in manifest
    for scope in ("commands", "chat:write", "users:read"):
        assert f"- {scope} " in manifest or f"- {scope}\n" in manifest
    assert "socket_mode_enabled: true" in manifest


def test_no_page_installs_a_package_named_paperboy() -> None:
    """`paperboy` on PyPI is another project: the docs install the extra from the checkout
    (`pip install '.[semantic]'`), never `pip install paperboy` or `'paperboy[semantic]'`."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    by_name = re.compile(
        r"""(?:pipx|uv (?:tool|pip)|pip3?) install\b[^\n`#]*?(?<![\w./-])['"]?paperboy\b(?![\w./-])"""
    )
    for wrong in (
        "pip install paperboy",
        "pipx install 'paperboy[semantic]'",
        "uv tool install paperboy",
    ):
        assert by_name.search(wrong), wrong
    for right in ("pip install '.[semantic]'", "pip install /opt/paperboy/src", "pipx install ."):
        assert not by_name.search(right), right
    found = [
        f"{page.relative_to(ROOT)}: {hit.group(0)}"
        for page in pages
        for hit in by_name.finditer(page.read_text(encoding="utf-8"))
    ]
    assert found == []
