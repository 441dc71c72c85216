"""Read a source file as text, refusing binary files and bad encodings clearly."""

from __future__ import annotations

import codecs
import logging
from pathlib import Path

from digests.ingest.errors import IngestError

log = logging.getLogger(__name__)


def read_text(path: Path) -> str:
    """The file's text with `\\n` line ends. UTF-8 (BOM optional) or BOM-marked UTF-16.

    Raises IngestError for a missing, binary, undecodable or empty file.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise IngestError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise IngestError(str(path), None, "is a directory, not a file") from None
    except OSError as exc:
        raise IngestError(str(path), None, f"cannot be read ({exc.strerror})") from None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
        if b"\x00" in data[:8192]:
            line = data[: data.index(b"\x00")].count(b"\n") + 1
            raise IngestError(str(path), line, "looks like a binary file, not a paper list")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(
            str(path), line, f"is not valid {encoding.upper().replace('-SIG', '')} text"
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise IngestError(str(path), 1, "is empty: there are no papers in it")
    return text
