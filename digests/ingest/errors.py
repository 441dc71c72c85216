"""The one error that ingestion raises: it names the file and the line."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class IngestError(Exception):
    """A source file cannot be read. `str()` is the one-line message for the user."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class FileChanged(IngestError):
    """The file changed while it was being ingested: nothing is wrong with it as such,
    and it may well be complete by the next try."""
