"""Turn abstract markup (Markdown links and emphasis, LaTeX) into readable plain text.

Abstracts arrive with `[text](url)` links, `*emphasis*`, `{braces}` and inline maths
such as `$\\tilde{\\mathcal{O}}(\\sqrt{eH^5N})$` or `\\(\\hat{\\pi}_{\\text{ref}}\\)`.
`plain_text()` keeps the words and renders the maths with Unicode, so it reads
sensibly anywhere and carries no markup that a chat platform would interpret.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata

log = logging.getLogger(__name__)

GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε",
    "varepsilon": "ε", "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "θ",
    "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ",
    "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ",
    "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ",
    "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ",
    "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
SYMBOLS = {
    "propto": "∝", "approx": "≈", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥",
    "neq": "≠", "times": "×", "cdot": "·", "infty": "∞", "in": "∈", "sum": "Σ",
    "prod": "Π", "to": "→", "rightarrow": "→", "leftarrow": "←", "mid": "|",
    "sim": "~", "log": "log", "exp": "exp", "min": "min", "max": "max",
    "partial": "∂", "nabla": "∇", "ell": "ℓ", "pm": "±", "ldots": "…", "dots": "…",
    "cdots": "⋯", "star": "*", "ast": "*", "%": "%", "&": "&", "_": "_", "#": "#",
    "$": "$", "{": "(", "}": ")", ",": " ", ";": " ", "!": "", "quad": " ", "qquad": " ",
    "left": "", "right": "", "big": "", "Big": "", "bigg": "", "Bigg": "",
}  # fmt: skip
# Commands that decorate one argument: the argument is kept, with an accent if any.
ACCENTS = {"tilde": "\u0303", "hat": "\u0302", "bar": "\u0304", "dot": "\u0307", "vec": "\u20d7"}
KEEP_ARGUMENT = {
    "text", "textbf", "textit", "texttt", "mathrm", "mathbf", "mathit", "mathcal",
    "mathbb", "mathsf", "mathtt", "boldsymbol", "operatorname", "underline", "emph",
    "overline", "widetilde", "widehat", "textrm", "textsc", "mathscr", "mathfrak",
}  # fmt: skip

# Every pattern here runs in linear time: a span's body may not contain its own opening
# delimiter, so a scan from one opener stops at the next one instead of running to the
# end of the text for each of them (quadratic on `"*a " * 20_000`).
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\((https?://[^)\s\[]+)\)")
_MATH_SPAN = re.compile(
    r"\$\$([^$]+)\$\$|\$([^$]+)\$"
    r"|\\\(([^\\]*(?:\\(?![()])[^\\]*)*)\\\)|\\\[([^\\]*(?:\\(?![\[\]])[^\\]*)*)\\\]"
)
_EMPHASIS = re.compile(
    r"(?<![\w*_])(?:(\*{1,3})(?=[^\s*])([^*\n]+?)(?<=[^\s*])\1(?![\w*])"
    r"|(_{1,3})(?=[^\s_])([^_\n]+?)(?<=[^\s_])\3(?![\w_]))"
)
_CODE = re.compile(r"`([^`\n]+)`")
_SPACES = re.compile(r"[ \t\u00a0]+")
_ANY_SPACE = re.compile(r"\s+")
_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.S)
# Compiled once: `re.sub` with a string looks its pattern up at every call.
_PLAIN_SCRIPT = re.compile(r"([_^])\{([\w.]+)\}")
_TEXT_COMMAND = re.compile(r"\\(underline|emph|textbf|textit|text|mathrm)\{([^{}]*)\}")
_ESCAPED = re.compile(r"\\([%&#_$])")
_GROUP = re.compile(r"(?<![\\\w])\{([^{}]*)\}")
_NAME_SEPARATORS = re.compile(r"[-_/]+")
_LOWER_UPPER = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_UPPER_WORD = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")


# Deeper groups keep their characters, not their markup: real maths nests 2 or 3 deep,
# and each level rereads all the text inside it.
MAX_NESTING = 10
_LATEX_MARKUP = re.compile(r"[\\{}]")
_BRACE = re.compile(r"[{}]")
_TAKES_ARGUMENT = frozenset(ACCENTS) | KEEP_ARGUMENT | {"sqrt", "frac"}
_REPLACED = {**SYMBOLS, **GREEK}  # no name is in both, nor takes an argument
_SHORT_ARGUMENT = 16  # arguments up to this long are rendered once per text and depth


def latex_to_text(source: str, depth: int = 0) -> str:
    """Render a fragment of LaTeX maths as readable Unicode text.

    Linear in the length of `source`, however deep its groups nest: an argument is
    rendered as a range of `source`, not a copy, and each brace's match is found once."""
    return _Latex(source).render(0, len(source), depth)


