"""Fetched sources, without the network: source names and the parsing of what arXiv,
OpenReview and feeds answer. The HTTP side is `bot.fetching`.

- `spec.parse_source(text) -> SourceSpec`: `arxiv:cs.LG`, `arxiv:"words"`,
  `arxiv:ti:... AND cat:...`, `openreview:VENUE_ID`, `feed:URL`; `SourceError` (one line
  naming the source) otherwise. `SourceSpec.name` is canonical (the sources table key).
- `records.FetchedPaper`: everything a source says about a paper;
  `records.to_paper_record()` turns it into the ingest pipeline's `PaperRecord`;
  `FetchedPaper.external_ids()` gives the matching keys (`arXiv:ID` first).
- `arxiv.parse_arxiv_page(text, source=) -> ArxivPage` (papers + opensearch totals),
  `openreview.parse_openreview_page(text, source=) -> OpenReviewPage` (papers + count),
  `feeds.parse_feed(body, source=, content_type=) -> list[FetchedPaper]`.
  Each raises a `ParseError` subclass with a one-line message (no source name: the
  fetcher adds it): `ArxivAPIError` (arXiv refused the query), `NotAFeedError`.
"""
