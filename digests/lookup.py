"""Lookups a user asks for (`find`, `show`) as neutral results, and their text form."""

from __future__ import annotations

import functools
import logging
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from db.papers import MIN_PREFIX, get_paper, paper_id_for_alias, resolve_paper
from db.search import (
    MAX_EXCLUDED,
    Hit,
    exact_tier,
    excluded_words,
    matched_authors,
    mentions_any,
    papers_with_arxiv_id,
    papers_with_id_prefix,
    search_papers,
)
from db.store import Store
from digests import semantic
from digests.matching import Matcher, PaperText, Term
from digests.safe_text import is_text, strip_unsafe
from digests.safe_url import safe_url
from digests.text import plain_text
from digests.topics import Catalog, Topic, bundled_catalog, custom_topic

log = logging.getLogger(__name__)

Result = dict[str, Any]
CANDIDATES_SHOWN = 10
# New-style (2502.01234) and old-style (hep-th/9901001) arXiv ids, bare or as `arXiv:ID`
# or an arxiv.org link, with or without a version (v2).
_ARXIV = re.compile(
    r"(?:arxiv:\s*|(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)?"
    r"(?P<id>\d{4}\.\d{4,5}|[a-z-]+(?:\.[a-z]{2})?/\d{7})(?:v\d+)?(?:\.pdf)?",
    re.I,
)


@dataclass(frozen=True)
class Resolution:
    """What a paper reference names: one paper, or several `candidates` (id, title) when
    an id prefix is shared, or neither."""

    paper: dict[str, Any] | None
    candidates: tuple[dict[str, Any], ...] = ()


def arxiv_id(ref: str) -> str | None:
    """The arXiv id (no version) that `ref` names, if it names one: `2502.01234`,
    `2502.01234v2`, `arXiv:2502.01234`, `https://arxiv.org/abs/2502.01234v1`."""
    match = _ARXIV.fullmatch(ref.strip())
    if match is None:
        return None
    return match.group("id")


def resolve(db: Store, ref: str) -> Resolution:
    """A paper by id, unique id prefix, source id (OpenReview, arXiv in any usual form)."""
    ref = ref.strip()
    if not is_text(ref):  # a lone surrogate (undecodable bytes in argv): SQLite refuses it
        return Resolution(None)
    paper = resolve_paper(db, ref)
    if paper is not None:
        return Resolution(paper)
    # A paper fetched from OpenReview keeps its note id as "openreview:ID" (a file's id
    # column is stored bare, and found above).
    paper_id = paper_id_for_alias(db, f"openreview:{ref}")
    if paper_id is not None:
        return Resolution(get_paper(db, paper_id))
    arxiv = arxiv_id(ref)
    if arxiv is not None:
        for alias in (f"arXiv:{arxiv}", arxiv):
            paper_id = paper_id_for_alias(db, alias)
            if paper_id is not None:
                return Resolution(get_paper(db, paper_id))
        linked = papers_with_arxiv_id(db, arxiv, CANDIDATES_SHOWN)
        if len(linked) == 1:
            return Resolution(linked[0])
        if linked:
            return Resolution(None, tuple(linked))
    if ref:
        rows = papers_with_id_prefix(db, ref, CANDIDATES_SHOWN + 1)
        # Shorter than MIN_PREFIX, even one match is only listed: `p1` is too little to pick
        # a paper by, but "no paper with id p1" would be wrong when ids start with it.
        if len(rows) > 1 or (rows and len(ref) < MIN_PREFIX):
            return Resolution(None, tuple(rows))
    return Resolution(None)


PAGE_KEYS = ("url", "arxiv_url", "openreview_url")  # the paper's own page, best first


def paper_link(paper: dict[str, Any]) -> str | None:
    """The one link to show (a title links to it): the paper's page (its own, arXiv's or
    OpenReview's), else its code; only a well-formed http(s) URL (`digests.safe_url`), so
    no platform refuses the message."""
    for key in (*PAGE_KEYS, "code_url"):
        link = safe_url(paper.get(key))
        if link:
            return link
    return None


