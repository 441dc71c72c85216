"""Source names: what `paperboy sources add NAME` accepts, and each source's canonical name.

`arxiv:CATEGORY` (checked against the taxonomy, case corrected), `arxiv:"words"`,
`arxiv:FIELD:...` (a raw query after a field prefix such as `ti:`), `openreview:VENUE_ID`,
`feed:URL`. `parse_source()` returns a `SourceSpec` whose `name` is canonical (what `sources
remove` and the sources table key on); an error is a one-line `SourceError`.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from digests.safe_text import has_unsafe
from digests.safe_url import safe_url
from digests.sources.errors import SourceError

log = logging.getLogger(__name__)

Kind = Literal["arxiv", "openreview", "feed"]
KINDS: tuple[Kind, ...] = ("arxiv", "openreview", "feed")

# The arXiv category taxonomy (https://arxiv.org/category_taxonomy), aliases included
# (cs.SY = eess.SY, math.MP = math-ph, ...): archive -> subject classes.
_SUBJECTS: dict[str, str] = {
    "cs": "AI AR CC CE CG CL CR CV CY DB DC DL DM DS ET FL GL GR GT HC IR IT LG LO MA MM MS "
    "NA NE NI OH OS PF PL RO SC SD SE SI SY",
    "econ": "EM GN TH",
    "eess": "AS IV SP SY",
    "math": "AC AG AP AT CA CO CT CV DG DS FA GM GN GR GT HO IT KT LO MG MP NA NT OA OC PR QA "
    "RA RT SG SP ST",
    "stat": "AP CO ME ML OT TH",
    "q-bio": "BM CB GN MN NC OT PE QM SC TO",
    "q-fin": "CP EC GN MF PM PR RM ST TR",
    "astro-ph": "CO EP GA HE IM SR",
    "cond-mat": "dis-nn mes-hall mtrl-sci other quant-gas soft stat-mech str-el supr-con",
    "nlin": "AO CD CG PS SI",
    "physics": "acc-ph ao-ph app-ph atm-clus atom-ph bio-ph chem-ph class-ph comp-ph data-an "
    "ed-ph flu-dyn gen-ph geo-ph hist-ph ins-det med-ph optics plasm-ph pop-ph soc-ph space-ph",
}
# Archives that are categories themselves (no subject classes).
_STANDALONE = ("gr-qc", "hep-ex", "hep-lat", "hep-ph", "hep-th", "math-ph", "nucl-ex", "nucl-th",
               "quant-ph")  # fmt: skip
CATEGORIES: frozenset[str] = frozenset(
    [
        f"{archive}.{subject}"
        for archive, subjects in _SUBJECTS.items()
        for subject in subjects.split()
    ]
    + list(_STANDALONE)
)
_BY_FOLDED = {category.casefold(): category for category in CATEGORIES}

_CATEGORY_SHAPE = re.compile(r"[A-Za-z][A-Za-z-]*(?:\.[A-Za-z][A-Za-z-]*)?")
_FIELD_PREFIX = re.compile(r"(?:ti|au|abs|co|jr|cat|rn|all|id):", re.I)
_VENUE_ID = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*\.[A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*"
)
MAX_NAME = 500


@dataclass(frozen=True)
class SourceSpec:
    """One source. `name` is canonical; `value` is the kind's part of it.

    - arxiv: `query` is the arXiv `search_query`; `category` is set for a category source.
    - openreview: `value` is the venue id.
    - feed: `value` is the URL (scheme and host lower-cased).
    """

    kind: Kind
    value: str
    name: str
    query: str | None = None
    category: str | None = None


def parse_source(text: str) -> SourceSpec:
    """The source `text` names; SourceError (one line naming it) if it names none."""
    raw = text.strip()
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    if not raw or len(raw) > MAX_NAME or has_unsafe(raw) or "\n" in raw:
        raise SourceError(
            f"source {shown!r}: not a source name (kind:value, at most {MAX_NAME} characters)"
        )
    kind, colon, rest = raw.partition(":")
    kind = kind.strip().lower()
    rest = rest.strip()
    if not colon or kind not in KINDS:
        raise SourceError(
            f'source {shown!r}: unknown kind {kind!r}; use arxiv:CATEGORY, arxiv:"search words", '
            "openreview:VENUE_ID or feed:URL"
        )
    if not rest:
        raise SourceError(f"source {shown!r}: nothing after {kind}:")
    if kind == "arxiv":
        return _arxiv(rest, shown)
    if kind == "openreview":
        return _openreview(rest, shown)
    return _feed(rest, shown)


def suggest_category(text: str) -> str | None:
    """The taxonomy's category closest to `text` (case-insensitive), or None."""
    folded = text.casefold()
    subject = folded.rpartition(".")[2]
    same_subject = [c for c in _BY_FOLDED if "." in c and c.rpartition(".")[2] == subject]
    if "." in folded and same_subject:  # cs.ML -> stat.ML: the subject is rarer than the archive
        best = difflib.get_close_matches(folded, same_subject, n=1, cutoff=0.0)
        return _BY_FOLDED[best[0]]
    matches = difflib.get_close_matches(folded, list(_BY_FOLDED), n=1, cutoff=0.6)
    return _BY_FOLDED[matches[0]] if matches else None


