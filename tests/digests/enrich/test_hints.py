"""The cheap tests that `derive` runs before its costly patterns decide nothing:
with them or without them, every abstract gets the same title, method, name and TL;DR."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digests.enrich import titles
from digests.text import plain_text, sentences
from tests.conftest import seed_abstracts

# Words that make or nearly make a trigger: verbs at a sentence's start or end, naming
# words with and without their space, look-alikes ("typically" holds "call"), case, a
# Kelvin sign (re.I matches it with "k"), abbreviations that do not end a sentence.
WORDS = [
    "we", "We", "propose", "Propose", "proposes", "presents", "representation", "put",
    "forward", "puts", "call", "called", "CALLED", "name", "named", "term", "termed",
    "this", "it", "as", "dubbed", "coined", "denoted", "referred", "to", "typically",
    "AlphaDPO", "(FoO)", "L-PPO,", "a", "novel", "method", "paper", "e.g.", "et al.",
    "end.", "End.", "Why?", "\u212aey", "désign", "design", "develops", "1.", "(ours)",
]  # fmt: skip


def _slow(monkeypatch: Any) -> None:
    """Every sentence goes through the full patterns, as if no cheap test existed."""
    monkeypatch.setattr(titles, "_may_have", lambda hint, sentence: True)
    monkeypatch.setattr(titles, "_hinted", lambda text, sents, verbs=None: [True] * len(sents))
    monkeypatch.setattr(titles, "_NAMING_WORDS", ("",))  # "" is in every sentence


def _derived(abstract: str) -> list[tuple[Any, ...]]:
    return [
        (d.title, d.method, d.long_name, d.tldr)
        for d in (titles.derive(abstract, titled=t) for t in (False, True))
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40))
def test_the_hint_scan_finds_what_one_search_per_sentence_finds(words: list[str]) -> None:
    text = plain_text(" ".join(words))
    sents = sentences(text)
    hint = titles._HAS_TRIGGER
    expected = [not s.isascii() or hint.search(s.lower()) is not None for s in sents]
    assert titles._hinted(text, sents) == expected
    assert [titles._may_have(hint, s) for s in sents] == expected


class _Forgetful(dict):  # type: ignore[type-arg]
    """A memo that keeps nothing: every sentence is scanned again, as before."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def _no_memo(monkeypatch: Any) -> None:
    made = titles._Scans

    def scans() -> titles._Scans:
        return made(searched=_Forgetful(), verbs=_Forgetful())

    monkeypatch.setattr(titles, "_Scans", scans)


# Each shortcut (the cheap tests, the scans memo) taken away in turn: the same fields.
WITHOUT = pytest.mark.parametrize("without", [_slow, _no_memo], ids=["cheap_tests", "scans_memo"])


@WITHOUT
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40))
def test_derived_fields_are_the_same_without_a_shortcut(
    without: Callable[[Any], None], words: list[str]
) -> None:
    abstract = " ".join(words)
    fast = _derived(abstract)
    with pytest.MonkeyPatch.context() as monkeypatch:
        without(monkeypatch)
        assert _derived(abstract) == fast


@WITHOUT
def test_the_seed_abstracts_derive_the_same_without_a_shortcut(
    without: Callable[[Any], None], monkeypatch: Any
) -> None:
    abstracts = seed_abstracts()
    fast = [_derived(abstract) for abstract in abstracts]
    without(monkeypatch)
    assert [_derived(abstract) for abstract in abstracts] == fast
