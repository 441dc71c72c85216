"""The errors of the sources package: each one line, naming what was wrong."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class SourceError(ValueError):
    """A source name that cannot be used (`paperboy sources add` shows it as is)."""


class ParseError(ValueError):
    """An answer (arXiv page, OpenReview JSON, feed) that is not what it should be.

    The message is one line without the source name; the fetcher adds it. A fetcher
    treats a ParseError as a possibly transient malformed page and retries (bounded)."""


class NotAFeedError(ParseError):
    """A page that is no RSS or Atom feed at all (an HTML page, say): never retried."""


class ArxivAPIError(ParseError):
    """arXiv's error feed: an entry whose id is `http://arxiv.org/api/errors#...`.

    This is arXiv refusing the query (a malformed search), so it is not retried."""
