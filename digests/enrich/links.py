"""Find the links in an abstract and say what each one is."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Linear: link text stops at any bracket, a URL at "[", so no scan runs to the end of
# the text once per opener (the same pattern as `digests.text`).
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\((https?://[^)\s\[]+)\)")
_BARE_URL = re.compile(r"https?://[^\s<>()\[\]{}\"']+")
MAX_LINKS = 50  # a real abstract has a handful; this bounds the work on a hostile one
_CODE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "huggingface.co", "codeberg.org")


@dataclass(frozen=True)
class Link:
    url: str
    kind: str  # code | arxiv | openreview | reference | project
    text: str = ""


_SCHEME = re.compile(r"^https?://(www\.)?")  # compiled once: called for every paper


def classify(url: str, text: str = "") -> str:
    host = _SCHEME.sub("", url).split("/", 1)[0].lower()
    if host in _CODE_HOSTS:
        return "code"
    if host.endswith("arxiv.org"):
        # A Markdown link whose text is not the URL cites prior work, not this paper.
        return "reference" if text and text != url else "arxiv"
    if host.endswith("openreview.net"):
        return "openreview"
    return "project"


def _clean(url: str) -> str:
    return url.rstrip(".,;:!?'\"")


def extract_links(abstract: str) -> list[Link]:
    """The links in `abstract` (at most MAX_LINKS), Markdown ones first, in order,
    without duplicates."""
    links: list[Link] = []
    seen: set[str] = set()

    def add(url: str, text: str = "") -> None:
        url = _clean(url)
        if url and url not in seen:
            seen.add(url)
            links.append(Link(url, classify(url, text), text))

    for match in _MD_LINK.finditer(abstract):
        add(match.group(2), match.group(1))
        if len(links) >= MAX_LINKS:
            return links
    for match in _BARE_URL.finditer(_MD_LINK.sub(" ", abstract)):
        add(match.group(0))
        if len(links) >= MAX_LINKS:
            break
    return links


def code_url(links: list[Link]) -> str | None:
    return next((link.url for link in links if link.kind == "code"), None)
