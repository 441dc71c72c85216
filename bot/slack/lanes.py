"""Where a Slack request's database work runs: its caller's writer lane, else a thread."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

from bot.services import Services

log = logging.getLogger(__name__)

T = TypeVar("T")


async def run_in(
    services: Services, executor: Executor | None, fn: Callable[..., T], *args: Any
) -> T:
    """`fn(*args)` in `executor` (a caller's lane), or in a thread of the services when
    there is none."""
    if executor is None:
        return await services.in_thread(fn, *args)
    return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)
