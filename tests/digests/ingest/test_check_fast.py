"""The check pass's cheap tests give the verdicts of the plain tests they stand for: which
texts are rendered for a hidden secret (`bulk.has_markup`, against a regex search), which
JSON lines are re-encoded to look for a lone surrogate (`jsonl._may_escape`, against "an
escape, or any character that is not ASCII"), and so which files are refused."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digests.ingest import bulk, jsonl
from digests.ingest.bulk import check_files
from digests.ingest.decode import Limits
from digests.ingest.errors import IngestError
from tests.conftest import seed_abstracts

_OLD_MARKUP = re.compile(r"[\[\]`*_$\\{}]")


def _old_may_escape(text: str) -> bool:
    return "\\u" in text or not text.isascii()


MARKUP_ALPHABET = "[]`*_$\\{}~#()<>|x aéΣ\u200b\ud800"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=MARKUP_ALPHABET, max_size=30) | st.text(max_size=30))
def test_has_markup_is_the_character_class_search(text: str) -> None:
    assert bulk.has_markup(text) == (_OLD_MARKUP.search(text) is not None)


def _verdict(line: str) -> str:
    try:
        return repr(list(jsonl.parse_json([line], source="s", path="p")))
    except IngestError as exc:
        return str(exc)


# JSON strings as files spell them: escapes (surrogate or not, doubled backslashes), raw
# non-ASCII text, and raw lone surrogates (which a caller's text, not a file's, may hold).
PIECES = ["\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u00e9", "\\\\ud800", "é", "\ud800", "a", " "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8), st.sampled_from(["abstract", "t\\u00eftle"]))
def test_a_lone_surrogate_is_refused_exactly_as_before(pieces: list[str], key: str) -> None:
    text, back = "".join(pieces), "".join(pieces[::-1])
    line = f'{{"{key}": "x{text}", "abstract": "We {back}."}}\n'
    new = _verdict(line)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(jsonl, "_may_escape", _old_may_escape)
        assert _verdict(line) == new


# Secrets, plain and hidden by markup, injected into real papers' fields.
SECRETS = [
    "xoxb-1234567890-1234567890123-AbCdEf",
    "xox`b`-1234567890-1234567890123-AbCdEf",
    "$xoxb$-1234567890-1234567890123-AbCdEf",
    "[xoxb](https://a.example/x)-1234567890-1234567890123-AbCdEf",
    "xo**xb**-1234567890-1234567890123-AbCdEf",
    "xoxb\\\\-1234567890-1234567890123-AbCdEf",
    "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdEFGHijklMNOPqrstUVWX",
    "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz",
    "client_secret: dGhpc2lzYWNsaWVudHNlY3JldDEyMzQ1",
    "\\ud800",
    "hooks. webhooks/ secret $x$ {y} _z_",  # near misses: refused by nothing
]


def _papers() -> list[dict[str, object]]:
    return [
        {"id": f"2501.{n:05d}", "title": f"Paper {n} on things", "abstract": abstract}
        for n, abstract in enumerate(seed_abstracts())
    ]


def _file_verdict(path: Path) -> str:
    try:
        return str(check_files([path], None, None, Limits(), {}))
    except IngestError as exc:
        return str(exc)


def test_files_with_injected_secrets_get_the_same_verdicts(tmp_path: Path) -> None:
    rng = random.Random(2021)
    papers = _papers()
    seen: set[str] = set()
    for case in range(60):
        chosen = [dict(p) for p in rng.sample(papers, 12)]
        for _ in range(rng.randint(0, 2)):
            paper = rng.choice(chosen)
            field = rng.choice(["title", "abstract"])
            text = str(paper[field])
            cut = rng.randint(0, len(text))
            paper[field] = f"{text[:cut]} {rng.choice(SECRETS)} {text[cut:]}"
        path = tmp_path / f"case{case}.jsonl"
        # The secrets carry JSON escapes already (\\ud800): written as they stand.
        lines = (json.dumps(p).replace("\\\\ud800", "\\ud800") for p in chosen)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

        new = _file_verdict(path)
        seen.add("stored" if new.isdigit() else new.split(": ", 1)[1])
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(jsonl, "_may_escape", _old_may_escape)
            monkeypatch.setattr(bulk, "has_markup", lambda t: _OLD_MARKUP.search(t) is not None)
            assert _file_verdict(path) == new, path.read_text(encoding="utf-8")
    # Both outcomes, and every kind of refusal injected, were met.
    assert "stored" in seen
    assert {"looks like it holds a Slack token; refusing the file"} <= seen
    assert any("lone surrogate" in v for v in seen) and any("webhook" in v for v in seen)
