"""Fetched sources, without the network: source names (`spec`) and the parsing of what
arXiv, OpenReview and feeds answer into `records.FetchedPaper`s. The HTTP side is
`bot.fetching`; a parser raises a one-line `ParseError` (the fetcher adds the source).
"""
