"""What a fetch yields (`FetchPage`) and reports when done (`FetchResult`), and the
resume contract every fetcher keeps: a fetch killed midway leaves no duplicates, no gaps.

The caller stores each page before asking for the next (a paper stored again merges on
`external_ids()`), and advances the cursor only after `complete=True`, so the next fetch
covers the whole window again. arXiv is read newest first and resumes `ARXIV_OVERLAP`
before the newest submission date seen (`next_arxiv_since`); OpenReview and feeds whole.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from digests.sources.records import FetchedPaper

log = logging.getLogger(__name__)

ARXIV_OVERLAP = timedelta(days=3)  # a weekend of announcements, plus holds
FIRST_FETCH = timedelta(days=7)


@dataclass
class FetchPage:
    """One page of new papers, in the source's order. `number` counts from 0."""

    source: str
    number: int
    papers: list[FetchedPaper]


@dataclass
class FetchResult:
    """How a fetch ended, set when its pages are exhausted.

    `complete`: every page up to `since` (arXiv) or `count` (OpenReview) was read, or the
    feed was read; only then may the caller advance the cursor. `cursor`: the newest
    publication date seen (arXiv), or the newest modification (OpenReview, feeds); None
    when nothing was seen. `not_modified`: the feed answered 304 to the conditional GET;
    `etag`/`last_modified` are the validators to send next time (store them).
    """

    source: str
    complete: bool = False
    read: int = 0
    pages: int = 0
    requests: int = 0
    cursor: datetime | None = None
    etag: str | None = None
    last_modified: str | None = None
    not_modified: bool = False
    notes: list[str] = field(default_factory=list)  # why incomplete, one line each


def next_arxiv_since(
    cursor: datetime | None, now: datetime, since: datetime | None = None
) -> datetime:
    """Where an arXiv fetch starts: `since` when given (`paperboy fetch --since`), else
    `ARXIV_OVERLAP` before the stored cursor, else `FIRST_FETCH` before `now`."""
    if since is not None:
        return since
    if cursor is not None:
        return cursor - ARXIV_OVERLAP
    return now - FIRST_FETCH


def newest(current: datetime | None, *moments: datetime | None) -> datetime | None:
    """The latest of `current` and `moments`, ignoring None."""
    known = [m for m in (current, *moments) if m is not None]
    return max(known) if known else None
