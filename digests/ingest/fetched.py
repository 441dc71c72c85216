"""Store papers fetched from sources (arXiv, OpenReview, feeds): one page at a time.

`prepare_page` enriches a page outside any transaction; `store_page` writes it in one short
write transaction, merging each paper into the one stored (`pipeline.find_paper`), and skips
(logged) a paper holding a secret or over the size limit. A stored paper's `seen:HASH` alias
(`content_key`) lets the next fetch of the very same content skip it (`known_unchanged`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from db import papers as paper_store
from db.store import Store
from digests.enrich.paper import Row
from digests.identity import title_key
from digests.ingest.decode import Limits
from digests.ingest.errors import IngestError
from digests.ingest.pipeline import IngestSummary, backfill_title_keys, prepare, store_row
from digests.ingest.secrets import refuse_secrets
from digests.safe_text import strip_unsafe
from digests.safe_url import safe_url
from digests.sources.records import FetchedPaper, to_paper_record
from digests.timestamps import stamp

log = logging.getLogger(__name__)


@dataclass
class PreparedPaper:
    row: Row
    external_ids: list[str]
    seen: str | None = None  # the content's alias (`content_key`)


def content_key(paper: FetchedPaper) -> str:
    """`seen:` and a hash of everything the paper brings but its last-modified date (a
    note touched without a change brings nothing new)."""
    fields = dataclasses.asdict(paper)
    fields.pop("updated", None)
    text = json.dumps(fields, default=str, sort_keys=True, ensure_ascii=False)
    return "seen:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def known_unchanged(db: Store, paper: FetchedPaper) -> bool:
    """Whether this very content was stored already, into the paper its external id
    names (a read; no enrichment needed to tell)."""
    ids = paper.external_ids()
    if not ids:
        return False
    seen = paper_store.paper_id_for_alias(db, content_key(paper))
    return seen is not None and seen == paper_store.paper_id_for_alias(db, ids[0])


def _size(paper: FetchedPaper) -> int:
    texts = [paper.title, paper.abstract, paper.comment, paper.journal_ref, paper.tldr]
    texts += paper.authors + paper.keywords + paper.categories
    texts += [a for group in paper.affiliations for a in group]
    return sum(len(text) for text in texts if text)


def fetched_row(paper: FetchedPaper, now: datetime, limits: Limits | None = None) -> Row | None:
    """The paper row for a fetched paper (enriched like an ingested one, plus what only
    sources give: PDF link, DOI, dates, arXiv version, the authors' TL;DR), or None when
    it has nothing to store. Raises IngestError for a secret or an oversized paper."""
    limits = limits or Limits()
    record = to_paper_record(paper)
    if record is None:
        return None
    if _size(paper) > limits.max_record_chars:
        raise IngestError(paper.source, None, limits.too_long("a paper", _size(paper)))
    texts = [paper.title, paper.abstract, paper.comment, paper.journal_ref, paper.tldr]
    refuse_secrets([*texts, *paper.authors, *paper.keywords], paper.source, 0)
    row = prepare(record, now, paper.source)
    if row is None:
        return None
    if paper.tldr and paper.tldr.strip():
        row["tldr"], row["tldr_source"] = strip_unsafe(paper.tldr).strip(), "authors"
    row["title_key"] = title_key(row["title"]) if not row["title_derived"] else ""
    row["title_key"] = row["title_key"] or ""
    row["pdf_url"] = safe_url(paper.pdf_url) if paper.pdf_url else None
    row["code_url"] = row["code_url"] or (safe_url(paper.code_url) if paper.code_url else None)
    row["doi"] = paper.doi
    row["journal_ref"] = paper.journal_ref
    row["comment"] = paper.comment
    row["categories"] = list(paper.categories)
    row["affiliations"] = [list(group) for group in paper.affiliations]
    row["arxiv_version"] = paper.arxiv_version
    # A date after `now` (a feed's typo, a server or host clock off) is taken as `now`:
    # stored as it is, it would stay "new" in every digest until that day came.
    row["published_at"] = stamp(min(paper.published, now)) if paper.published else None
    row["revised_at"] = stamp(min(paper.updated, now)) if paper.updated else None
    if paper.arxiv_id and not row.get("arxiv_url"):
        row["arxiv_url"] = f"https://arxiv.org/abs/{paper.arxiv_id}"
    return row


def prepare_page(
    papers: Sequence[FetchedPaper], now: datetime, limits: Limits | None = None
) -> tuple[list[PreparedPaper], int]:
    """Rows for a page's papers, and how many were skipped (nothing to store, a secret,
    over the size limit). Pure: no database, so it runs before the transaction."""
    prepared: list[PreparedPaper] = []
    skipped = 0
    for paper in papers:
        try:
            row = fetched_row(paper, now, limits)
        except IngestError as exc:
            log.warning("%s: a paper skipped: %s", paper.source, exc)
            skipped += 1
            continue
        if row is None:
            skipped += 1
            continue
        ids = paper.external_ids()
        prepared.append(PreparedPaper(row, ids, content_key(paper) if ids else None))
    return prepared, skipped


def store_page(db: Store, prepared: Sequence[PreparedPaper], now: datetime) -> IngestSummary:
    """Store one page's prepared papers in one write transaction (all or nothing)."""
    summary = IngestSummary()
    with db.write():
        backfill_title_keys(db)
        for item in prepared:
            paper = store_row(db, item.row, item.external_ids, now, summary)
            if item.seen:
                paper_store.add_alias(db, item.seen, paper)
    return summary
