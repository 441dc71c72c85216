"""Source names: the grammar, canonical names, one-line errors."""

from __future__ import annotations

import pytest

from digests.sources.errors import SourceError
from digests.sources.spec import CATEGORIES, parse_source


@pytest.mark.parametrize(
    ("text", "name", "query"),
    [
        ("arxiv:cs.LG", "arxiv:cs.LG", "cat:cs.LG"),
        ("  ARXIV:cs.lg ", "arxiv:cs.LG", "cat:cs.LG"),
        ("arxiv:stat.ML", "arxiv:stat.ML", "cat:stat.ML"),
        ("arxiv:math.OC", "arxiv:math.OC", "cat:math.OC"),
        ("arxiv:hep-th", "arxiv:hep-th", "cat:hep-th"),
        ("arxiv:physics.optics", "arxiv:physics.optics", "cat:physics.optics"),
        ("arxiv:q-bio.NC", "arxiv:q-bio.NC", "cat:q-bio.NC"),
        ("arxiv:eess.SP", "arxiv:eess.SP", "cat:eess.SP"),
        ("arxiv:econ.EM", "arxiv:econ.EM", "cat:econ.EM"),
        ("arxiv:astro-ph.CO", "arxiv:astro-ph.CO", "cat:astro-ph.CO"),
        ("arxiv:cond-mat.stat-mech", "arxiv:cond-mat.stat-mech", "cat:cond-mat.stat-mech"),
        ("arxiv:q-fin.ST", "arxiv:q-fin.ST", "cat:q-fin.ST"),
        ("arxiv:nlin.AO", "arxiv:nlin.AO", "cat:nlin.AO"),
        ("arxiv:gr-qc", "arxiv:gr-qc", "cat:gr-qc"),
        ("arxiv:quant-ph", "arxiv:quant-ph", "cat:quant-ph"),
        ("arxiv:math-ph", "arxiv:math-ph", "cat:math-ph"),
        ("arxiv:nucl-th", "arxiv:nucl-th", "cat:nucl-th"),
        (
            'arxiv:"offline   reinforcement learning"',
            'arxiv:"offline reinforcement learning"',
            'all:"offline reinforcement learning"',
        ),
        (
            "arxiv:ti:diffusion  AND cat:cs.LG",
            "arxiv:ti:diffusion AND cat:cs.LG",
            "ti:diffusion AND cat:cs.LG",
        ),
        ('arxiv:au:"Yoshua Bengio"', 'arxiv:au:"Yoshua Bengio"', 'au:"Yoshua Bengio"'),
    ],
)
def test_arxiv_sources(text: str, name: str, query: str) -> None:
    spec = parse_source(text)
    assert (spec.kind, spec.name, spec.query) == ("arxiv", name, query)
    assert parse_source(spec.name) == spec  # the canonical name names the same source


def test_other_kinds_and_canonical_names() -> None:
    spec = parse_source("openreview:ICLR.cc/2025/Conference/")
    assert (spec.kind, spec.value, spec.name) == (
        "openreview",
        "ICLR.cc/2025/Conference",
        "openreview:ICLR.cc/2025/Conference",
    )
    feed = parse_source("feed:HTTPS://Example.ORG/journal.rss?topic=ml#top")
    assert feed.name == "feed:https://example.org/journal.rss?topic=ml"
    assert feed.value == "https://example.org/journal.rss?topic=ml"
    assert parse_source(feed.name) == feed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rss:https://example.org/a.rss", "unknown kind 'rss'"),
        ("cs.LG", "unknown kind"),
        ("arxiv:", "nothing after arxiv:"),
        ("arxiv:cs.LGG", "did you mean cs.LG?"),
        ("arxiv:cs.ML", "did you mean stat.ML?"),
        ("arxiv:math.oc.x", "not an arXiv category"),
        ("arxiv:diffusion", 'for a search: arxiv:"diffusion"'),
        ("arxiv:offline RL", 'double quotes: arxiv:"offline RL"'),
        ('arxiv:"a "b" c"', "one phrase in double quotes"),
        ('arxiv:""', "one phrase"),
        ('arxiv:ti:"open', "unbalanced double quotes"),
        ("openreview:ICLR cc/2025", "not an OpenReview venue id"),
        ("openreview:ICLR.cc//2025", "not an OpenReview venue id"),
        ("openreview:<script>", "not an OpenReview venue id"),
        ("feed:ftp://example.org/a.rss", "http:// or https://"),
        ("feed:javascript:alert(1)", "http:// or https://"),
        ("feed:https://user:pw@example.org/a.rss", "http:// or https://"),
        ("feed:example.org/a.rss", "http:// or https://"),
        ("arxiv:cs.LG\u202e", "not a source name"),
    ],
)
def test_bad_names_get_one_line_naming_the_source(text: str, expected: str) -> None:
    with pytest.raises(SourceError) as caught:
        parse_source(text)
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message
    assert message.startswith("source ")


def test_taxonomy_has_the_usual_categories() -> None:
    assert {"cs.LG", "cs.AI", "cs.CL", "cs.CV", "stat.ML", "math.ST", "hep-ph"} <= CATEGORIES
    assert "cs.lg" not in CATEGORIES and "cs" not in CATEGORIES
