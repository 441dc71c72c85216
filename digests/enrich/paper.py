"""Turn a PaperRecord into a stored paper row, and merge a row into an existing one."""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

from digests.enrich.links import classify, code_url, extract_links
from digests.enrich.text import name_key, plain_text, split_camel
from digests.enrich.titles import derive, is_name_like
from digests.identity import paper_id
from digests.records import PaperRecord
from digests.timestamps import stamp

log = logging.getLogger(__name__)

Row = dict[str, Any]


def _title_prefix_name(title: str) -> str | None:
    """ "MaxEntDP: ..." -> "MaxEntDP": titles often lead with the method's name."""
    head, colon, _ = title.partition(":")
    head = head.strip()
    return head if colon and is_name_like(head) else None


def _names(method: str | None, long_name: str | None) -> tuple[str, str]:
    """The searchable forms of a method's name, and their normalised keys."""
    forms: list[str] = []
    keys: list[str] = []
    for name in (method, long_name):
        if not name:
            continue
        for form in (name, split_camel(name)):
            if form not in forms:
                forms.append(form)
        if name_key(name) not in keys:
            keys.append(name_key(name))
    forms.extend(key for key in keys if key not in forms)
    return " ".join(forms), " ".join(keys)


def clean_title(title: str | None) -> str | None:
    """A source's title as stored: plain text, single-spaced; None when empty."""
    return (re.sub(r"\s+", " ", plain_text(title)) or None) if title else None


def build_row(record: PaperRecord, now: datetime) -> Row:
    """The paper row for a record: id, derived title and TL;DR, sorted links."""
    derived = derive(record.abstract)
    title = clean_title(record.title)
    method = (_title_prefix_name(title) if title else None) or derived.method
    long_name = derived.long_name if method == derived.method else None
    names, name_keys = _names(method, long_name)
    links = extract_links(record.abstract)
    url_kind = classify(record.url) if record.url else None
    at = stamp(now)
    return {
        "id": paper_id(record.abstract),
        "venue": record.venue,
        "year": record.year,
        "title": title or derived.title,
        "title_derived": 0 if title else 1,
        "method": method,
        "names": names,
        "name_keys": name_keys,
        "tldr": derived.tldr,
        "abstract": record.abstract,
        "abstract_text": plain_text(record.abstract),
        "url": record.url,
        "code_url": code_url(links),
        "arxiv_url": record.url if url_kind == "arxiv" else None,
        "openreview_url": record.url if url_kind == "openreview" else None,
        "links": [{"url": link.url, "kind": link.kind, "text": link.text} for link in links],
        "keywords": list(record.keywords),
        "authors": list(record.authors),
        "sources": [record.source],
        "added_at": at,
        "updated_at": at,
    }


def _union(old: list[Any], new: list[Any]) -> list[Any]:
    merged = list(old)
    merged.extend(item for item in new if item not in merged)
    return merged


def merge_rows(existing: Row, incoming: Row, now: datetime) -> Row | None:
    """The changes that `incoming` brings to `existing`, or None when it brings nothing.

    A real title replaces a derived one; empty fields are filled; lists are united.
    Nothing already known is overwritten, so no data is lost.
    """
    changes: Row = {}
    if existing["title_derived"] and not incoming["title_derived"]:
        changes["title"] = incoming["title"]
        changes["title_derived"] = 0
    for column in ("venue", "year", "url", "code_url", "arxiv_url", "openreview_url", "method"):
        if existing.get(column) in (None, "") and incoming.get(column) not in (None, ""):
            changes[column] = incoming[column]
    for column in ("names", "name_keys"):
        words = _union((existing.get(column) or "").split(), (incoming[column] or "").split())
        if words != (existing.get(column) or "").split():
            changes[column] = " ".join(words)
    for column in ("links", "keywords", "authors", "sources"):
        if column == "links":
            known = {link["url"] for link in existing["links"]}
            extra = [link for link in incoming["links"] if link["url"] not in known]
            if extra:
                changes["links"] = existing["links"] + extra
        else:
            united = _union(existing[column], incoming[column])
            if united != existing[column]:
                changes[column] = united
    if not changes:
        return None
    changes["updated_at"] = stamp(now)
    return changes
