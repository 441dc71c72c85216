"""`score` on terms it cannot search for: a term of no words matches nothing."""

from __future__ import annotations

import threading

import pytest

from digests.matching import Matcher, PaperText, Term, normalise, score

PAPER = PaperText(normalise("Offline RL"), normalise(""), normalise("offline rl, offline rl"))
REAL = Term.of("offline rl", 2.0)


@pytest.mark.parametrize("phrase", ["", " ", normalise("!!")])
def test_a_term_of_no_words_matches_nothing_and_returns(phrase: str) -> None:
    """A hand-built term of "" or " " must not make `score` (and the Matcher, which scores
    such a topic with it) loop forever, hanging the digest. Run in a thread so that such a
    loop fails this test instead of hanging the suite; the wait is a bound, not a timing."""
    terms = (Term(phrase, 1.0), REAL)
    found: dict[str, float] = {}

    def run() -> None:
        found["score"] = score(PAPER, terms)
        found["matcher"] = Matcher({"t": terms}).scores(PAPER).get("t", 0.0)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), f"score did not return for the term {phrase!r}"
    assert found == {"score": score(PAPER, (REAL,)), "matcher": score(PAPER, (REAL,))}
    assert score(PAPER, (Term(phrase, 1.0),)) == 0.0
