"""A paper as a fetched source gives it (`FetchedPaper`), and the helpers every parser
shares: arXiv ids, venues from comments, HTML to plain text.

Text fields are clean (`strip_unsafe`), URLs `safe_url`-checked, datetimes UTC;
`to_paper_record()` makes the ingest pipeline's `PaperRecord`. Matching keys
(`external_ids()`): `arXiv:ID` (no version; a linked arXiv paper's too), `openreview:ID`,
`doi:...` (lower-cased), so the same paper from two sources shares a key.
"""

from __future__ import annotations

import html
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from html.parser import HTMLParser

from digests.records import PaperRecord
from digests.safe_text import strip_unsafe
from digests.safe_url import safe_url

log = logging.getLogger(__name__)

# New-style (2007-): 0704.0001 to 2501.01234, version optional; old-style: hep-th/9901001,
# math.OC/0601001 (an archive, an optional subject class, 7 digits).
_NEW_ID = r"\d{4}\.\d{4,5}"
_OLD_ID = r"[a-z]+(?:-[a-z]+)?(?:\.[A-Z]{2})?/\d{7}"
ARXIV_ID = re.compile(rf"(?P<id>{_NEW_ID}|{_OLD_ID})(?:v(?P<version>\d+))?")
# An arXiv id in running text or a link: only with "arxiv" right before it, so a DOI or a
# page number is never taken for one.
_LINKED = re.compile(
    rf"arxiv(?:\.org/(?:abs|pdf)/|:\s?)(?P<id>{_NEW_ID}|{_OLD_ID})(?:v\d+)?(?![\d])", re.I
)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+[^\s\"<>.,;)\]])")
_CODE_URL = re.compile(
    r"https?://(?:www\.)?(?:github\.com|gitlab\.com|huggingface\.co|bitbucket\.org)/[^\s\"<>)\]]+",
    re.I,
)
_SPACES = re.compile(r"\s+")


@dataclass
class FetchedPaper:
    """One paper from a fetched source. Only `source` is always set.

    `authors` and `affiliations` are parallel lists (one list of affiliations per author,
    empty where the source gives none). `venue` is a label with its year ("ICML 2025",
    "ICLR 2025 Oral"), set only for a real venue (never "arXiv", never "Submitted to ...").
    `arxiv_id` has no version; `arxiv_version` is the version number (1 for `v1`).
    """

    source: str
    title: str | None = None
    abstract: str = ""
    authors: list[str] = field(default_factory=list)
    affiliations: list[list[str]] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    primary_category: str | None = None
    published: datetime | None = None
    updated: datetime | None = None
    url: str | None = None
    pdf_url: str | None = None
    code_url: str | None = None
    doi: str | None = None
    journal_ref: str | None = None
    comment: str | None = None
    venue: str | None = None
    year: int | None = None
    keywords: list[str] = field(default_factory=list)
    tldr: str | None = None
    arxiv_id: str | None = None
    arxiv_version: int | None = None
    openreview_id: str | None = None
    openreview_forum: str | None = None
    entry_id: str | None = None  # a feed entry's guid/id, as given
    linked_arxiv_ids: list[str] = field(default_factory=list)

    def external_ids(self) -> list[str]:
        """Matching keys, strongest first: arXiv, OpenReview, DOI (see the module doc)."""
        ids: list[str] = []
        arxiv = self.arxiv_id or (self.linked_arxiv_ids[0] if self.linked_arxiv_ids else None)
        if arxiv:
            ids.append(f"arXiv:{arxiv}")
        if self.openreview_id:
            ids.append(f"openreview:{self.openreview_id}")
        if self.doi:
            ids.append(f"doi:{self.doi.lower()}")
        return ids


def to_paper_record(paper: FetchedPaper, *, line: int = 0) -> PaperRecord | None:
    """The ingest pipeline's record for `paper`, or None when it has neither abstract nor
    title (nothing to show or match on).

    A title-only entry (some feeds) uses its title as the abstract. `venue` is the venue
    label, or "arXiv" for an arXiv paper without one; `year` the venue's year, else the
    publication year. Keywords: the source's keywords, else the arXiv categories.
    `external_id`: the first of `external_ids()`; `line`: the paper's place in its page.
    """
    abstract = paper.abstract or paper.title or ""
    if not abstract:
        return None
    venue = paper.venue or ("arXiv" if paper.arxiv_id else None)
    year = paper.year or (paper.published.year if paper.published else None)
    ids = paper.external_ids()
    return PaperRecord(
        abstract=abstract,
        source=paper.source,
        line=line,
        title=paper.title,
        venue=venue,
        year=year,
        url=paper.url,
        authors=list(paper.authors),
        keywords=list(paper.keywords or paper.categories),
        external_id=ids[0] if ids else None,
    )