AUTHORS_SHOWN = 3
AUTHOR_MAX = 80  # characters of one author's name shown (a list pasted as one name)
VENUE_MAX = 100  # characters of a venue shown (a feed's venue can be a whole citation)
LINK_MAX = 500  # longer links are left out of the links line (the title still links)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_authors(authors: Any, query: str = "") -> str:
    """The first three authors, then "et al.": `A, B, C et al.`; "" when none are known.
    With the `query` of a `find`, an author it names past the first three is shown too:
    `A, B, C, …, Sergey Levine` (then "et al." if more follow)."""
    names = [str(name).strip() for name in authors or [] if str(name).strip()]
    parts = [_cut(name, AUTHOR_MAX) for name in names[:AUTHORS_SHOWN]]
    shown = len(parts)  # how many names the line covers, from the first
    later = [place for place in matched_authors(names, query) if place >= AUTHORS_SHOWN]
    if later:
        later = later[:AUTHORS_SHOWN]
        parts.append("…")
        parts.extend(_cut(names[place], AUTHOR_MAX) for place in later)
        shown = later[-1] + 1
    line = ", ".join(parts)
    return line + " et al." if len(names) > shown else line


def shown_venue(paper: dict[str, Any]) -> str:
    """What a digest shows as the venue: `ICLR 2025`; `arXiv` for a preprint (a paper
    fetched with a publication date and an arXiv page, but no venue); "" otherwise (a paper
    from a file, or a feed entry, with no venue: a journal's feed is not arXiv)."""
    if paper.get("venue"):
        # Cut when long, so it cannot crowd the links out of a Slack item.
        return _cut(venue_with_year(paper["venue"], paper.get("year")), VENUE_MAX)
    if paper.get("published_at") and paper.get("arxiv_url"):
        return "arXiv"
    return ""


def paper_links(paper: dict[str, Any]) -> list[tuple[str, str]]:
    """The links a digest item shows, as (label, checked URL): the paper's page, its PDF
    and its code, each when known and well-formed, each URL once."""
    page = next((link for key in PAGE_KEYS if (link := safe_url(paper.get(key)))), None)
    found: list[tuple[str, str]] = []
    for label, link in (
        ("paper", page),
        ("PDF", safe_url(paper.get("pdf_url"))),
        ("code", safe_url(paper.get("code_url"))),
    ):
        if link and len(link) <= LINK_MAX and all(link != url for _, url in found):
            found.append((label, link))
    return found


def item_fields(paper: dict[str, Any]) -> Result:
    """A digest item's fields for `--format json`: everything the text shows, and more."""
    links = dict(paper_links(paper))
    return {
        "paper_id": paper["id"],
        "title": paper["title"],
        "authors": list(paper.get("authors") or []),
        "venue": shown_venue(paper) or None,
        "year": paper.get("year"),
        "tldr": paper.get("tldr"),
        "url": links.get("paper") or paper_link(paper),
        "pdf_url": safe_url(paper.get("pdf_url")),
        "code_url": safe_url(paper.get("code_url")),
        "published_at": paper.get("published_at"),
    }


def as_result(paper: dict[str, Any], score: float | None = None) -> Result:
    """The public shape of a paper, as `--json` prints it."""
    result: Result = {
        "id": paper["id"],
        "title": paper["title"],
        "method": paper.get("method"),
        "venue": paper.get("venue"),
        "year": paper.get("year"),
        "tldr": paper.get("tldr"),
        "authors": list(paper.get("authors") or []),
        "abstract": paper["abstract"],
        "url": paper_link(paper),
        "code_url": safe_url(paper.get("code_url")),
    }
    if score is not None:
        result["score"] = score
    return result


# A word to leave out: a leading minus on a whitespace-separated word, or on a quoted phrase
# (-"two words", -'two words'); "q-learning" keeps its hyphen. Phones turn "-" and "--" into
# dashes, so – — − － count too.
_DASHES = "-–—−－"
_QUOTES = "\"“”'‘’"
_MINUS = re.compile(rf"(?<!\S)[{_DASHES}]+(?:[{_QUOTES}]([^{_QUOTES}]*)[{_QUOTES}]?|(\S+))")


@dataclass(frozen=True)
class FindQuery:
    """A `find` query cut in two: the words to look for, and the texts to leave out
    (each a word or a phrase, as typed)."""

    words: str
    excluded: tuple[str, ...] = ()
    minus: bool = field(default=False, compare=False)  # a minus word, even an empty one

    def only_excludes(self) -> bool:
        """Whether nothing is left to look for once the minus words are cut (`-diffusion`,
        and `--` or `-"` too, which leave out nothing); not for a query empty as typed."""
        return not self.words and self.minus

    def too_many(self) -> str | None:
        """The one-line refusal of a query leaving out more than `MAX_EXCLUDED` texts."""
        if len(self.excluded) <= MAX_EXCLUDED:
            return None
        return (
            f"at most {MAX_EXCLUDED} words or phrases can be left out (-word) of one find; "
            f"this one has {len(self.excluded)}"
        )