class _Latex:
    """One text of LaTeX maths, rendered range by range."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._closes: dict[int, int] | None = None
        self._short: dict[tuple[str, int], str] = {}

    def render(self, start: int, end: int, depth: int) -> str:
        """The text of `source[start:end]`, as `depth` groups deep."""
        source = self.source
        if depth > MAX_NESTING:  # absurd nesting: keep the characters, drop the markup
            return _LATEX_MARKUP.sub("", source[start:end])
        out: list[str] = []
        index = start
        while index < end:
            char = source[index]
            if char == "\\":
                match = _COMMAND.match(source, index, end)
                if match is None:  # a trailing backslash
                    index += 1
                    continue
                name = match.group(1)
                index = match.end()
                if name in _TAKES_ARGUMENT:
                    inner, index = self.argument(index, end, depth + 1)
                    if name == "frac":
                        denominator, index = self.argument(index, end, depth + 1)
                        out.append(f"({inner})/({denominator})")
                    elif name == "sqrt":
                        out.append(f"√({inner})")
                    elif name in ACCENTS and inner:
                        out.append(inner + ACCENTS[name] if len(inner) == 1 else inner)
                    else:
                        out.append(inner)
                else:
                    out.append(_REPLACED.get(name, name))
            elif char in "_^":
                following = source[index + 1] if index + 1 < end else " "
                if following.isascii() and following not in " {}\\":  # rendered as itself
                    out.append(char + following)
                    index += 2
                    continue
                match = _COMMAND.match(source, index + 1, end) if following == "\\" else None
                if match is not None and match[1] not in _TAKES_ARGUMENT and depth < MAX_NESTING:
                    rendered, index = _lone_command(match[1]), match.end()  # `argument`, inline
                else:
                    rendered, index = self.argument(index + 1, end, depth + 1)
                out.append(char + (rendered if len(rendered) <= 1 else "{" + rendered + "}"))
            elif char in "{}":
                index += 1
            else:
                out.append(char)
                index += 1
        text = "".join(out)
        # Subscripts and superscripts of one plain token read fine without braces.
        if "{" in text:
            text = _PLAIN_SCRIPT.sub(_unbraced, text)
        return text if text.isascii() else unicodedata.normalize("NFC", text)

    def argument(self, start: int, end: int, depth: int) -> tuple[str, int]:
        """The argument at `start` (a `{...}` group or one token, read no further than
        `end`) rendered `depth` groups deep, and the index after it. A group left open
        runs to `end`. The same as `render` of the argument's text, without its call for
        a character or a command."""
        source = self.source
        while start < end and source[start] == " ":
            start += 1
        if start >= end:
            return "", start
        char = source[start]
        if char == "{":
            first, last, after = self._group(start, end)
            if last - first > 1:
                return self._render_short(first, last, depth), after
            if last == first:
                return "", after
            char = source[first]
        elif char == "\\":
            match = _COMMAND.match(source, start, end)
            if match is None:  # a trailing backslash
                return "", start + 1
            name = match.group(1)
            if depth > MAX_NESTING or name in _TAKES_ARGUMENT:
                return self._render_short(start, match.end(), depth), match.end()
            return _lone_command(name), match.end()
        else:
            after = start + 1
        if char in "\\{}":  # one character, as `render` makes it
            return "", after
        if char.isascii() or depth > MAX_NESTING:
            return char, after
        return unicodedata.normalize("NFC", char), after

    def _group(self, start: int, end: int) -> tuple[int, int, int]:
        """The range of the `{...}` group at `start` and the index after it."""
        source = self.source
        close = source.find("}", start + 1, end)  # closes it, unless a `{` comes first
        if close >= 0 and source.find("{", start + 1, close) >= 0:
            if self._closes is None:  # most maths nests no group: found when first needed
                self._closes = _matching_braces(source)
            matched = self._closes.get(start)
            close = matched if matched is not None and matched < end else -1
        if close < 0:  # left open: the group runs to `end`
            return start + 1, end, end
        return start + 1, close, close + 1

    def _render_short(self, start: int, end: int, depth: int) -> str:
        """`render`, once per text and depth for a short range."""
        if end - start > _SHORT_ARGUMENT:
            return self.render(start, end, depth)
        key = (self.source[start:end], depth)
        rendered = self._short.get(key)
        if rendered is None:
            rendered = self._short[key] = self.render(start, end, depth)
        return rendered


def _lone_command(name: str) -> str:
    """What `render` makes of a command alone that takes no argument (not past MAX_NESTING)."""
    value = _REPLACED.get(name, name)
    return value if value.isascii() else unicodedata.normalize("NFC", value)


def _unbraced(script: re.Match[str]) -> str:
    return script[1] + script[2]  # a function: Python 3.11 expands a template in Python


def _matching_braces(source: str) -> dict[int, int]:
    """Where each `{` of `source` that is closed is closed, by index.

    A `{`'s match depends only on the text after it, so this serves every range of
    `source`: a `{` closed at or past a range's end is left open in that range."""
    closes: dict[int, int] = {}
    opened: list[int] = []
    for brace in _BRACE.finditer(source):
        if brace.group() == "{":
            opened.append(brace.start())
        elif opened:
            closes[opened.pop()] = brace.start()
    return closes


