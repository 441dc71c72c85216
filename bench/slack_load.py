"""The Slack HTTP endpoint under load and under attack, bolt's old path beside the new one.

    .venv/bin/python -m bench.slack_load [--commands 500] [--loris 3000] [--paths old,new]

For each path, on a fresh copy of the store (a cold start: new threads, new connections),
with a fake Slack Web API and response_url on loopback, a client in another process:

1. `burst`: sends --commands signed slash commands at once (a mix of find, show, topics,
   list, help, subscribe) and reports the time to each HTTP answer (p50/p95/p99/max), the
   statuses, how many ran, and how many were answered "Working on it…";
2. `noisy`: 16 unsigned 900 KB nested-JSON `payload=` bodies in a loop, while 20 signed
   `help` commands go one after another: their latency;
3. `loris`: --loris connections that send half a request line and stall, then 20 signed
   `help` commands: answered or not, and their latency. The server process's
   soft file limit is set to 2,048 descriptors (a common default), so the old path runs
   out of them.

old = bolt's AsyncApp.web_app() on aiohttp (ack budget 2 s), as `paperboy run --slack-http`
served it; new = bot.slack.http.HttpServer + bot.slack.endpoint.SlackEndpoint
with the default settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bot.logs import configure

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "iclr2021-openreview.tsv"
SECRET = "8f742231b10e8888abcd99aaabbb85a5"
TOKEN = "xoxb-1234567890-bench-token"
SERVER_FILE_LIMIT = 2048
TEXTS = [
    "find offline reinforcement learning", "find graph neural networks", "topics", "list",
    "help", "find contrastive learning", "help subscribe", "find GAN", "status",
    "find meta-learning few-shot",
]  # fmt: skip


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def sign(body: str, stamp: str) -> str:
    from bot.slack.verify import sign as v0

    return v0(SECRET.encode(), stamp.encode(), body.encode())


def slash(text: str, n: int, response_url: str) -> str:
    return urlencode(
        {
            "team_id": "T0001",
            "channel_id": f"C{n % 50:04d}",
            "user_id": f"U{n:05d}",
            "user_name": f"user{n}",
            "command": "/papers",
            "text": text,
            "response_url": response_url,
            "trigger_id": f"t{n}",
        }
    )


# The client side, in its own process so that it does not share the server's CPU.


async def sink_main() -> None:
    """Slack's side of response_url, in its own process: counts the answers posted to it;
    GET /count tells how many. Prints its port, then serves until killed."""
    from aiohttp import web

    posted = [0]

    async def respond(request: web.Request) -> web.Response:
        await request.read()
        posted[0] += 1
        return web.Response(text="ok")

    async def count(request: web.Request) -> web.Response:
        return web.json_response(posted[0])

    app = web.Application()
    app.router.add_post("/respond/{name}", respond)
    app.router.add_get("/count", count)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    await asyncio.Event().wait()


async def client_main(scenario: str, port: int, count: int, sink: int) -> dict[str, Any]:
    import aiohttp

    async with aiohttp.ClientSession() as session:

        async def posted() -> int:
            async with session.get(f"http://127.0.0.1:{sink}/count") as response:
                return int(await response.json())

        before = await posted()
        start = time.perf_counter()
        result = await _client(scenario, port, count, f"http://127.0.0.1:{sink}/respond")
        working = sum(1 for _, _, raw in result["results"] if "Working on it" in raw)
        deadline = time.monotonic() + 30
        while (responses := await posted() - before) < working and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        answered = time.perf_counter() - start if working else None
    result.update(working=working, responses=responses, answered=answered)
    return result


async def _client(scenario: str, port: int, count: int, respond: str) -> dict[str, Any]:
    import aiohttp

    url = f"http://127.0.0.1:{port}/slack/events"
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def signed(text: str, n: int, wait: float = 60) -> tuple[float, int, str]:
            body = slash(text, n, f"{respond}/r{n}")
            stamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": sign(body, stamp),
            }
            start = time.perf_counter()
            try:
                async with asyncio.timeout(wait):
                    async with session.post(url, data=body, headers=headers) as response:
                        raw = await response.text()
                        status = response.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                raw, status = type(exc).__name__, 0
            return time.perf_counter() - start, status, raw[:200]

        if scenario == "burst":
            texts = [
                "subscribe offline-rl" if n % 10 == 9 else TEXTS[n % len(TEXTS)]
                for n in range(count)
            ]
            results = await asyncio.gather(*(signed(text, n) for n, text in enumerate(texts)))
            return {"results": results}
        if scenario == "noisy":
            stop = asyncio.Event()
            nested = "[" * 150_000 + "]" * 150_000  # 900 KB once form-encoded
            noise = urlencode({"payload": '{"type":"block_actions","x":' + nested + "}"})

            async def unsigned() -> None:
                while not stop.is_set():
                    headers = {
                        "Content-Type": "application/x-www-form-urlencoded",
                        "X-Slack-Request-Timestamp": str(int(time.time())),
                        "X-Slack-Signature": "v0=" + "0" * 64,
                    }
                    try:
                        async with session.post(url, data=noise, headers=headers) as response:
                            await response.read()
                    except (aiohttp.ClientError, TimeoutError):
                        await asyncio.sleep(0.01)

            noisy = [asyncio.create_task(unsigned()) for _ in range(16)]
            await asyncio.sleep(1.0)
            results = [await signed("help", n, wait=10) for n in range(20)]
            stop.set()
            await asyncio.gather(*noisy, return_exceptions=True)
            return {"results": results}
        # loris
        writers = []
        opened = 0
        for _ in range(count):
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
                writer.write(b"POST /slack/ev")
                writers.append(writer)
                opened += 1
            except (OSError, TimeoutError):
                break
        await asyncio.sleep(1.0)
        results = []
        for n in range(20):  # one after another; three failures are enough to know
            results.append(await signed("help", n, wait=10))
            if sum(1 for _, status, _ in results if status != 200) >= 3:
                break
        for writer in writers:
            writer.transport.abort()
        return {"results": results, "opened": opened}


# The server side.


async def serve(path: str, db_path: Path, scenario: str, count: int, sink: int) -> dict[str, Any]:
    from aiohttp import web

    from bot.services import Services
    from bot.slack import app as slack_app
    from bot.slack.client import make_client
    from bot.slack.endpoint import SlackEndpoint
    from bot.slack.http import HttpServer, http_limits
    from config.settings import load_settings
    from digests.topics import load_catalog
    from tests.fakes.slack_api import FakeSlack

    fake = await FakeSlack().start()  # the Web API (bolt's auth.test); answers go to the sink
    api_url = fake.api_url
    settings = load_settings(
        {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": api_url},
        dotenv=None,
    )
    services = Services(db_path, settings, load_catalog())
    client = make_client(TOKEN, api_url)
    ran: list[str] = []
    real_handle = getattr(slack_app, "handle")  # noqa: B009 (patched below, restored after)

    def counting(text: str, ctx: Any) -> Any:
        ran.append(text)
        return real_handle(text, ctx)

    setattr(slack_app, "handle", counting)  # noqa: B010
    runner = server = endpoint = None
    try:
        if path == "old":
            app = slack_app.create_app(services, client, signing_secret=SECRET)
            runner = web.AppRunner(app.web_app(), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        else:
            endpoint = SlackEndpoint(
                services, client, signing_secret=SECRET, ack_budget=settings.slack_ack_seconds
            )
            stats: list[float] = []  # seconds from a request's headers to its answer

            async def timed(request: Any) -> Any:
                response = await endpoint(request)
                stats.append(asyncio.get_running_loop().time() - request.received)
                return response

            server = HttpServer(timed, http_limits(settings), host="127.0.0.1")
            port = await server.start()
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.slack_load", "--client", scenario, str(port),
            str(count), str(sink),
            stdout=asyncio.subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip
        out, _ = await process.communicate()
        result: dict[str, Any] = json.loads(out)
        result["ran"] = len(ran)
        if server is not None:
            result["evicted"] = server.evicted
            result["handled_p99"] = percentile(stats, 0.99)
        return result
    finally:
        setattr(slack_app, "handle", real_handle)  # noqa: B010
        if server is not None:
            await server.stop()
        if endpoint is not None:
            await endpoint.close()
        if runner is not None:
            await runner.cleanup()
        await fake.stop()


def summary(result: dict[str, Any]) -> str:
    times = [seconds for seconds, _, _ in result["results"]]
    statuses: dict[int, int] = {}
    for _, status, _ in result["results"]:
        statuses[status] = statuses.get(status, 0) + 1
    shown = ", ".join(f"{status or 'failed'}×{n}" for status, n in sorted(statuses.items()))
    return (
        f"p50 {statistics.median(times):.2f} s  p95 {percentile(times, 0.95):.2f} s  "
        f"p99 {percentile(times, 0.99):.2f} s  max {max(times):.2f} s  [{shown}]"
    )


def make_store(folder: Path) -> tuple[Path, str]:
    from db import open_db
    from digests.ingest import ingest_files
    from digests.samples import sample_paths

    template = folder / "template.db"
    corpus = [CORPUS] if CORPUS.is_file() else list(sample_paths())
    ingest_files(open_db(template), corpus, now=datetime.now(UTC))
    name = "ICLR 2021 (2,966 papers)" if CORPUS.is_file() else "the 38 seed papers"
    return template, name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=500)
    parser.add_argument("--loris", type=int, default=3000)
    parser.add_argument("--paths", default="old,new")
    parser.add_argument("--scenarios", default="burst,noisy,loris")
    parser.add_argument(
        "--log-level", default="critical", help="server log level (debug: as in the issue)"
    )
    parser.add_argument("--client", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--sink", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client or args.sink:  # the limit below is the server's alone
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.client:
        scenario, port, count, sink = args.client
        print(json.dumps(asyncio.run(client_main(scenario, int(port), int(count), int(sink)))))
        return 0
    if args.sink:
        asyncio.run(sink_main())
        return 0
    configure(args.log_level)  # Paperboy's own set-up (the old path logs a line per failure)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(SERVER_FILE_LIMIT, hard), hard))
    sink = subprocess.Popen(
        [sys.executable, "-m", "bench.slack_load", "--sink"], stdout=subprocess.PIPE, cwd=ROOT
    )
    assert sink.stdout is not None
    sink_port = int(sink.stdout.readline())
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        template, corpus = make_store(folder)
        print(f"store: {corpus}; server file limit {SERVER_FILE_LIMIT}", flush=True)
        for scenario in args.scenarios.split(","):
            count = args.loris if scenario == "loris" else args.commands
            for path in args.paths.split(","):
                db_path = folder / f"{scenario}-{path}.db"
                shutil.copy(template, db_path)
                result = asyncio.run(serve(path, db_path, scenario, count, sink_port))
                extra = f"ran {result['ran']}, working {result['working']}"
                extra += f", response_url {result['responses']}"
                if "opened" in result:
                    extra += f", loris opened {result['opened']}"
                if "evicted" in result:
                    extra += f", evicted {result['evicted']}"
                    extra += f", server-side p99 {result['handled_p99']:.2f} s"
                if result.get("answered") is not None:
                    extra += f", all answers in {result['answered']:.1f} s"
                print(f"{scenario:5} {path:3}  {summary(result)}  {extra}", flush=True)
    sink.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
