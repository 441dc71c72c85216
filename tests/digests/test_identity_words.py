"""The fingerprint's word split: ASCII text takes a byte-translation fast path,
which must give exactly what the Unicode regex gives (the ids of stored papers depend on
it: a different fingerprint would store a known paper again under a new id)."""

from __future__ import annotations

import csv
import hashlib
import re
import string
import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from digests import identity
from digests.text import plain_text
from tests.conftest import ICLR2021, seed_abstracts

_WORD = re.compile(r"[^\W_]+")


def reference(text: str) -> str:
    """The fingerprint's words as they were defined before the fast path."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


# Characters near the edges: every ASCII byte (controls, "_", the \x1c-\x1f separators
# that `str.split` takes for spaces), and non-ASCII letters, digits, marks and spaces.
ASCII = "".join(chr(c) for c in range(128))
OTHERS = "éÉßİıſﬁ²½٣\u00a0\u2028\u0301ＡΣσς\u212a"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=ASCII, max_size=200))
def test_ascii_text_gives_the_regex_words(text: str) -> None:
    assert identity._words(text) == reference(text).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ASCII + OTHERS, max_size=120) | st.text(max_size=120))
def test_any_text_gives_the_regex_words(text: str) -> None:
    assert identity._words(text) == reference(text).encode("utf-8")


def test_every_ascii_character_alone_and_between_words() -> None:
    for char in ASCII:
        for text in (char, f"Ab{char}cD", f"{char}9{char}"):
            assert identity._words(text).decode() == reference(text), repr(text)


def _abstracts() -> list[str]:
    found = seed_abstracts()
    if ICLR2021.is_file():  # a user's clone has no ../shared: the seeds alone then
        csv.field_size_limit(sys.maxsize)
        with ICLR2021.open(encoding="utf-8", newline="") as handle:
            found.extend(row["abstract"] for row in csv.DictReader(handle, delimiter="\t"))
    return found


def test_real_abstracts_and_titles_keep_their_fingerprints() -> None:
    abstracts = _abstracts()
    assert any(not plain_text(a).isascii() for a in abstracts)  # both paths are taken
    for abstract in abstracts:
        expected = reference(plain_text(abstract))
        assert identity.abstract_fingerprint(abstract) == expected
        digest = hashlib.sha256(expected.encode("utf-8")).hexdigest()
        assert identity.fingerprint_hash(abstract) == digest[: identity.FINGERPRINT_HEX_DIGITS]


def test_a_known_fingerprint_is_unchanged() -> None:
    # Pinned with the regex version: "Hello, World" is hashed as "hello world".
    assert identity.abstract_fingerprint("**Hello**, World_2 $\\alpha$!") == "hello world 2 α"
    assert identity.abstract_fingerprint(string.punctuation + "A_b") == "a b"
