"""A topic: what a digest follows, as weighted terms a paper is scored by."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from digests.matching import PaperText, Term, score

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Topic:
    """A catalog topic or a channel's free text: an id (`offline-rl`), a label, a
    description, aliases users may type, and terms `digests.matching.score` counts."""

    id: str
    label: str
    description: str
    terms: tuple[Term, ...]
    aliases: tuple[str, ...] = ()
    custom_text: str | None = None
    based_on: tuple[str, ...] = ()  # catalog topics a custom topic's text names
    # The topic's own line, before its terms were scaled to the catalog's threshold
    # (`digests.topic_model`): None for the catalog's one line.
    threshold: float | None = None
    # What a full-text search asks for when not all its terms (`search_phrases`).
    searched: tuple[str, ...] = ()

    @property
    def is_custom(self) -> bool:
        return self.custom_text is not None

    def score(self, paper: PaperText) -> float:
        return score(paper, self.terms)

    @property
    def search_phrases(self) -> tuple[str, ...]:
        """The phrases a full-text search for the topic's papers (the digest's archive)
        asks for: a learned topic's hand terms and its strongest learned ones
        (`digests.topics.SEARCH_LEARNED`; the weakest match most of a store), else all."""
        return self.searched or tuple(term.phrase for term in self.terms)
