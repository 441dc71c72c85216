"""Learned topic models, per-topic lines, and feedback: all as weighted terms.

A model (`config/topic_models.toml`, written by `bench/train_topics.py`) is terms over the
matcher's own features (`features`), added to a catalog topic's hand terms and scaled so
that the catalog's one threshold is the topic's own line (`combine`). A model fitted to
other hand terms (`hand_key`) or malformed is left out with one warning. `refine` moves a
topic towards the papers marked relevant and away from the others (Rocchio).
"""

from __future__ import annotations

import hashlib
import logging
import math
import statistics
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from digests.matching import PaperText, Term
from digests.topic import Topic

log = logging.getLogger(__name__)

MODELS_FILE = "topic_models.toml"
MODELS_PATH = Path(str(resources.files("config").joinpath(MODELS_FILE)))

# Words too common to tell topics apart (and glue inside word pairs); never features.
STOP_WORDS = frozenset(
    (  # noqa: SIM905
        "a about above after again all also an and any are as at be been before being below "
        "between both but by can could did do doe does doing down during each few for from "
        "further had ha has have having he her here his how i if in into is it its itself "
        "just more most no nor not of off on once only or other our out over own same she "
        "should so some such than that the their them then there these they this those "
        "through to too under until up very wa was we were what when where which while who "
        "whom why will with would you your thi u"
    ).split()
)


# A learned weight above this is not one the trainer writes (its largest is ~11 on
# lines of 2.75-25): a hostile or broken file, which would make one word a topic.
MAX_WEIGHT = 1000.0


@dataclass(frozen=True)
class TopicModel:
    """A catalog topic's learned model: `terms` added to its hand terms weighted `hand`,
    and `threshold`, its line on that score; `hand_terms`, the `hand_key` of the hand
    terms it was learned with."""

    threshold: float
    hand: float
    terms: tuple[Term, ...]
    hand_terms: str = ""


class ModelError(ValueError):
    """A model in the model file is malformed; the message says where."""


def hand_key(terms: Iterable[Term]) -> str:
    """A short hash of a topic's hand terms, phrases and weights, in any order: what the
    model file records so that a model is not applied to hand terms it was not fitted to."""
    text = "\n".join(sorted(f"{term.phrase.strip()}={term.weight!r}" for term in terms))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _positive(value: object, what: str) -> float:
    number = float(value)  # type: ignore[arg-type]  # TypeError/ValueError: the caller's
    if not math.isfinite(number) or number <= 0 or number > MAX_WEIGHT:
        raise ModelError(f"{what} must be a positive number up to {MAX_WEIGHT:g}, not {value!r}")
    return number


def features(text: PaperText) -> dict[str, float]:
    """{padded phrase: value} for the paper's words and word pairs (stop words left out),
    valued as the matcher values a term of weight 1: 1 + ln(count in the abstract) if
    there, + 1 if in the title, + 1 if in the keywords."""
    counts = Counter(_phrases(text.abstract))
    found = {phrase: 1.0 + math.log(count) for phrase, count in counts.items()}
    for field in (text.title, text.keywords):
        for phrase in set(_phrases(field)):
            found[phrase] = found.get(phrase, 0.0) + 1.0
    return found


def _phrases(normalised: str) -> list[str]:
    """The text's words and word pairs, padded, in order (a stop word, a one-letter word
    or a number is neither, and breaks a pair)."""
    phrases = []
    previous = ""
    for token in normalised.split():
        if token in STOP_WORDS or len(token) < 2 or token.isdigit():
            previous = ""
            continue
        phrases.append(f" {token} ")
        if previous:
            phrases.append(f" {previous} {token} ")
        previous = token
    return phrases


def load_models(path: Path | None = None) -> dict[str, TopicModel]:
    """{topic id: model} from the model file ({} when there is none: hand terms only).
    A file that cannot be read, and each malformed model in it, is left out with a
    one-line warning (those topics keep their hand terms)."""
    source = path or MODELS_PATH
    if not source.is_file():
        return {}
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        warn_once("%s: not read, hand terms only: %s", source, exc)
        return {}
    models = {}
    for topic_id, raw in data.items():
        try:
            models[topic_id] = _model(raw)
        except (ModelError, KeyError, TypeError, ValueError, AttributeError) as exc:
            problem = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            warn_once("%s: topic %r left out (hand terms only): %s", source, topic_id, problem)
    return models