def split_arxiv_id(text: str) -> tuple[str, int | None] | None:
    """("2501.01234", 2) from "2501.01234v2", an abs/pdf URL or "arXiv:2501.01234"; None
    when `text` holds no arXiv id at its end."""
    text = text.strip()
    for prefix in ("arxiv:", "arXiv:"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    tail = re.sub(r"^https?://(?:export\.)?arxiv\.org/(?:abs|pdf)/", "", text, flags=re.I)
    tail = tail.removesuffix(".pdf")
    match = ARXIV_ID.fullmatch(tail)
    if not match:
        return None
    version = match.group("version")
    return match.group("id"), int(version) if version else None


def linked_arxiv_ids(*texts: str | None) -> list[str]:
    """arXiv ids (no version) that `texts` link or cite ("arxiv.org/abs/ID", "arXiv:ID"),
    first seen first, without repeats."""
    found: list[str] = []
    for text in texts:
        for match in _LINKED.finditer(text or ""):
            if match.group("id") not in found:
                found.append(match.group("id"))
    return found


def find_doi(*texts: str | None) -> str | None:
    """The first DOI in `texts` (a bare one or in a doi.org link)."""
    for text in texts:
        match = _DOI.search(text or "")
        if match:
            return match.group(1)
    return None


def find_code_url(*texts: str | None) -> str | None:
    """The first code repository link (GitHub, GitLab, Hugging Face, Bitbucket) in `texts`."""
    for text in texts:
        match = _CODE_URL.search(text or "")
        if match:
            return safe_url(match.group(0).rstrip(".,;:"))
    return None


# --- venues from arXiv comments -------------------------------------------------------

_VENUE_WORDS = (
    "AAAI AISTATS ACL CHI CIKM COLING COLT CoLLAs CoRL CVPR EACL ECCV ECML EMNLP FAccT ICASSP "
    "ICCV ICDE ICDM ICLR ICML ICRA IJCAI Interspeech IROS JMLR KDD L4DC LoG MICCAI MLSys NAACL "
    "NeurIPS NIPS RSS SIGGRAPH SIGIR SIGMOD TACL TMLR UAI VLDB WACV WSDM WWW"
)
_VENUES = _VENUE_WORDS.split()
_VENUE_NAMES = {v.casefold(): v for v in _VENUES}
_VENUE_IN_COMMENT = re.compile(
    rf"\b(?P<venue>{'|'.join(_VENUES)})\s*(?:['’](?P<short>\d\d)|(?P<year>(?:19|20)\d\d))\b"
    r"(?P<rest>[^.;]{0,40})",
    re.I,
)
# A comment about a submission, not an acceptance: never a venue.
_NOT_ACCEPTED = re.compile(
    r"\b(?:submitted|submission|under review|in review|rejected|withdrawn|preprint for)\b", re.I
)
_KIND = re.compile(r"\b(oral|spotlight|poster|workshop|findings)\b", re.I)


def venue_from_comment(comment: str | None) -> tuple[str, int] | None:
    """("ICML 2025", 2025) from "Accepted at ICML 2025"; ("ICLR 2025 Oral", 2025) from
    "ICLR 2025 (Oral)"; ("ICML 2025 Workshop", 2025) from "ICML 2025 Workshop on X";
    "NeurIPS 2024 camera-ready" counts. None for "Submitted to NeurIPS 2025", "under
    review", or a comment naming no known venue with a year ("12 pages, 5 figures")."""
    if not comment or _NOT_ACCEPTED.search(comment):
        return None
    match = _VENUE_IN_COMMENT.search(comment)
    if not match:
        return None
    name = _VENUE_NAMES[match.group("venue").casefold()]
    if name == "NIPS":
        name = "NeurIPS"
    # A two-digit year only with an apostrophe ("CVPR'25"): "UAI 15 pages" is no venue.
    year = int(match.group("year")) if match.group("year") else 2000 + int(match.group("short"))
    label = f"{name} {year}"
    kind = _KIND.search(match.group("rest")) or _KIND.search(comment[: match.start()][-30:])
    if kind:
        label += " " + kind.group(1).capitalize()
    return label, year


# --- text -----------------------------------------------------------------------------


class _TextOnly(HTMLParser):
    """Text of an HTML fragment: tags dropped, script/style bodies dropped, block ends
    become spaces (so "a</p><p>b" is "a b")."""

    _SKIP = frozenset({"script", "style", "head", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in ("br", "p", "div", "li", "tr"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self.skipping:
            self.skipping -= 1
        else:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(fragment: str | None) -> str:
    """Plain, clean, single-spaced text of an HTML (or plain) fragment."""
    if not fragment:
        return ""
    if "<" not in fragment and "&" not in fragment:
        return clean(fragment)
    parser = _TextOnly()
    try:
        parser.feed(fragment)
        parser.close()
        text = "".join(parser.parts)
    except Exception:  # html.parser is lenient; this is only a guard
        text = html.unescape(re.sub(r"<[^>]*>", " ", fragment))
    return clean(text)


def clean(text: str | None) -> str:
    """`text` without unsafe characters, with runs of white space made one space."""
    return _SPACES.sub(" ", strip_unsafe(text or "")).strip()
