"""What a user is told when a command or a click fails on our side: the same words on Slack,
Discord and the terminal, never a stack trace. A database that is down or busy says so."""

from __future__ import annotations

import logging

from db.errors import Busy, Unavailable

log = logging.getLogger(__name__)

FAILURE = "Sorry, something went wrong on my side. It is logged; please try again later."
UNAVAILABLE = "Database unavailable, try again in a minute: nothing was changed."
BUSY = "The database is busy, try again in a moment: nothing was changed."


def failure_text(exc: BaseException) -> str:
    """The line for a user whose command failed with `exc`."""
    if isinstance(exc, Unavailable):
        return UNAVAILABLE
    if isinstance(exc, Busy):
        return BUSY
    return FAILURE


def log_failure(logger: logging.Logger, exc: BaseException, what: str, *args: object) -> None:
    """Log a failed command: a database that is down or busy is one warning line (an outage
    fails every command alike), anything else an error with its traceback."""
    if isinstance(exc, Unavailable | Busy):
        logger.warning("%s: %s", what % args, exc)
    else:
        logger.error("%s", what % args, exc_info=exc)
