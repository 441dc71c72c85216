"""Waiting for something that happens on another task or thread, without fixed sleeps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def eventually(condition: Callable[[], object], seconds: float = 20.0) -> bool:
    """Poll `condition` until it holds (True) or `seconds` pass (False). Returns as soon
    as it holds, so the generous limit only matters on a loaded machine."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def wait_for(condition: Callable[[], object], seconds: float = 30.0) -> bool:
    """`eventually` for plain threads (tests that watch a subprocess): poll `condition`
    until it holds (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
