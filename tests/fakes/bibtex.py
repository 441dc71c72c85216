"""Hostile TeX pieces and papers for the BibTeX tests."""

from __future__ import annotations

from typing import Any


def paper(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "p380c62ca5bf30379",
        "title": "Conservative Q-Learning for Offline Reinforcement Learning",
        "authors": ["Aviral Kumar", "Aurick Zhou", "George Tucker", "Sergey Levine"],
        "venue": "NeurIPS",
        "year": 2020,
        "arxiv_url": None,
        "categories": [],
    }
    return base | fields


# The pieces TeX reads specially: commands kept and not, the `^^` notation in its forms,
# control symbols, the specials, and letters that make command names longer.
TEX_PIECES = [
    "\\", "\\\\", "^", "^^", "^^^^", "$", "$$", "{", "}", "%", "#", "&", "_", "~", "@", " ",
    "\\input", "\\^", "\\^^", "\\'", "\\'e", "\\\"o", "\\c{c}", "\\H{o}", "\\H", "\\i",
    "\\alpha", "\\frac{a}{b}", "\\emph{", "\\textbf{X}", "\\csname", "\\endcsname",
    "\\catcode", "\\def", "\\end", "\\stop", "\\makeatletter", "\\@", "\\(", "\\[", "\\{",
    "\\}", "\\ ", "\\,", "\\;", "\\&", "\\$", "\\_", "\\%", "\\verb|", "\\char", "\\Re",
    "69", "5c", "5C", "005c", ")", "M", "nput", "input", "x", "AB", "é", "\u00a0", "\n",
]  # fmt: skip
