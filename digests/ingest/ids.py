"""The stored paper an abstract is, by its id, checked by its fingerprint.

An id match is the same paper only when the fingerprints agree (the `fingerprint` column,
or the stored abstract's); a legacy 10-digit id whose abstract was replaced takes the
author rule (`_plausible`, logged). A collision is never merged into: the new paper takes
the first free id of its probe sequence. Code that inserts new papers itself
(`bulk.store_chunk`) must use `own_id`, and only when no paper, even one `new_id` gave out
in the same transaction, holds that id. A merged abstract is found again by its `fp:` alias.
"""

from __future__ import annotations

import logging

from db import papers
from db.store import Store
from digests.enrich.paper import Row
from digests.identity import LEGACY_HEX_DIGITS, fingerprint_hash, legacy_id, probe_ids, surnames
from digests.ingest.errors import IngestError

log = logging.getLogger(__name__)

FINGERPRINT_ALIAS = "fp:"  # the alias an abstract merged into another paper leaves


def same_fingerprint(stored: Row, fingerprint: str) -> bool | None:
    """Whether `stored` is the paper with this fingerprint hash: True, False, or None when
    it cannot be told (a legacy row whose abstract was replaced since it got its id)."""
    if stored.get("fingerprint"):
        return bool(stored["fingerprint"] == fingerprint)
    own = fingerprint_hash(str(stored.get("abstract") or ""))
    if own == fingerprint:
        return True
    if legacy_id(own) == stored["id"] or len(stored["id"]) != 1 + LEGACY_HEX_DIGITS:
        return False  # its abstract still gives its id: a different paper
    return None


def _plausible(stored: Row, authors: list[str]) -> bool:
    """For a match that no fingerprint can confirm: the papers share an author surname,
    or one side names no authors (nothing contradicts it)."""
    ours, theirs = surnames(authors), surnames(list(stored.get("authors") or []))
    return not ours or not theirs or bool(ours & theirs)


def locate(db: Store, fingerprint: str) -> Row | None:
    """The paper stored with `fingerprint` on its probe sequence, walked up to the first
    free id (reads only)."""
    for candidate in probe_ids(fingerprint):
        stored = papers.get_paper(db, candidate)
        if stored is None:
            return None
        if same_fingerprint(stored, fingerprint):
            return stored
    return None


def stored_under_id(
    db: Store, fingerprint: str, authors: list[str], *, warn: bool = True
) -> Row | None:
    """The paper stored under an id of this fingerprint: its probe sequence, then its
    legacy 10-digit id (reads only). `authors`: the incoming record's, for legacy rows
    that cannot be checked. `warn`: log what only the author rule decided, and a legacy
    id held by a different paper (off for a look before enrichment: the store that
    follows says it once)."""
    found = locate(db, fingerprint)
    if found is not None:
        return found
    old = legacy_id(fingerprint)
    return _legacy_match(papers.get_paper(db, old), fingerprint, authors, warn=warn)


def _legacy_match(
    stored: Row | None, fingerprint: str, authors: list[str], *, warn: bool
) -> Row | None:
    """`stored` (the row under this fingerprint's legacy id, if any) if it is this paper:
    by its stored abstract, or, when that was replaced, by the author rule (logged)."""
    if stored is None:
        return None
    same = same_fingerprint(stored, fingerprint)
    if same:
        return stored
    if same is None and _plausible(stored, authors):
        if warn:  # 40 bits and an author rule: likely, not certain; never silent
            log.warning(
                "paper id %s: its abstract was replaced since it got that id, so only the "
                "id (40 bits) and the authors say this abstract is that paper: merged into it",
                stored["id"],
            )
        return stored
    if warn:
        log.warning(
            "paper id %s is held by a paper with a different abstract: not merged", stored["id"]
        )
    return None


def find_by_fingerprint(db: Store, fingerprint: str, authors: list[str]) -> Row | None:
    """The stored paper with this fingerprint: under its probe sequence or its legacy id
    when the fingerprint confirms it, else the paper it was merged into (its `fp:` alias,
    128 bits), else what only the author rule accepts: a legacy row whose abstract was
    replaced, or a legacy id alias (both logged; the merge then leaves the `fp:` alias,
    so the next lookup of this abstract is certain and silent)."""
    found = locate(db, fingerprint)
    if found is not None:
        return found
    old = legacy_id(fingerprint)
    legacy = papers.get_paper(db, old)
    if legacy is not None and same_fingerprint(legacy, fingerprint):
        return legacy
    target = papers.paper_id_for_alias(db, FINGERPRINT_ALIAS + fingerprint)
    if target:
        return papers.get_paper(db, target)
    found = _legacy_match(legacy, fingerprint, authors, warn=True)
    if found is not None:
        return found
    target = papers.paper_id_for_alias(db, old)
    stored = papers.get_paper(db, target) if target else None
    if stored is None:
        return None
    if same_fingerprint(stored, fingerprint):
        return stored  # the abstract the alias was made from is the paper's abstract now
    if _plausible(stored, authors):
        log.warning(
            "paper id %s was merged into %s by an older Paperboy: only the id (40 bits) and the "
            "authors say this abstract is that paper's: merged into it",
            old,
            target,
        )
        return stored
    log.warning(
        "paper id %s was merged into %s, whose authors are all different: not merged", old, target
    )
    return None


def new_id(db: Store, fingerprint: str, source: str) -> str:
    """The id a new paper with this fingerprint is stored under: its own, or the first
    free one of its probe sequence when another paper holds it (one warning naming both):
    a collision, or a paper with the same abstract that `find_paper` ruled is another
    paper (another arXiv id). Raises IngestError when every id of the sequence is taken
    (never at 64 bits)."""
    taken: list[Row] = []
    for candidate in probe_ids(fingerprint):
        holder = papers.get_paper(db, candidate)
        if holder is not None:
            taken.append(holder)
            continue
        if taken:
            same = same_fingerprint(taken[0], fingerprint)
            log.warning(
                "paper id %s is held by %s: stored this one as %s",
                taken[0]["id"],
                "another paper with the same abstract"
                if same
                else "a paper with a different abstract",
                candidate,
            )
        return candidate
    raise IngestError(source, None, f"no free paper id after {len(taken)} tries")
