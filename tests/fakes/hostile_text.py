"""Hostile texts for the CPU-bound tests, a megabyte at a time."""

from __future__ import annotations

from hypothesis import strategies as st

MEGABYTE = 1_000_000


# The pieces that markup, maths, sentence splitting and title rules react to.
TOKENS = [
    "*", "**", "_", "__", "`", "$", "$$", "\\(", "\\)", "\\[", "\\]", "{", "}", "^", "\\",
    "\\frac", "\\sqrt", "\\hat", "\\text", "\\%", "[", "]", "(", ")", "](", "](https://x.org/",
    "http://", "e.g.", "i.e.", "et al.", ". ", ", ", " ", "\n", "\t", "\u2003", "\u202e",
    "\u200b", "We propose ", "called ", "named ", "(ABC)", ", XNet,", "We show that ",
    "to investigate how ", "the ", "of ", "a ", "A", "B1", "x", "TOKEN", "=", "xoxb-",
    "export ", "SECRET_", "signing secret ", "MTIz.", "0f",
    "~~", "<", ">", "![", "www.", "client_secret: ", "xo*", "é中", "xoxb-\n", "1-\n ",
]  # fmt: skip


def hostile_texts(tokens: list[str] = TOKENS) -> st.SearchStrategy[str]:
    """A short fragment of markup repeated up to 1 MB: repetition is what makes a
    quadratic pattern show, and a fragment mixes the characters that patterns key on."""
    fragment = st.lists(st.sampled_from(tokens) | st.text(max_size=3), min_size=1, max_size=8)
    return st.builds(
        lambda parts, size: ("".join(parts) or "x") * (size // max(1, len("".join(parts))) + 1),
        fragment,
        st.just(MEGABYTE) | st.integers(min_value=1, max_value=MEGABYTE),
    ).map(lambda text: text[:MEGABYTE])
