"""Turn a PaperRecord into a stored paper row, and merge a row into an existing one."""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

from digests.enrich.links import classify, code_url, extract_links
from digests.enrich.titles import derive, is_name_like
from digests.identity import fingerprint_hash, own_id, title_key
from digests.records import PaperRecord
from digests.text import name_key, plain_text, split_camel
from digests.timestamps import stamp

log = logging.getLogger(__name__)

Row = dict[str, Any]


def title_prefix_name(title: str) -> str | None:
    """ "MaxEntDP: ..." -> "MaxEntDP": titles often lead with the method's name."""
    head, colon, _ = title.partition(":")
    head = head.strip()
    return head if colon and is_name_like(head) else None


def method_names(method: str | None, long_name: str | None) -> tuple[str, str]:
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


_WHITESPACE = re.compile(r"\s+")  # compiled once: every paper's title


def clean_title(title: str | None) -> str | None:
    """A source's title as stored: plain text, single-spaced; None when empty."""
    return (_WHITESPACE.sub(" ", plain_text(title)) or None) if title else None


def build_row(record: PaperRecord, now: datetime, fingerprint: str | None = None) -> Row:
    """The paper row for a record: id and fingerprint hash (`fingerprint`, if the caller
    has it already), derived TL;DR (and title, when the record has none), sorted links."""
    title = clean_title(record.title)
    derived = derive(record.abstract, titled=title is not None)
    method = (title_prefix_name(title) if title else None) or derived.method
    long_name = derived.long_name if method == derived.method else None
    names, name_keys = method_names(method, long_name)
    links = extract_links(record.abstract)
    url_kind = classify(record.url) if record.url else None
    at = stamp(now)
    fingerprint = fingerprint or fingerprint_hash(record.abstract)
    return {
        "id": own_id(fingerprint),  # identity.paper_id, hashed once
        "fingerprint": fingerprint,
        "venue": record.venue,
        "year": record.year,
        "title": title or derived.title,
        "title_derived": 0 if title else 1,
        "title_key": title_key(title) or "",  # "": no key (NULL: not keyed yet)
        "method": method,
        "names": names,
        "name_keys": name_keys,
        "tldr": derived.tldr,
        "tldr_source": "derived" if derived.tldr else None,
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


NOT_A_VENUE = (None, "", "arXiv")  # "arXiv" says only where a preprint is
# Filled when empty, never overwritten (unless a newer arXiv version brings them).
FILLED = (
    "year", "url", "code_url", "arxiv_url", "openreview_url", "method", "pdf_url", "doi",
    "journal_ref", "comment", "arxiv_version", "tldr", "tldr_source",
)  # fmt: skip
# A newer arXiv version replaces these (the paper's text as its authors last revised it).
REVISED = ("abstract", "abstract_text", "arxiv_version", "pdf_url", "comment", "journal_ref", "doi")


def _newer_version(existing: Row, incoming: Row) -> bool:
    old, new = existing.get("arxiv_version"), incoming.get("arxiv_version")
    return old is not None and new is not None and int(new) > int(old)


# What a merge keeps up to date without a reader seeing a difference: where the paper
# came from, its dates, the stamp. (A new name of its method is news: `find` finds it.)
BOOKKEEPING = frozenset({"sources", "published_at", "revised_at", "updated_at"})


def brings_news(changes: Row | None) -> bool:
    """Whether `merge_rows`' changes give the stored paper something a reader can see or
    search: a real title, a venue, an author, a link (another source's page too), a name
    of its method, a TL;DR, a newer or completed abstract, a field it lacked. False when
    they are only `BOOKKEEPING` (the same paper from one more source or file): that
    record is "already stored", not "merged"."""
    return any(column not in BOOKKEEPING for column in changes or {})


# Other sources' pages kept per paper: a feed whose links change on every fetch (a
# tracking query) must not grow a paper's links for ever.
MAX_OTHER_PAGES = 5


def other_page(existing: Row, url: str | None) -> bool:
    """Whether `url` (a record's own page) is a page of the stored paper that it does not
    show yet: not its `url`, PDF or code link, nor one of its `links`, while it keeps
    fewer than `MAX_OTHER_PAGES` pages of other sources. An empty stored `url` is filled
    instead (`FILLED`)."""
    if not url or existing.get("url") in (None, ""):
        return False
    abstract = str(existing.get("abstract") or "")
    pages = [
        link
        for link in existing.get("links") or []
        if link.get("text") == "" and link["url"] not in abstract  # not one the abstract gives
    ]
    if len(pages) >= MAX_OTHER_PAGES:
        return False
    known = {existing.get("url"), existing.get("pdf_url"), existing.get("code_url")}
    return url not in known and all(link["url"] != url for link in existing.get("links") or [])


def page_link(url: str) -> dict[str, str]:
    """The `links` entry for another source's page of the paper: its kind ("arxiv",
    "openreview", "code"), else "page" (a proceedings or publisher's page)."""
    kind = classify(url)
    return {"url": url, "kind": "page" if kind == "project" else kind, "text": ""}


_CUT = re.compile(r"\s*(?:\.\.\.|…|\[(?:\.\.\.|…)\])$")  # how a cut abstract often ends
# A cut abstract's head must say enough that another text starting with it is the same
# paper's ("In this paper, we propose a new…" is the start of thousands).
MIN_CUT_HEAD = 60


def _abstract_words(row: Row) -> str:
    text = row.get("abstract_text") or plain_text(str(row.get("abstract") or ""))
    return " ".join(str(text).split())


def _extends(longer: str, shorter: str, *, cut: bool = False) -> bool:
    """Whether `longer` is `shorter` made whole: it starts with `shorter`'s text (a
    trailing "...", "…" or "[…]" cut) and goes on. With `cut`, only when `shorter` ends
    so and its head has `MIN_CUT_HEAD` characters: text added to a whole abstract, or a
    short head, is no completion."""
    head = _CUT.sub("", shorter)
    if cut and (head == shorter or len(head) < MIN_CUT_HEAD):
        return False
    return bool(head) and len(longer) > len(shorter) and longer.startswith(head)


def completes_abstract(existing: Row, incoming: Row) -> bool:
    """Whether `incoming`'s abstract is the stored one, cut short there, given whole (a
    list that truncates abstracts, then the full one). Only for a paper whose
    fingerprint is stored (its id and fingerprint stay those of the first abstract), and
    not over an arXiv version's abstract from a record of another or no version: its
    authors may have shortened it (a newer version replaces it: `REVISED`)."""
    if not existing.get("fingerprint"):
        return False
    version = existing.get("arxiv_version")
    if version is not None and incoming.get("arxiv_version") != version:
        return False
    return _extends(_abstract_words(incoming), _abstract_words(existing), cut=True)


def abstract_set_aside(existing: Row, incoming: Row, changes: Row | None) -> bool:
    """Whether `incoming` brought an abstract other than the stored paper's that
    `changes` (from `merge_rows`) do not take: the stored one stays, this one is not
    stored. Not when it is the same text, the stored one cut short, or an older arXiv
    version's (superseded, not lost)."""
    if (changes and "abstract" in changes) or _newer_version(incoming, existing):
        return False
    if incoming.get("fingerprint") and incoming["fingerprint"] == existing.get("fingerprint"):
        return False
    new, old = _abstract_words(incoming), _abstract_words(existing)
    return new != old and not _extends(old, new)


def merge_rows(existing: Row, incoming: Row, now: datetime) -> Row | None:
    """The changes that `incoming` brings to `existing`, or None when it brings nothing.

    The best of each field is kept: a real title over a derived one; the
    authors' TL;DR (`tldr_source` "authors", from OpenReview) over a derived one; a venue
    over none or "arXiv", and a more precise label of it ("ICLR 2025 Oral" over "ICLR
    2025"); a newer arXiv version's abstract, title and links over an
    older's (the paper stays the same paper: `added_at` never changes); the whole
    abstract over the same one cut short (`completes_abstract`). Empty fields are
    filled, lists united, another source's page added to `links` (`other_page`), the
    earliest publication date and the latest revision date kept. Nothing else already
    known is overwritten: a different abstract is not taken (`abstract_set_aside`).
    """
    changes: Row = {}
    newer = _newer_version(existing, incoming)
    if newer:
        for column in REVISED:
            if incoming.get(column) not in (None, "") and incoming[column] != existing.get(column):
                changes[column] = incoming[column]
        if existing.get("tldr_source") != "authors" and incoming.get("tldr"):
            changes["tldr"], changes["tldr_source"] = incoming["tldr"], incoming["tldr_source"]
    elif completes_abstract(existing, incoming):
        changes["abstract"] = incoming["abstract"]
        changes["abstract_text"] = incoming["abstract_text"]
        # A TL;DR derived from the cut text is derived again from the whole one.
        derived = existing.get("tldr_source") == incoming.get("tldr_source") == "derived"
        if derived and incoming["tldr"] != existing.get("tldr"):
            changes["tldr"] = incoming["tldr"]
        # So is a title derived from it.
        both_derived = existing["title_derived"] and incoming["title_derived"]
        if both_derived and incoming["title"] != existing["title"]:
            changes["title"] = incoming["title"]
    if not incoming["title_derived"] and (
        existing["title_derived"] or (newer and incoming["title"] != existing["title"])
    ):
        changes["title"] = incoming["title"]
        changes["title_derived"] = 0
        changes["title_key"] = incoming.get("title_key")
    if existing.get("venue") in NOT_A_VENUE and incoming.get("venue") not in NOT_A_VENUE:
        changes["venue"] = incoming["venue"]
        if incoming.get("year"):
            changes["year"] = incoming["year"]
    elif existing.get("venue") in (None, "") and incoming.get("venue"):
        changes["venue"] = incoming["venue"]
    elif str(incoming.get("venue") or "").startswith(f"{existing['venue']} "):
        changes["venue"] = incoming["venue"]  # more precise: "ICLR 2025" -> "ICLR 2025 Oral"
    if incoming.get("tldr_source") == "authors" and existing.get("tldr_source") != "authors":
        changes["tldr"], changes["tldr_source"] = incoming["tldr"], "authors"
    for column in FILLED:
        if column in changes:
            continue
        if existing.get(column) in (None, "") and incoming.get(column) not in (None, ""):
            changes[column] = incoming[column]
    for column, pick in (("published_at", min), ("revised_at", max)):
        old, new = existing.get(column), incoming.get(column)
        if new and (not old or pick(old, new) != old):
            changes[column] = new
    for column in ("names", "name_keys"):
        words = _union((existing.get(column) or "").split(), (incoming[column] or "").split())
        if words != (existing.get(column) or "").split():
            changes[column] = " ".join(words)
    for column in ("links", "keywords", "authors", "sources", "categories"):
        if column == "links":
            known = {link["url"] for link in existing["links"]}
            extra = [link for link in incoming["links"] if link["url"] not in known]
            if other_page(existing, incoming.get("url")) and incoming["url"] not in {
                link["url"] for link in extra
            }:
                extra.append(page_link(incoming["url"]))
            if extra:
                changes["links"] = existing["links"] + extra
        else:
            united = _union(existing.get(column) or [], incoming.get(column) or [])
            if united != (existing.get(column) or []):
                changes[column] = united
    affiliations = incoming.get("affiliations") or []
    if (
        any(affiliations)
        and not any(existing.get("affiliations") or [])
        and existing["authors"] == incoming["authors"]
    ):
        changes["affiliations"] = affiliations
    if not changes:
        return None
    changes["updated_at"] = stamp(now)
    return changes
