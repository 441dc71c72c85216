"""What a fetch yields (`FetchPage`) and reports when done (`FetchResult`), and the
resume contract shared by every fetcher.

The contract, so that a fetch killed midway (kill -9) leaves no duplicates and no gaps:
- A fetch yields pages; the caller stores each page before asking for the next one
  (merging on `FetchedPaper.external_ids()`: arXiv id without version, OpenReview id,
  DOI). Re-storing a paper already stored merges into it, so overlapping or repeated
  pages never duplicate: this is what makes a re-fetch after a crash safe.
- The caller advances the source's cursor (`FetchResult.cursor`) only after the fetch
  finished with `complete=True`. A killed or failed fetch leaves the old cursor, so the
  next fetch starts from the same `since` and covers the whole window again: no gap.
- arXiv is read newest first (by submission date) and stops at the first entry older
  than `since`. Papers announced while paging push older ones down a page, which repeats
  an entry (merged), never skips one. arXiv announces papers a day or more after their
  submission date, and a held paper later still: `next_arxiv_since()` therefore
  starts the next fetch `ARXIV_OVERLAP` before the newest submission date seen.
- OpenReview and feeds are read whole every time (a venue's notes, a feed's entries).
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
