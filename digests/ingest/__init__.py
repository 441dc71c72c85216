"""Reading paper lists (seed text, CSV/TSV, JSON Lines, arXiv Atom) into the store."""

from digests.ingest.bulk import ingest_files
from digests.ingest.errors import IngestError
from digests.ingest.pipeline import IngestSummary

__all__ = ["IngestError", "IngestSummary", "ingest_files"]
