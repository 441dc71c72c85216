"""Managing the sources `paperboy run` fetches: adding and removing them, and which stored
source a typed name stands for."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from db.sources import Row, add_source, get_source, list_sources, remove_source
from db.store import Store
from digests.sources.errors import SourceError
from digests.sources.listing import shown_name
from digests.sources.spec import SourceSpec, parse_source
from digests.timestamps import stamp

log = logging.getLogger(__name__)


class AmbiguousSource(SourceError):
    """A shown name ("feed:https://x/rss?…") that stands for several stored feeds."""


def stored_name(text: str, known: Iterable[str]) -> str:
    """The stored name `text` means: its canonical form, or, for a feed shown with its
    query string hidden ("feed:https://x/rss?…", as `sources list` prints it), the one
    stored feed shown that way. SourceError when `text` is malformed and matches nothing;
    AmbiguousSource when it stands for several feeds."""
    typed = text.strip()
    hits = [name for name in known if shown_name(name) == typed and name != typed]
    if typed.endswith("?…") and hits:
        if len(hits) > 1:
            raise AmbiguousSource(
                f"{typed!r} stands for {len(hits)} feeds that differ only in their query "
                "string; give the whole URL"
            )
        return hits[0]
    return parse_source(typed).name


def add(db: Store, spec: SourceSpec, cron: str | None, now: datetime) -> Row | None:
    """Store `spec` as a source, on its own schedule `cron` (None: the default one). None
    when it was added; else the source already stored under its name (nothing changed)."""
    row = {
        "name": spec.name,
        "kind": spec.kind,
        "value": spec.value,
        "cron": cron,
        "added_at": stamp(now),
    }
    if add_source(db, row):
        return None
    return get_source(db, spec.name) or {}


def remove(db: Store, text: str) -> tuple[str, bool]:
    """Stop fetching the source `text` stands for (its papers stay): its stored name, and
    whether there was one to remove."""
    try:
        name = stored_name(text, (row["name"] for row in list_sources(db)))
    except AmbiguousSource:
        raise
    except SourceError:
        name = text.strip()  # a name stored before the grammar changed
    return name, remove_source(db, name)
