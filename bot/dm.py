"""Where a personal digest goes: the direct-message channel of its user, remembered.

The posters open the DM channel (Slack `conversations.open`, Discord `POST
/users/@me/channels`) before the first message and remember its id here, in memory and in
`app_state` (`dm <reference>`), since opening is rate-limited more tightly than posting.
Opens are paced by the poster's `opening` limits and the post after takes a fresh turn; a
429 on an open pauses the opens and is retried (`MAX_OPEN_RETRIES`), then becomes a
rate-limited `TransientError`. A stale id is `forget`-ten and the DM opened again once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from bot.delivery import TransientError
from bot.ratelimits import SendLimits, Throttled, pause_seconds
from db.app_state import get_state, set_state
from db.store import Store
from digests.timestamps import stamp

log = logging.getLogger(__name__)

KEY_PREFIX = "dm "
# Slack's conversations.open: Tier 3, "50+ per minute" (its method reference), counted
# apart from chat.postMessage.
SLACK_OPENS_PER_SECOND = 50 / 60
MAX_OPEN_RETRIES = 3  # 429s on one open waited out within one send
OPENING = "open a DM"  # the opens' key in a `SendLimits` shared with posts (Discord)


class DmChannels:
    """Reference of a personal digest -> the id of its DM channel.

    `db` gives the calling thread's database (`Services.db`); None keeps the ids in
    memory only (one command-line send). A database that fails (busy, read-only) costs
    only a reopen later: the id stays in memory and the send goes on."""

    def __init__(self, db: Callable[[], Store] | None = None) -> None:
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

    async def opened(
        self,
        reference: str,
        open_dm: Callable[[], Awaitable[str]],
        limits: SendLimits | None,
        *,
        post_turn: tuple[SendLimits, str] | None = None,
        key: str = OPENING,
    ) -> str:
        """Open the DM channel of `reference` with `open_dm` (the platform's call: the DM
        channel's id, or a `TransientError` with `rate_limited` for a 429; any other error
        goes to the caller as it is) and remember its id.

        Each call first takes a turn of `limits` (under `key`): the waits for those turns
        are inside a send, bounded by its timeout and its claim, so together they are no
        longer than the limits' `max_wait` (else they could outlast the send's timeout,
        which counts as an attempt). A 429 is told to
        `limits` (an open's pause, or a global one: its `scope`) and the open tried again
        after it, up to `MAX_OPEN_RETRIES` times. Beyond, or when the turn is further off
        than what is left of `max_wait`, raises a rate-limited `TransientError` of the
        channel's scope (it says nothing about posting): the delivery gives the attempt
        back and sends it again after the wait, or leaves it to the outbox. `post_turn`
        (the posting limits, the channel's key): once opened, a turn of those is taken for
        the post, as above (the DM stays remembered if that raises)."""
        refused = 0
        deadline = limits.monotonic() + limits.max_wait if limits is not None else 0.0
        while True:
            if limits is not None:
                left = max(deadline - limits.monotonic(), 0.0)
                await _turn(limits, key, "opening DMs", within=left)
            try:
                channel_id = await open_dm()
            except TransientError as exc:
                if not exc.rate_limited:
                    raise
                refused += 1
                if limits is not None:
                    limits.limited(key, pause_seconds(exc.retry_after), exc.scope)
                if limits is None or refused > MAX_OPEN_RETRIES:
                    raise TransientError(
                        f"{exc.reason} (opening the DM)",
                        retry_after=exc.retry_after,
                        rate_limited=True,
                    ) from None
                log.info(
                    "opening the DM of %s rate limited (%s); trying again after the wait",
                    reference,
                    exc.reason,
                )
                continue
            self.put(reference, channel_id)
            if post_turn is not None:
                await _turn(*post_turn, "posting")
            return channel_id

    def open_delay(self, reference: str, limits: SendLimits | None, key: str = OPENING) -> float:
        """Seconds before a send to `reference` could open its DM (0: its DM is known, or
        an open may go now): the posters' `ready_in`, which the delivery asks before it
        takes a posting turn. A send whose open is further off than the limits' `max_wait`
        would take that turn, and its claim, only to give both back (`opened`), holding
        every channel's posts back."""
        if limits is None or self.get(reference) is not None:
            return 0.0
        return limits.delay(key)

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


async def _turn(limits: SendLimits, key: str, what: str, within: float | None = None) -> None:
    """A turn of `limits` within `within` seconds (default: its `max_wait`), or a
    rate-limited `TransientError`."""
    try:
        await limits.wait_turn(key, within=limits.max_wait if within is None else within)
    except Throttled as exc:
        raise TransientError(
            f"{what} is rate limited for {exc.seconds:.0f} s",
            retry_after=exc.seconds,
            rate_limited=True,
        ) from None