def parse_find(query: str) -> FindQuery:
    """`offline rl -diffusion -"behavior cloning"` -> words "offline rl", excluded
    ("diffusion", "behavior cloning"). A minus with no word after it leaves out nothing;
    `_MINUS` says which dashes and quotes count."""
    excluded = [
        (phrase if phrase is not None else word).strip(_QUOTES).strip()
        for phrase, word in (match.groups() for match in _MINUS.finditer(query))
    ]
    words = " ".join(_MINUS.sub(" ", query).split())
    kept = tuple(text for text in excluded if excluded_words([text]))
    return FindQuery(words, kept, minus=bool(excluded))


def find(db: Store, query: str, limit: int = 10, catalog: Catalog | None = None) -> list[Result]:
    """Papers for `query`, best first, at most `limit`; a `-word` or `-"a phrase"` in it
    leaves out the papers that mention it (`parse_find`; the first `MAX_EXCLUDED` only: the
    commands refuse more, `FindQuery.too_many`). A query that names one topic
    of `catalog` (the bundled one unless given: a command passes its context's) by its
    id, label or aliases, with glue words (what a quoted `subscribe` follows), is ranked
    with that topic's model (`routed`); any other by words and authors' names, and by
    meaning too with the semantic extra. Papers the query names exactly come first: by
    their method name, then by an acronym of their own (`db.search.exact_tier`)."""
    parsed = parse_find(query)
    if limit <= 0:  # the routed path reads ROUTE_DEPTH hits: hits[:-1] would keep 29
        return []
    topic = catalog_topic(parsed.words, catalog)
    depth = limit if topic is None else max(limit, ROUTE_DEPTH)
    # With the semantic extra and stored embeddings, words and meaning fused.
    hits = semantic.hybrid_hits(db, parsed.words, depth * 3 if parsed.excluded else depth)
    if hits is None:
        hits = search_papers(db, parsed.words, depth, parsed.excluded)
    else:
        left_out = excluded_words(parsed.excluded)
        hits = [hit for hit in hits if not mentions_any(hit.paper, left_out)]
    if topic is not None:
        hits = routed(parsed.words, topic, hits)
    else:  # stable: the order within a tier stays
        hits = sorted(hits, key=lambda hit: exact_tier(hit.paper, parsed.words))
    return [as_result(hit.paper, hit.score) for hit in hits[:limit]]


# A query naming a catalog topic is ranked among this many lexical matches (at least
# `limit`). Reading and scoring them is most of a routed find's cost, and the top 10 is as
# precise at 30 as at 100 or 200: docs/dev/relevance.md "Routed find".
ROUTE_DEPTH = 30
ROUTE_MAX_CHARS = 200  # longer text is never only a topic's names


def catalog_topic(query: str, catalog: Catalog | None = None) -> Topic | None:
    """The topic of `catalog` (the bundled one unless given) that `query` names, as a
    quoted `subscribe` would follow it (`custom_topic`'s `based_on`: one topic's names
    and glue words only), else None."""
    if not query.strip() or len(query) > ROUTE_MAX_CHARS:
        return None
    catalog = catalog if catalog is not None else bundled_catalog()
    named = custom_topic(query, catalog).based_on
    return catalog.get(named[0]) if named else None


@functools.lru_cache(maxsize=64)
def _matcher(terms: tuple[Term, ...]) -> Matcher:
    """A topic's terms as a `Matcher`, built once per topic (the same scores as `score`;
    it checks only the terms whose first words a paper has, where `score` scans the text
    once per term)."""
    return Matcher({"": terms})


def routed(query: str, topic: Topic, hits: list[Hit]) -> list[Hit]:
    """`hits` (best first) reordered for a query that names `topic`: by reciprocal rank
    fusion of their order and the topic's scores (papers the topic scores 0 keep only
    their lexical rank). Why fuse, not the topic's score alone: docs/dev/relevance.md
    "Routed find". Papers the query names exactly stay first (`exact_tier`)."""
    matcher = _matcher(topic.terms)
    scores = {
        str(hit.paper["id"]): matcher.scores(PaperText.of(hit.paper)).get("", 0.0) for hit in hits
    }
    by_topic = sorted((i for i in scores if scores[i] > 0), key=lambda i: -scores[i])
    fused: dict[str, float] = {}
    for rank, hit in enumerate(hits, start=1):
        fused[str(hit.paper["id"])] = 1.0 / (semantic.RRF_K + rank)
    for rank, paper_id in enumerate(by_topic, start=1):
        fused[paper_id] += 1.0 / (semantic.RRF_K + rank)
    order = sorted(
        hits, key=lambda hit: (exact_tier(hit.paper, query), -fused[str(hit.paper["id"])])
    )
    return [Hit(hit.paper, round(fused[str(hit.paper["id"])], 5)) for hit in order]


