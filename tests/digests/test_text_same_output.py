"""The linear `latex_to_text` and `discord_escape` give what the simple versions gave.

The references below are those versions, kept as written (with the module's nesting
cap): a recursion that copies each argument and scans it brace by brace, and regex
substitutions whose line-start spaces may span line breaks. They are the
specification; the code under test is only faster.
"""

from __future__ import annotations

import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from digests.render.escape import ZWSP, discord_escape
from digests.safe_text import strip_unsafe
from digests.text import (
    ACCENTS,
    GREEK,
    KEEP_ARGUMENT,
    MAX_NESTING,
    SYMBOLS,
    latex_to_text,
)

_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.S)
_PLAIN_SCRIPT = re.compile(r"([_^])\{([\w.]+)\}")


def _reference_braced(text: str, start: int) -> tuple[str, int]:
    while start < len(text) and text[start] == " ":
        start += 1
    if start >= len(text):
        return "", start
    if text[start] != "{":
        if text[start] == "\\":
            match = _COMMAND.match(text, start)
            if match is None:
                return "", start + 1
            return match.group(0), match.end()
        return text[start], start + 1
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : index], index + 1
    return text[start + 1 :], len(text)


def reference_latex(source: str, depth: int = 0) -> str:
    if depth > MAX_NESTING:
        return re.sub(r"[\\{}]", "", source)
    out: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            match = _COMMAND.match(source, index)
            if match is None:
                index += 1
                continue
            name = match.group(1)
            index = match.end()
            if name in ACCENTS or name in KEEP_ARGUMENT or name == "sqrt" or name == "frac":
                argument, index = _reference_braced(source, index)
                inner = reference_latex(argument, depth + 1)
                if name == "frac":
                    denominator, index = _reference_braced(source, index)
                    out.append(f"({inner})/({reference_latex(denominator, depth + 1)})")
                elif name == "sqrt":
                    out.append(f"√({inner})")
                elif name in ACCENTS and inner:
                    out.append(inner + ACCENTS[name] if len(inner) == 1 else inner)
                else:
                    out.append(inner)
            elif name in GREEK:
                out.append(GREEK[name])
            elif name in SYMBOLS:
                out.append(SYMBOLS[name])
            else:
                out.append(name)
        elif char in "_^":
            argument, index = _reference_braced(source, index + 1)
            rendered = reference_latex(argument, depth + 1)
            out.append(char + (rendered if len(rendered) <= 1 else "{" + rendered + "}"))
        elif char in "{}":
            index += 1
        else:
            out.append(char)
            index += 1
    text = "".join(out)
    text = _PLAIN_SCRIPT.sub(r"\1\2", text)
    return unicodedata.normalize("NFC", text)


# What LaTeX rendering reacts to, and characters that NFC changes or that change length
# under it (a combining accent, the Angstrom sign, a decomposing singleton, Devanagari qa).
LATEX_TOKENS = [
    "\\frac", "\\sqrt", "\\hat", "\\tilde", "\\vec", "\\text", "\\textbf", "\\mathbf",
    "\\alpha", "\\Pi", "\\prod", "\\left", "\\{", "\\}", "\\%", "\\_", "\\,", "\\", "\\é",
    "{", "}", "{}", "_", "^", " ", "  ", "x", "ab", "1.5", "é", "e\u0301", "\u0301", "\u212b",
    "\u0344", "\u0958", "\n", "$", "*", "(", ")", ".",
]  # fmt: skip


def latex_texts(max_pieces: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(LATEX_TOKENS) | st.text(max_size=2), max_size=max_pieces).map(
        "".join
    )


@settings(max_examples=1500, deadline=None)
@given(latex_texts(40), st.integers(min_value=0, max_value=MAX_NESTING + 2))
@example("\\sqrt{" * (MAX_NESTING + 10) + "x" + "}" * (MAX_NESTING + 10), 0)  # past MAX_NESTING
@example("_{" * (MAX_NESTING + 5) + "ab", 0)
@example("\\frac{" * (MAX_NESTING + 3) + "}" * 10 + "{x}", 0)
@example("_{_{a}}", 0)
@example("\\hat{{\\alpha}} {x}_ {", 0)
@example("^\u0344 _\u212b \\hat\u0958", MAX_NESTING - 1)
@example("\\hat{" * MAX_NESTING + "^\u0344 _\u212b" + "}" * MAX_NESTING, 0)  # NFC past MAX_NESTING
@example("\\frac {a} {b} \\sqrt \\", 0)
@example(
    "_\\alpha " + "\\hat{" * MAX_NESTING + "_\\alpha" + "}" * MAX_NESTING, 0
)  # one argument, two depths
def test_latex_to_text_is_the_reference(source: str, depth: int) -> None:
    assert latex_to_text(source, depth) == reference_latex(source, depth)


@settings(max_examples=150, deadline=None)
@given(latex_texts(8), st.integers(min_value=1, max_value=300))
def test_latex_to_text_is_the_reference_on_repeated_fragments(fragment: str, times: int) -> None:
    """Repetition nests and reuses arguments (the short ones are rendered once per text)."""
    source = fragment * times
    assert latex_to_text(source) == reference_latex(source)


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
