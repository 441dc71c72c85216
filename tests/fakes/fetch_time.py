"""Time for fetch tests: `sleep` records the wait and moves `clock` on; nothing waits."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeTime:
    now: float = 1000.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