def show(db: Store, ref: str) -> Result | None:
    """The paper `ref` names in full, or None (see `resolve` for the candidates)."""
    paper = resolve(db, ref).paper
    if paper is None:
        return None
    return full_result(paper)


def full_result(paper: dict[str, Any]) -> Result:
    """Everything `show` prints of a paper; `abstract_text` is the abstract as plain text
    (LaTeX as Unicode, no Markdown), `abstract` as the source gave it."""
    result = as_result(paper)
    result.update(
        {
            "abstract_text": paper.get("abstract_text") or plain_text(str(paper["abstract"])),
            "title_derived": bool(paper["title_derived"]),
            "authors": paper["authors"],
            "keywords": paper["keywords"],
            "links": paper["links"],
            "arxiv_url": paper.get("arxiv_url"),
            "openreview_url": paper.get("openreview_url"),
            "pdf_url": paper.get("pdf_url"),
            "sources": paper["sources"],
            "added_at": paper["added_at"],
        }
    )
    return result


def candidates_text(
    ref: str, candidates: tuple[dict[str, Any], ...], code: str = ""
) -> tuple[str, list[str]]:
    """A heading and one line per paper that an ambiguous reference could mean; ids are
    wrapped in `code` (a backtick for chat replies)."""
    shown = candidates[:CANDIDATES_SHOWN]
    more = " and more" if len(candidates) > CANDIDATES_SHOWN else ""
    papers = "paper" if len(shown) == 1 else "papers"
    head = f"{ref[:40]!r} matches {len(shown)} {papers}{more}; use more of the id:"
    return head, [f"{code}{row['id']}{code} {row['title']}" for row in shown]


def venue_with_year(venue: Any, year: Any) -> str:
    """`ICLR 2025` from ("ICLR", 2025); the year is left out when the venue names it
    already: a fetched label such as "ICML 2026" or "ICLR 2025 Oral" (from an arXiv
    comment or OpenReview) is never shown as "ICML 2026 2026"."""
    shown = str(venue or "").strip()
    if year and str(year) not in shown.split():
        shown = f"{shown} {year}".strip()
    return shown


def venue_label(result: Result) -> str:
    return venue_with_year(result.get("venue"), result.get("year")) or "venue unknown"


def format_results(results: list[Result], query: str, width: int = 88) -> str:
    """A numbered, readable list for the terminal."""
    if not results:
        return f"No matches for {query!r}."
    blocks = []
    for number, result in enumerate(results, start=1):
        lines = [f"{number:>2}. {result['title']}"]
        line = result.get("authors_line")  # a find reply's: the query's author named
        if authors := line or short_authors(result.get("authors"), parse_find(query).words):
            lines.append(f"    {authors}")
        meta = [venue_label(result), result["id"]]
        if result.get("url"):
            meta.append(str(result["url"]))
        lines.append("    " + " · ".join(meta))
        if result.get("tldr"):
            lines.extend(
                textwrap.wrap(
                    result["tldr"], width, initial_indent="    ", subsequent_indent="    "
                )
            )
        blocks.append("\n".join(lines))
    return strip_unsafe("\n\n".join(blocks))


def format_paper(result: Result, width: int = 88) -> str:
    """One paper in full, for `show`."""
    lines = [result["title"], f"{venue_label(result)} · {result['id']}"]
    if result.get("method"):
        lines.append(f"Method: {result['method']}")
    if result.get("authors"):
        lines.append("Authors: " + ", ".join(result["authors"]))
    if result.get("keywords"):
        lines.append("Keywords: " + ", ".join(result["keywords"]))
    lines.append("")
    if result.get("tldr"):
        lines.append(textwrap.fill("TL;DR: " + result["tldr"], width))
        lines.append("")
    abstract = result.get("abstract_text") or plain_text(str(result["abstract"]))
    lines.append(textwrap.fill(abstract, width))
    links = [
        f"  {link['kind']}: {url}"
        for link in result.get("links", [])
        if (url := safe_url(link.get("url")))
    ]
    for key in ("url", "code_url"):
        if result.get(key) and all(result[key] not in line for line in links):
            links.insert(0, f"  {'code' if key == 'code_url' else 'page'}: {result[key]}")
    # A fetched paper's PDF, as its digest item shows it (the file formats have none).
    pdf = safe_url(result.get("pdf_url"))
    if pdf and all(pdf not in line for line in links):
        after_page = next((i + 1 for i, line in enumerate(links) if "page:" in line), 0)
        links.insert(after_page, f"  PDF: {pdf}")
    if links:
        lines.extend(["", "Links:", *links])
    return strip_unsafe("\n".join(lines))
