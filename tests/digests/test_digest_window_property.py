"""A window's scoring of a batch's topics (`_Window.score`), with feedback: each topic's
hits are `score`'s, and a refined topic's are its own scores of the papers its original
reaches the threshold for, however the batch lists its topics (one object many times,
equal topics as distinct objects, refined topics sharing an original, in any order).

The window tests each distinct topic object once and collects a refined topic's pairs by
position instead of by its terms: this holds it to the contract, not to its speed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from digests.digest import _Window
from digests.matching import PaperText, Term, normalise, score
from digests.topics import Topic
from tests.fakes.digest import terms_strategy, text_strategy

THRESHOLD = 0.5


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    originals=st.lists(terms_strategy, min_size=1, max_size=4, unique=True),
    extras=st.lists(terms_strategy, min_size=1, max_size=6),
    papers=st.lists(st.tuples(text_strategy, text_strategy, text_strategy), max_size=8),
    picks=st.lists(st.integers(0, 99), min_size=1, max_size=30),
    copies=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_a_window_scores_a_batchs_topics_as_score_does(
    originals: list[tuple[Term, ...]],
    extras: list[tuple[Term, ...]],
    papers: list[tuple[str, str, str]],
    picks: list[int],
    copies: list[bool],
) -> None:
    texts = [PaperText(normalise(t), normalise(k), normalise(a)) for t, k, a in papers]
    rows = {f"p{i}": {"id": f"p{i}", "added_at": "2026-11-29"} for i in range(len(texts))}
    plain = [Topic(f"o{i}", "", "", terms) for i, terms in enumerate(originals)]
    # Refined topics: an original's terms and more (as `digests.learning` makes them),
    # some of two originals sharing their extra terms.
    origin: dict[tuple[Term, ...], Topic] = {}
    refined = []
    for i, more in enumerate(extras):
        base = plain[i % len(plain)]
        terms = base.terms + tuple(t for t in more if t not in base.terms)
        if terms == base.terms or terms in origin or any(terms == p.terms for p in plain):
            continue
        origin[terms] = base
        refined.append(Topic(f"r{i}", "", "", terms))
    pool = plain + refined
    # The batch's list: objects repeated, and equal topics as distinct objects.
    batch = []
    for pick, copy in zip(picks, copies, strict=False):
        topic = pool[pick % len(pool)]
        batch.append(Topic(topic.id, topic.label, "", topic.terms) if copy else topic)
    window = _Window("2026-11-30", THRESHOLD, (), rows, dict(zip(rows, texts, strict=True)))
    window.score(batch, origin)

    def own(terms: tuple[Term, ...], among: dict[str, float] | None = None) -> dict[str, float]:
        return {
            f"p{i}": value
            for i, text in enumerate(texts)
            if (value := score(text, terms)) >= THRESHOLD and (among is None or f"p{i}" in among)
        }

    for topic in batch:
        if topic.terms in origin:
            original = origin[topic.terms].terms
            assert window.hits[original] == own(original)
            assert window.hits[topic.terms] == own(topic.terms, own(original))
        else:
            assert window.hits[topic.terms] == own(topic.terms)
        ranked = window.ranked[topic.terms]
        assert dict(ranked) == window.hits[topic.terms]
        assert [v for _, v in ranked] == sorted((v for _, v in ranked), reverse=True)
