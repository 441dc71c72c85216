"""What the fetchers need to know, as one value (the integrator maps settings onto it:
`arxiv_url`, `openreview_url`, `contact_email`, `allow_private_redirects`); the rest are
defaults that tests shrink.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from aiohttp.abc import AbstractResolver

log = logging.getLogger(__name__)

VERSION = "0.1.0"


@dataclass(frozen=True)
class FetchConfig:
    """Base URLs, politeness and limits for all fetchers."""

    arxiv_url: str = "https://export.arxiv.org/api"
    openreview_url: str = "https://api2.openreview.net"
    openreview_site: str = "https://openreview.net"  # forum and PDF links point here
    contact_email: str | None = None
    arxiv_delay: float = 3.0  # seconds between arXiv requests, as arXiv asks
    openreview_delay: float = 1.0
    feed_delay: float = 0.0
    arxiv_page_size: int = 200
    arxiv_revisions: bool = True  # a second, last-updated pass finds new versions of older papers
    openreview_page_size: int = 1000  # the API's largest page
    max_results: int = 10_000  # per fetch and source: a runaway query stops here (incomplete)
    timeout: float = 60.0  # per request; arXiv can take half a minute on deep pages
    attempts: int = 4  # per page, all failure kinds counted together
    backoff: float = 5.0  # first retry wait; doubles each attempt
    max_wait: float = 600.0  # a longer Retry-After fails the fetch instead of sleeping
    empty_page_retries: int = 3  # arXiv's spurious zero-entry pages
    feed_max_bytes: int = 10 * 1024 * 1024
    max_bytes: int = 64 * 1024 * 1024  # any other answer (an OpenReview page of 1000 notes: ~5 MB)
    # A redirect may lead to a loopback, private or other non-public address (see guard).
    allow_private_redirects: bool = False
    # Looks names up under the redirect check; None: aiohttp's (tests map names with it).
    resolver: AbstractResolver | None = field(default=None, repr=False, compare=False)

    def user_agent(self) -> str:
        """Paperboy's User-Agent, with the operator's contact address when set."""
        contact = f"; mailto:{self.contact_email}" if self.contact_email else ""
        return f"Paperboy/{VERSION} (research-paper digest bot{contact})"
