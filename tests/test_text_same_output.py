"""The linear `discord_escape` gives what the simple version gave.

The reference below is that version, kept as written: regex substitutions whose
line-start spaces may span line breaks. It is the specification; the code under test
is only faster.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from digests.render.escape import ZWSP, discord_escape
from digests.safe_text import strip_unsafe

_LINE_START = re.compile(r"^(\s*)([#>-])", re.M)
_MARKDOWN = re.compile(r"([\\*_~`|\[\]])")
_MENTION = re.compile(r"@(everyone|here)|<(?=[@#:/!&]|a:|t:)", re.I)


def reference_discord(text: str) -> str:
    escaped = _MARKDOWN.sub(r"\\\1", strip_unsafe(text))
    escaped = _LINE_START.sub(r"\1\\\2", escaped)
    return _MENTION.sub(lambda m: f"@{ZWSP}{m.group(1)}" if m.group(1) else f"<{ZWSP}", escaped)


DISCORD_PIECES = [
    "\n", "\r\n", "\r", " ", "\t", "\u2003", "\xa0", "\u2028", "\x85", "\x0b", "\x0c",
    "\x1c", "#", ">", "-", "##", "- ", "> ", "a", "@everyone", "<@1>", "*", "_", "`", "é",
]  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(DISCORD_PIECES) | st.text(max_size=2), max_size=40).map("".join))
@example("\n\n  \n\t#")
@example("#\n>\n -\n\u2003#")
@example(" \n \u2028 #")
def test_discord_escape_is_the_reference(text: str) -> None:
    assert discord_escape(text) == reference_discord(text)
