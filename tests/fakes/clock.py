"""A fake clock: callable like the `clock=` the services and the scheduler take, and set
by the test (`clock.now = ...`) to move time on."""

from __future__ import annotations

import logging
from datetime import datetime

log = logging.getLogger(__name__)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now
