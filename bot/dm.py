"""Where a personal digest goes: the direct-message channel of its user, remembered.

A personal digest's reference names a user (`slack:T/@U`, `discord:@USER`:
`digests.channels`); the posters open the DM channel with that user (Slack
`conversations.open`, Discord `POST /users/@me/channels`) before the first message and
remember its id here, so a digest of many parts, the next digest and (with a database)
the next process do not open it again: opening is rate-limited more tightly than posting
(Slack's conversations.open is Tier 3, some 50 a minute), and 10,000 personal digests after
a restart would otherwise wait on it for over three hours.

The id is kept in memory, and in `app_state` (key `dm <reference>`) when a database is
given. A stale id (a DM channel the platform no longer knows) is `forget`-ten by the poster,
which then opens the DM again once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from sqlite_utils import Database

from db.app_state import get_state, set_state
from digests.timestamps import stamp

log = logging.getLogger(__name__)

KEY_PREFIX = "dm "


class DmChannels:
    """Reference of a personal digest -> the id of its DM channel.

    `db` gives the calling thread's database (`Services.db`); None keeps the ids in
    memory only (one command-line send). A database that fails (busy, read-only) costs
    only a reopen later: the id stays in memory and the send goes on."""

    def __init__(self, db: Callable[[], Database] | None = None) -> None:
        self._db = db
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, reference: str) -> str | None:
        with self._lock:
            known = self._known.get(reference)
        if known is not None or self._db is None:
            return known
        try:
            stored = get_state(self._db(), KEY_PREFIX + reference)
        except Exception as exc:  # a cache: never the reason a send fails
            log.warning("could not read the DM channel of %s: %s", reference, exc)
            return None
        if stored:
            with self._lock:
                self._known[reference] = stored
        return stored or None

    def put(self, reference: str, channel_id: str) -> None:
        with self._lock:
            if self._known.get(reference) == channel_id:
                return
            self._known[reference] = channel_id
        self._store(reference, channel_id)

    def forget(self, reference: str) -> None:
        with self._lock:
            self._known.pop(reference, None)
        self._store(reference, "")

    def _store(self, reference: str, value: str) -> None:
        if self._db is None:
            return
        try:
            set_state(self._db(), KEY_PREFIX + reference, value, stamp(datetime.now(UTC)))
        except Exception as exc:  # a cache: the id stays in memory
            log.warning("could not store the DM channel of %s: %s", reference, exc)