MATH_BUDGET = 20_000  # characters of maths rendered per text; real abstracts have < 2,000
MAX_MATH_SPANS = 1_000  # real abstracts have < 50


def _render_maths(text: str) -> str:
    """Render maths spans as Unicode until MATH_BUDGET characters or MAX_MATH_SPANS spans
    are used up; after that only drop the delimiters (a C-speed literal substitution).
    Rendering is a Python loop per character and per span, and no abstract needs more,
    so a hostile text stays fast."""
    out: list[str] = []
    position, budget = 0, MATH_BUDGET
    for count, match in enumerate(_MATH_SPAN.finditer(text)):
        body = next(group for group in match.groups() if group is not None)
        budget -= len(body)
        out.append(text[position : match.start()])
        if budget < 0 or count >= MAX_MATH_SPANS:
            out.append(_MATH_DELIMITERS.sub("", text[match.start() :]))
            return "".join(out)
        out.append(latex_to_text(body))
        position = match.end()
    out.append(text[position:])
    return "".join(out)


# Markup is read in the first FINE_LIMIT characters; past that (no real abstract is that
# long) markup characters are only deleted. The fine pass costs a Python call per link,
# span or emphasis, which on a megabyte of "*a*" adds up; the coarse pass is C-speed.
FINE_LIMIT = 100_000
_COARSE = str.maketrans("", "", "*`$\\{}")
_MATH_DELIMITERS = re.compile(r"\$|\\[()\[\]]")


