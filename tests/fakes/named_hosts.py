"""Host names that resolve to chosen addresses, for the redirect tests."""

from __future__ import annotations

import errno
import socket

from aiohttp.abc import AbstractResolver, ResolveResult


class NamedHosts(AbstractResolver):
    """A resolver over a table: each name answers its addresses in turn (the last one
    again once they run out); every lookup is recorded."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups.append(host)
        answers = self.table.get(host)
        if not answers:
            raise OSError(errno.ENOENT, f"no such test host {host}")
        address = answers[min(self.lookups.count(host), len(answers)) - 1]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            ResolveResult(hostname=host, host=address, port=port, family=family, proto=0, flags=0)
        ]

    async def close(self) -> None:
        pass
