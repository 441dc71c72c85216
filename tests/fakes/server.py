"""Serving a fake on a free loopback port."""

from __future__ import annotations

from aiohttp import web


async def serve(app: web.Application) -> tuple[web.AppRunner, int]:
    """Start `app` on 127.0.0.1 and a free port; returns the runner (to clean up) and port."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


class ServedInThread:
    """`app` served on loopback by an event loop in a thread of its own, for code under
    test that runs its own loop (`asyncio.run` in a CLI command, a subprocess). Use as a
    context manager; `.port` is the port."""

    def __init__(self, app: web.Application) -> None:
        import asyncio
        import threading

        self.app = app
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import asyncio

        asyncio.set_event_loop(self.loop)
        self.runner, self.port = self.loop.run_until_complete(serve(self.app))
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.runner.cleanup())
        self.loop.close()

    def __enter__(self) -> ServedInThread:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