# One abstract is cleaned for its id, title and index in a row; a small cache suffices and
# keeps memory bounded (entries can be 100 KB each).
@functools.lru_cache(maxsize=32)
def plain_text(markup: str) -> str:
    """Markdown and LaTeX in, readable single-spaced plain text out.

    Links keep their text (or their URL when the text is the URL itself); emphasis
    markers, code ticks and grouping braces go; maths becomes Unicode. Linear in the
    length of `markup` (see FINE_LIMIT, MATH_BUDGET).
    """
    if len(markup) <= FINE_LIMIT:
        return _fine(markup)
    cut = markup.rfind(" ", FINE_LIMIT // 2, FINE_LIMIT)
    cut = cut if cut > 0 else FINE_LIMIT
    tail = _ANY_SPACE.sub(" ", markup[cut:].translate(_COARSE)).strip()
    return f"{_fine(markup[:cut])} {tail}".strip()


def _fine(markup: str) -> str:
    # Each pass runs only when its markup character is there: most abstracts have no
    # links, code or emphasis, and a `in` test is far cheaper than a regex scan. The
    # output is the same.
    text = markup
    if "[" in text:
        text = _MD_LINK.sub(lambda m: m.group(1) or m.group(2), text)
    if "$" in text or "\\" in text:
        text = _render_maths(text)
    if "\\" in text:
        # LaTeX outside $...$ still shows up in abstracts (\underline{...}, 58.7\%).
        text = _TEXT_COMMAND.sub(r"\2", text)
        text = _ESCAPED.sub(r"\1", text)
    if "`" in text:
        text = _CODE.sub(r"\1", text)
    if "*" in text or "_" in text:
        for _ in range(2):  # nested emphasis such as **bold *italic* bold**
            text = _EMPHASIS.sub(r"\2\4", text)  # the unmatched group gives ""
    if "{" in text:
        text = _GROUP.sub(r"\1", text)
    # All whitespace (line ends, em spaces, form feeds) becomes one space. `split()`
    # splits where `\s+` matches (both are str.isspace) three times faster than `sub`.
    return " ".join(text.split())


def name_key(text: str) -> str:
    """A name reduced to lowercase letters and digits: "Alpha-DPO" -> "alphadpo"."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(char for char in folded if char.isalnum())


def split_camel(name: str) -> str:
    """Split a method name into its word parts: "AlphaDPO" -> "Alpha DPO", "L-PPO" -> "L PPO"."""
    spaced = _NAME_SEPARATORS.sub(" ", name)
    spaced = _LOWER_UPPER.sub(" ", spaced)
    spaced = _UPPER_WORD.sub(" ", spaced)
    return _SPACES.sub(" ", spaced).strip()


_ABBREVIATIONS = re.compile(
    r"\b(e\.g|i\.e|et al|etc|vs|cf|Fig|Eq|Sec|resp|approx|w\.r\.t)\.$", re.I
)


_SENTENCE_END = re.compile(r"[.!?]\s+(?=[\"“(\[]?[A-Z0-9])")
_ABBREVIATION_TAIL = 12  # longer than the longest abbreviation ("approx.") plus one


def sentences(text: str) -> list[str]:
    """Split plain text into sentences, keeping "e.g." and "et al." inside theirs.

    Linear: only the end of each piece is tested for an abbreviation, and merged pieces
    are joined once (a long run of "e.g." stays linear).
    """
    # Split after each end mark followed by spaces and a capital or digit; the end mark
    # is matched, not looked behind for, so the scan jumps to the marks (twice as fast).
    pieces: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(text):
        pieces.append(text[start : end.start() + 1])
        start = end.end()
    pieces.append(text[start:])
    merged: list[list[str]] = []
    for piece in pieces:
        # The tail keeps a character before any abbreviation, so `\b` means the same.
        if merged and _ABBREVIATIONS.search(merged[-1][-1][-_ABBREVIATION_TAIL:]):
            merged[-1].append(piece)
        else:
            merged.append([piece])
    joined = (" ".join(parts).strip() for parts in merged)
    return [sentence for sentence in joined if sentence]


def shorten(text: str, limit: int, ellipsis: str = "…") -> str:
    """Trim `text` to at most `limit` characters at a word boundary, marking the cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - len(ellipsis) + 1]
    space = cut.rfind(" ")
    cut = cut[:space] if space > limit // 2 else cut[: limit - len(ellipsis)]
    return cut.rstrip(" ,;:-–—(") + ellipsis
