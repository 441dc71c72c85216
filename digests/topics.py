"""The topic catalog (`config/topics.toml`, with its learned models), and custom topics
made from a channel's free text ("diffusion policy"), matched the same way.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import itertools
import logging
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from config.topics import catalog_path
from digests.matching import Term, normalise
from digests.text import name_key
from digests.topic import Topic as Topic  # re-exported: most modules import it from here
from digests.topic_model import MODELS_FILE, combine, hand_key, load_models, warn_once

log = logging.getLogger(__name__)

CUSTOM_PREFIX = "custom:"
# A typo in a topic's name is read as the name only in a long one, and only a typo:
# `model based offline rl` is 0.89 like `model based rl`, and a topic of its own.
LOOSE_NAME_LENGTH = 12
LOOSE_RATIO = 0.95
# Words that say nothing about a field on their own, dropped from custom topics.
_GENERIC_WORDS = frozenset(
    (  # noqa: SIM905
        "a an and are as at based be by for from in into is it its of on or over that the "
        "their this to towards under using via we with learning learn model models method "
        "methods approach approaches network networks neural deep data paper papers new "
        "towards algorithm algorithms framework task tasks problem problems policy policies "
        "reinforcement machine system systems study"
    ).split()
)
# Words that only join others: "continual learning and catastrophic forgetting" is made
# of catalog names and "and".
_GLUE_WORDS = frozenset(
    (  # noqa: SIM905
        "a an and as at based by for from in into of on or over the to towards under using via with"
    ).split()
)


# A learned topic's full-text search (the archive) asks for its hand phrases and this many
# of its strongest learned terms that are not hand phrases: enough to keep the archive's
# best papers at a fraction of the cost of all terms (bench/archive_search.py).
SEARCH_LEARNED = 5


class CatalogError(ValueError):
    """The topic catalog file is malformed; the message says where."""


@dataclass(frozen=True)
class Catalog:
    topics: tuple[Topic, ...]
    threshold: float
    _by_id: dict[str, Topic] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update({topic.id: topic for topic in self.topics})

    def get(self, topic_id: str) -> Topic | None:
        return self._by_id.get(topic_id)

    @property
    def ids(self) -> list[str]:
        return [topic.id for topic in self.topics]

    @functools.cached_property
    def name_index(self) -> dict[tuple[str, ...], str]:
        """{normalised words of a name: topic id} over ids, labels and aliases (the first
        topic to use a name keeps it)."""
        names: dict[tuple[str, ...], str] = {}
        for topic in self.topics:
            for name in (topic.id, topic.label, *topic.aliases):
                words = tuple(normalise(name).split())
                if words:
                    names.setdefault(words, topic.id)
        return names

    def by_name(self, text: str) -> Topic | None:
        """The catalog topic that `text` names: its id, label or an alias, loosely."""
        key = name_key(text)
        for topic in self.topics:
            names = (topic.id, topic.label, *topic.aliases)
            if key and any(name_key(name) == key for name in names):
                return topic
        return None

    @functools.cached_property
    def acronyms(self) -> dict[str, tuple[str, ...]]:
        """{acronym: the words it stands for}, as the catalog's own names spell them out:
        `offline rl` and `offline reinforcement learning` name one topic, so `rl` is
        `reinforcement learning` (the words' initials must spell the acronym)."""
        found: dict[str, tuple[str, ...] | None] = {}
        for topic in self.topics:
            names = [
                tuple(normalise(name).split()) for name in (topic.id, topic.label, *topic.aliases)
            ]
            for short, long in itertools.permutations(names, 2):
                if len(long) - len(short) < 1:
                    continue
                lead = 0
                while lead < len(short) and short[lead] == long[lead]:
                    lead += 1
                tail = len(short) - lead - 1
                if tail < 0 or short[lead + 1 :] != long[len(long) - tail :]:
                    continue
                word, words = short[lead], long[lead : len(long) - tail]
                if len(words) > 1 and "".join(w[0] for w in words) == word:
                    found[word] = words if found.get(word, words) == words else None
        return {word: words for word, words in found.items() if words is not None}

    @functools.cached_property
    def _spelled_out_names(self) -> dict[str, str]:
        """{a name with its acronyms spelled out (`_spell_out`): topic id}."""
        names: dict[str, str] = {}
        for topic in self.topics:
            for name in (topic.id, topic.label, *topic.aliases):
                names.setdefault(self._spell_out(name), topic.id)
        return names

    def _spell_out(self, text: str) -> str:
        words = normalise(text).split()
        return " ".join(part for word in words for part in self.acronyms.get(word, (word,)))

    def named_loosely(self, text: str) -> Topic | None:
        """The catalog topic `text` names with its acronyms spelled out otherwise (`RL
        from human feedback` is `reinforcement learning from human feedback`, an alias of
        `rlhf`), or with a typo or two in a long name; None for any other text ("robot
        grasping with tactile sensors" names no topic, though it shares words with one)."""
        typed = self._spell_out(text)
        topic_id = self._spelled_out_names.get(typed)
        if topic_id is None and len(typed) >= LOOSE_NAME_LENGTH:
            close = difflib.get_close_matches(typed, list(self._spelled_out_names), 1, LOOSE_RATIO)
            topic_id = self._spelled_out_names[close[0]] if close else None
        return self.get(topic_id) if topic_id else None

    def suggest(self, text: str, extra: Iterable[str] = (), n: int = 3) -> list[str]:
        """The ids closest to a mistyped one: the best, and any nearly as close."""
        typed = text.lower().strip()
        names = {topic_id: topic_id for topic_id in [*self.ids, *extra]}
        names.update({topic.label.lower(): topic.id for topic in self.topics})
        ranked = sorted(
            (
                (difflib.SequenceMatcher(None, typed, name).ratio(), topic_id)
                for name, topic_id in names.items()
            ),
            reverse=True,
        )
        best = ranked[0][0] if ranked else 0.0
        found: list[str] = []
        for ratio, topic_id in ranked:
            if ratio >= 0.5 and ratio >= best - 0.1 and topic_id not in found:
                found.append(topic_id)
        return found[:n]


def _parse_topic(raw: Mapping[str, Any], index: int) -> Topic:
    where = f"topic #{index + 1}"
    try:
        topic_id = str(raw["id"])
        label = str(raw["label"])
        description = str(raw["description"])
        terms = raw["terms"]
    except KeyError as exc:
        raise CatalogError(f"{where} has no {exc.args[0]!r}") from None
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", topic_id):
        raise CatalogError(f"{where}: id {topic_id!r} must be a lowercase slug like 'offline-rl'")
    if not isinstance(terms, Mapping) or not terms:
        raise CatalogError(f"topic {topic_id!r} needs a [topics.terms] table of phrase = weight")
    parsed = []
    for phrase, weight in terms.items():
        if not _positive(weight):
            raise CatalogError(f"topic {topic_id!r}: term {phrase!r} needs a positive weight")
        parsed.append(Term.of(phrase, weight))
    aliases = tuple(str(alias) for alias in raw.get("aliases", ()))
    threshold = raw.get("threshold")
    if threshold is not None and not _positive(threshold):
        raise CatalogError(f"topic {topic_id!r}: threshold must be a positive number")
    return Topic(
        topic_id,
        label,
        description,
        tuple(parsed),
        aliases,
        threshold=None if threshold is None else float(threshold),
    )


def _positive(value: object) -> bool:
    """A finite number above 0 (TOML has nan and inf)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _with_models(
    topics: tuple[Topic, ...], threshold: float, models_path: Path
) -> tuple[Topic, ...]:
    """Each topic with its learned terms (`models_path`, if there) and scaled to its own
    line: a topic's model line, else its `threshold`, else the catalog's."""
    models = load_models(models_path)
    unknown = sorted(set(models) - {topic.id for topic in topics})
    if unknown:
        warn_once("%s: models of topics the catalog does not have: %s", models_path, unknown)
    result = []
    for topic in topics:
        model = models.get(topic.id)
        if model is not None and model.hand_terms != hand_key(topic.terms):
            # Its mix and line were fitted to other hand terms: wrong, not just stale.
            warn_once(
                "%s: topic %r's hand terms changed since its model was learned: hand terms "
                "only until `python3 -m bench.train_topics` learns it again",
                models_path,
                topic.id,
            )
            model = None
        line = model.threshold if model else topic.threshold
        if line is None:
            result.append(topic)
            continue
        terms = combine(topic.terms, model, line, threshold)
        hand = [t.phrase for t in topic.terms]
        learned = sorted(model.terms if model else (), key=lambda t: -t.weight)
        strongest = [t.phrase for t in learned if t.phrase not in hand][:SEARCH_LEARNED]
        searched = dict.fromkeys([*hand, *strongest])
        result.append(replace(topic, terms=terms, threshold=line, searched=tuple(searched)))
    return tuple(result)


def load_catalog(path: Path | None = None, *, learned: bool = True) -> Catalog:
    """Read and check the catalog (the bundled one unless `path` is given), with the
    learned models beside it unless `learned` is False (the hand terms alone: what
    bench/train_topics.py learns from)."""
    source = path or catalog_path()
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{source}: {exc}") from None
    topics = tuple(_parse_topic(raw, i) for i, raw in enumerate(data.get("topics", [])))
    ids = [topic.id for topic in topics]
    duplicates = sorted({topic_id for topic_id in ids if ids.count(topic_id) > 1})
    if duplicates:
        raise CatalogError(f"{source}: duplicate topic ids {', '.join(duplicates)}")
    if not topics:
        raise CatalogError(f"{source}: no [[topics]]")
    line = data.get("threshold", 4.0)
    if not _positive(line):
        raise CatalogError(f"{source}: threshold must be a positive number, not {line!r}")
    threshold = float(line)
    # The learned models sit beside the catalog (config/topic_models.toml): a catalog
    # read from elsewhere (a test's) has its own or none.
    if learned:
        topics = _with_models(topics, threshold, source.with_name(MODELS_FILE))
    return Catalog(topics, threshold)


CUSTOM_TOPICS_KEPT = 4096  # free-text topics remembered (`stored_custom_topic`)


def custom_slug(text: str) -> str:
    """`custom:diffusion-policy`; a long text keeps a hash of the whole so that two
    texts sharing their first 60 characters stay two topics."""
    slug = "-".join(re.findall(r"[^\W_]+", text.casefold()))
    if len(slug) > 60:
        digest = hashlib.sha256(slug.encode("utf-8")).hexdigest()[:8]
        slug = f"{slug[:51]}-{digest}"
    return CUSTOM_PREFIX + slug


def custom_topic(text: str, catalog: Catalog | None = None) -> Topic:
    """A topic for free text: the whole phrase weighs most, then its telling words.

    One mention of the phrase plus its words clears the catalog threshold; its words
    alone need many mentions, and generic words ("learning") count only inside the
    phrase. Text made only of one catalog topic's names and glue words ("continual
    learning and catastrophic forgetting") also carries that topic's terms (`based_on`
    names it). `catalog` is the bundled one unless given.
    """
    cleaned = " ".join(text.split())
    own = _own_terms(cleaned)
    terms = {term.phrase: term for term in own}
    based_on = _named_topics(cleaned, catalog or bundled_catalog())
    for topic in based_on:
        for term in topic.terms:
            if term.phrase not in terms or terms[term.phrase].weight < term.weight:
                terms[term.phrase] = term
    # A followed catalog topic's terms score, and its `search_phrases` are searched for
    # (not all its learned terms), with the text's own phrases.
    searched = dict.fromkeys(
        [*(t.phrase for t in own), *(p for topic in based_on for p in topic.search_phrases)]
    )
    return Topic(
        id=custom_slug(cleaned),
        label=f'"{cleaned}"',
        description=f'Papers about "{cleaned}"',
        terms=tuple(terms.values()),
        custom_text=cleaned,
        based_on=tuple(topic.id for topic in based_on),
        searched=tuple(searched) if based_on else (),
    )


def _own_terms(cleaned: str) -> list[Term]:
    """The free text's own terms: the phrase, its word pairs (for three words or more:
    for two, the pair is the phrase) and its telling words, the phrase's weight kept."""
    words = [word for word in normalise(cleaned).split() if word]
    content = [word for word in dict.fromkeys(words) if word not in _GLUE_WORDS]
    telling = [word for word in content if word not in _GENERIC_WORDS]
    # Two words are their own word pair, so the phrase weighs both (3.0 + 1.0): one
    # mention of it, with its telling word, clears the threshold.
    terms = [Term.of(cleaned, 4.0 if len(words) == 2 else 3.0)]
    if len(words) > 2:
        terms += [Term.of(f"{a} {b}", 1.0) for a, b in itertools.pairwise(words)]
    if len(words) > 1:
        # The words share 2.0 with the phrase's other content words ("policy" in
        # "diffusion policy" has no term of its own, but "diffusion" is half the topic).
        share = 2.0 / max(len(content), 1)
        terms += [Term.of(word, max(share, 0.5)) for word in telling]
    kept: dict[str, Term] = {}
    for term in terms:  # the first (heaviest) use of a phrase wins
        kept.setdefault(term.phrase, term)
    return list(kept.values())


