"""Split a sequence of whole units (items) into messages that each stay within limits."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


def pack(units: Sequence[T], fits: Callable[[list[T], T], bool]) -> list[list[T]]:
    """Greedy packing: start a new message when the next unit would not fit.

    `fits(current, unit)` says whether `unit` may join `current`; a unit always fits an
    empty message (each unit is made to respect the per-item limits on its own).
    """
    messages: list[list[T]] = []
    current: list[T] = []
    for unit in units:
        if current and not fits(current, unit):
            messages.append(current)
            current = []
        current.append(unit)
    if current:
        messages.append(current)
    return messages


def clamp(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters at a word, never leaving a dangling escape."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip("\\ ") + "…"
