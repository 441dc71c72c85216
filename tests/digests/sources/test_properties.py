"""Properties (bad input): any text gets a SourceSpec or a one-line SourceError;
any bytes get papers or a ParseError; canonical names round-trip."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from digests.sources.arxiv import parse_arxiv_page
from digests.sources.errors import ParseError, SourceError
from digests.sources.feeds import parse_feed
from digests.sources.openreview import parse_openreview_page
from digests.sources.spec import parse_source

KINDS = st.sampled_from(["arxiv:", "openreview:", "feed:", "feed:https://", 'arxiv:"', "", "rss:"])


@settings(max_examples=400, deadline=None)
@given(KINDS, st.text(max_size=60))
def test_any_source_text_is_a_spec_or_one_line(kind: str, rest: str) -> None:
    try:
        spec = parse_source(kind + rest)
    except SourceError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("source ")
    else:
        assert parse_source(spec.name) == spec


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_papers_or_a_parse_error(body: bytes) -> None:
    text = body.decode("utf-8", errors="replace")
    for parse in (
        lambda: parse_arxiv_page(text, source="s"),
        lambda: parse_openreview_page(body, source="s"),
        lambda: parse_feed(body, source="s"),
    ):
        try:
            parse()
        except ParseError as exc:
            assert "\n" not in str(exc)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    ["title", "abstract", "authors", "keywords", "TLDR", "venue", "pdf", "code", "doi"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"id": JSON, "forum": JSON, "cdate": JSON, "pdate": JSON, "tmdate": JSON},
            optional={
                "content": st.dictionaries(FIELDS, st.fixed_dictionaries({"value": JSON}) | JSON)
            },
        ),
        max_size=4,
    ),
    JSON,
)
def test_openreview_notes_of_any_shape_never_crash(notes: list[object], count: object) -> None:
    import json

    page = parse_openreview_page(json.dumps({"notes": notes, "count": count}), source="s")
    assert page.notes == len(notes) and page.count >= 0
    for paper in page.papers:
        assert paper.title or paper.abstract