def _model(raw: object) -> TopicModel:
    if not isinstance(raw, dict):
        raise ModelError(f"a table, not {raw!r}")
    threshold = _positive(raw["threshold"], "threshold")
    hand = _positive(raw.get("hand", 1.0), "hand")
    terms = []
    table = raw.get("terms", {})
    if not isinstance(table, dict):
        raise ModelError(f"terms must be a table of phrase = weight, not {table!r}")
    for phrase, weight in table.items():
        term = Term.of(str(phrase), _positive(weight, f"term {phrase!r}"))
        if not term.phrase.strip():
            raise ModelError(f"term {phrase!r} has no words")
        terms.append(term)
    key = raw["hand_terms"]
    if not isinstance(key, str):
        raise ModelError(f"hand_terms must be a string, not {key!r}")
    return TopicModel(threshold, hand, tuple(terms), key)


_warned: set[str] = set()


def warn_once(message: str, *args: object) -> None:
    """Log a warning once per process (the catalog is read by every command)."""
    text = message % args
    if text not in _warned:
        _warned.add(text)
        log.warning("%s", text)


def combine(
    hand: Sequence[Term], model: TopicModel | None, line: float, scale_to: float
) -> tuple[Term, ...]:
    """A topic's terms: hand terms (x the model's `hand`) plus its learned terms, summed
    per phrase, all scaled so that `scale_to` (the catalog's threshold) is its `line`."""
    weights: dict[str, float] = {}
    for term in hand:
        weights[term.phrase] = weights.get(term.phrase, 0.0) + term.weight * (
            model.hand if model else 1.0
        )
    for term in model.terms if model else ():
        weights[term.phrase] = weights.get(term.phrase, 0.0) + term.weight
    factor = scale_to / line
    return tuple(Term(phrase, round(w * factor, 4)) for phrase, w in weights.items() if w)


# Feedback (Rocchio): how far the labelled papers move a topic, and how many words.
FEEDBACK_POSITIVE = 0.75
FEEDBACK_NEGATIVE = 0.75
FEEDBACK_TERMS = 40


def refine(
    topic: Topic,
    positives: Sequence[PaperText],
    negatives: Sequence[PaperText] = (),
    *,
    scale: float | None = None,
    max_terms: int = FEEDBACK_TERMS,
    featurize: Callable[[PaperText], Mapping[str, float]] = features,
) -> Topic:
    """The topic moved towards `positives` and away from `negatives` (Rocchio):
    weight += scale x (FEEDBACK_POSITIVE x mean feature of the positives
                       - FEEDBACK_NEGATIVE x mean feature of the negatives),
    for the `max_terms` phrases moved most among those in at least two labelled papers of
    one side. `scale` defaults to the median of the topic's weights (learned weights are
    on the topic's own line). The same id, new terms (term-keyed caches score it afresh);
    no labels: the topic unchanged. `featurize`: `features`, or a cache of it."""
    if not positives and not negatives:
        return topic
    if scale is None:
        scale = statistics.median([abs(t.weight) for t in topic.terms]) if topic.terms else 1.0
    sides = [
        ([featurize(paper) for paper in papers], weight)
        for papers, weight in ((positives, FEEDBACK_POSITIVE), (negatives, -FEEDBACK_NEGATIVE))
    ]
    # Only phrases in at least two papers of one side can move (counted by Counter, as few
    # are shared); shifts are summed in the papers' order, so the floats are the same.
    shared: set[str] = set()
    for found, _ in sides:
        support: Counter[str] = Counter()
        for paper in found:
            support.update(paper.keys())
        shared.update(phrase for phrase, count in support.items() if count >= 2)
    shift: dict[str, float] = {}
    for found, weight in sides:
        for paper in found:
            for phrase in shared.intersection(paper):
                shift[phrase] = shift.get(phrase, 0.0) + weight * paper[phrase] / len(found)
    moved = sorted(((abs(v), p) for p, v in shift.items() if v), reverse=True)[:max_terms]
    weights = {term.phrase: term.weight for term in topic.terms}
    for _, phrase in moved:
        weights[phrase] = round(weights.get(phrase, 0.0) + scale * shift[phrase], 4)
    terms = tuple(Term(p, w) for p, w in weights.items() if w)
    log.debug(
        "topic %s refined by %d/%d papers: %d terms moved",
        topic.id,
        len(positives),
        len(negatives),
        len(moved),
    )
    return replace(topic, terms=terms)