def _named_topics(cleaned: str, catalog: Catalog) -> tuple[Topic, ...]:
    """The one catalog topic whose names, with glue words, make up all of `cleaned`;
    () when the text has other words ("diffusion policy") or names several topics
    (their union would follow either, where the text likely means both at once)."""
    words = normalise(cleaned).split()
    names = catalog.name_index
    longest = max((len(name) for name in names), default=0)
    found: list[str] = []
    position = 0
    while position < len(words):
        for size in range(min(longest, len(words) - position), 0, -1):
            topic_id = names.get(tuple(words[position : position + size]))
            if topic_id is not None:
                found.append(topic_id)
                position += size
                break
        else:
            if words[position] not in _GLUE_WORDS:
                return ()
            position += 1
    ids = set(found)
    topic = catalog.get(found[0]) if len(ids) == 1 else None
    return (topic,) if topic is not None else ()


@functools.lru_cache(maxsize=CUSTOM_TOPICS_KEPT)
def stored_custom_topic(text: str) -> Topic:
    """`custom_topic(text)` against the bundled catalog, made once per text: a batch of
    channels reads many free-text subscriptions, most of them shared texts. A Topic is
    frozen, so sharing one is safe."""
    return custom_topic(text)


@functools.lru_cache(maxsize=1)
def bundled_catalog() -> Catalog:
    """The bundled catalog, read once: custom topics are rebuilt from their text."""
    return load_catalog()