def _arxiv(rest: str, shown: str) -> SourceSpec:
    if rest.startswith('"'):
        if len(rest) < 3 or not rest.endswith('"') or '"' in rest[1:-1]:
            raise SourceError(
                f'source {shown!r}: a search is one phrase in double quotes: arxiv:"words"'
            )
        words = " ".join(rest[1:-1].split())
        if not words:
            raise SourceError(f"source {shown!r}: the search phrase is empty")
        return SourceSpec("arxiv", f'"{words}"', f'arxiv:"{words}"', query=f'all:"{words}"')
    if _FIELD_PREFIX.match(rest):
        query = " ".join(rest.split())
        if query.count('"') % 2:
            raise SourceError(f"source {shown!r}: unbalanced double quotes in the arXiv query")
        return SourceSpec("arxiv", query, f"arxiv:{query}", query=query)
    if _CATEGORY_SHAPE.fullmatch(rest):
        category = _BY_FOLDED.get(rest.casefold())
        if category is None:
            close = suggest_category(rest)
            hint = (
                f"; did you mean {close}?"
                if close
                else f' (like cs.LG or hep-th); for a search: arxiv:"{rest}"'
            )
            raise SourceError(f"source {shown!r}: {rest!r} is not an arXiv category{hint}")
        return SourceSpec(
            "arxiv", category, f"arxiv:{category}", query=f"cat:{category}", category=category
        )
    raise SourceError(
        f"source {shown!r}: not an arXiv category; for a search put the words in double quotes: "
        f'arxiv:"{" ".join(rest.replace(chr(34), " ").split())}"'
    )


def _openreview(rest: str, shown: str) -> SourceSpec:
    venue = rest.strip("/")
    if not _VENUE_ID.fullmatch(venue) or "//" in venue:
        raise SourceError(
            f"source {shown!r}: not an OpenReview venue id (like ICLR.cc/2025/Conference: "
            "letters, digits, '.', '_', '-' and '/')"
        )
    return SourceSpec("openreview", venue, f"openreview:{venue}")


def _feed(rest: str, shown: str) -> SourceSpec:
    try:
        parts = urlsplit(rest)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or safe_url(rest) is None:
        raise SourceError(f"source {shown!r}: a feed is an http:// or https:// URL")
    url = urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, "")
    )
    checked = safe_url(url)
    if checked is None:
        raise SourceError(f"source {shown!r}: a feed is an http:// or https:// URL")
    return SourceSpec("feed", checked, f"feed:{checked}")
