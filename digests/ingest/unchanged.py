"""Spot records that are already stored, before any enrichment (deriving titles again is
most of the cost of re-ingesting unchanged papers).

A record is *absorbed* when merging it again could change nothing: every field but the
derived method names compared directly, and those vouched for by the same abstract with
a still-derived title (and no title here) or this very title. Anything else takes the full
path (enrich, then merge in the transaction).
"""

from __future__ import annotations

import logging
from typing import Any

from db import papers
from db.store import Store
from digests.enrich.links import classify
from digests.enrich.paper import clean_title, other_page
from digests.identity import fingerprint_hash
from digests.ingest.ids import stored_under_id
from digests.records import PaperRecord

log = logging.getLogger(__name__)


def _empty(value: Any) -> bool:
    return value in (None, "")


def is_absorbed(db: Store, record: PaperRecord, fingerprint: str | None = None) -> bool:
    """True when the store already holds everything `record` would bring (reads only).
    `fingerprint`: the abstract's `fingerprint_hash`, if the caller has it already."""
    target = papers.paper_id_for_alias(db, record.external_id) if record.external_id else None
    if target:
        stored = papers.get_paper(db, target)
    else:  # under its id, or the one a collision sent it to, or its legacy id (`ids`)
        fingerprint = fingerprint or fingerprint_hash(record.abstract)
        stored = stored_under_id(db, fingerprint, record.authors, warn=False)
    if stored is None or stored["abstract"] != record.abstract:
        return False
    if record.external_id and target != stored["id"]:
        return False
    title = clean_title(record.title)
    if title is None:
        if not stored["title_derived"]:
            return False
    elif stored["title_derived"] or stored["title"] != title:
        return False
    for column, value in (("venue", record.venue), ("year", record.year), ("url", record.url)):
        if not _empty(value) and _empty(stored.get(column)):
            return False
    if stored.get("venue") == "arXiv" and record.venue not in (None, "", "arXiv"):
        return False  # a venue beats "arXiv" (merge_rows)
    if (record.venue or "").startswith(f"{stored.get('venue')} "):
        return False  # a more precise label: "ICLR 2025 Oral" over "ICLR 2025" (merge_rows)
    if record.url:
        kind = classify(record.url)
        if kind in ("arxiv", "openreview") and _empty(stored.get(f"{kind}_url")):
            return False
        if other_page(stored, record.url):
            return False  # another page of it, kept among its links (merge_rows)
    if record.source not in stored["sources"]:
        return False
    return set(record.keywords) <= set(stored["keywords"]) and set(record.authors) <= set(
        stored["authors"]
    )
