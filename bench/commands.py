"""`/papers find` and `/papers subscribe` latency through the Slack HTTP endpoint, 50 at once.

    .venv/bin/python -m bench.commands --papers 100000 [--requests 600] [--concurrency 50]
    .venv/bin/python -m bench.commands --db PATH          # a ready database of your own

The server is Paperboy's own: `bot.slack.http.HttpServer` + `bot.slack.endpoint.SlackEndpoint`
with the default settings (ack budget, limits, threads), on a private copy of
`bench.corpus.ready_db(N)`. The client runs in another process (it must not share the
server's interpreter): it hosts the fake Slack Web API and the `response_url`s
(`tests.fakes.slack_api.FakeSlack`, noting when each answer arrives), and keeps
`--concurrency` signed slash commands in flight (real form fields, signed as Slack signs
them): each of the `--concurrency` users sends its next command once it has the answer to
the last one (the ack, or the `response_url` post after "Working on it…"), until
`--requests` have been answered, half `find <query>`, half `subscribe <topic>`
(a catalog topic, each in a channel of its own, so each one writes).

Per request, on the client's clock from just before the POST:
- `ack`: until the HTTP answer (Slack shows an error if it takes over 3 s);
- `answer`: until the user has the answer: the ack itself when it carries the answer,
  otherwise when the answer's first message reaches the fake `response_url` (the ack
  was "Working on it…"). This is the latency the goal (p99 < 300 ms) is about.
Errors: a status other than 200, an answer that never came within 30 s, or an answer
that is Paperboy's failure or "too busy" message.

Reference, in the same run, on the same database: the same commands through the core
handler in-process, one after another (`payloads(handle(text, ctx))`: parse, query,
render), half before the load and half after; `ratio` = loaded answer p99 / serial p99.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.slack_load import percentile

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
SECRET = "8f742231b10e8888abcd99aaabbb85a5"
TOKEN = "xoxb-1234567890-bench-token"
WARMUP = 20
ANSWER_WAIT = 30.0
KINDS = ("find", "subscribe")
RUNS = itertools.count()
# Four kinds, as the lookup benchmark: method names, 2-3-word topics, common, rare words.
QUERIES = [
    "graph neural networks", "offline reinforcement learning", "contrastive learning",
    "GAN", "BERT", "transformer", "meta-learning few-shot", "diffusion policy",
    "learning", "neural network", "model", "adversarial examples robustness",
    "knowledge distillation", "variational autoencoder", "federated learning privacy",
    "lottery ticket", "hypernetwork", "wasserstein", "equivariance", "curriculum",
    "PPO", "self-supervised representation", "neural architecture search", "optimal transport",
]  # fmt: skip


def stats_ms(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(statistics.median(values) * 1000, 1),
        "p99": round(percentile(values, 0.99) * 1000, 1),
        "max": round(max(values) * 1000, 1),
    }


def commands(
    count: int, topics: list[str], prefix: str, kinds: tuple[str, ...] = KINDS
) -> list[tuple[str, str, str]]:
    """(kind, text, channel id) for `count` requests, the kinds taking turns."""
    made = []
    for n in range(count):
        kind, turn = kinds[n % len(kinds)], n // len(kinds)
        if kind == "find":
            made.append(("find", f"find {QUERIES[turn % len(QUERIES)]}", "CFIND"))
        else:
            made.append(("subscribe", f"subscribe {topics[turn % len(topics)]}", f"{prefix}{n}"))
    return made


# The client, in its own process.


async def client_main(
    count: int,
    concurrency: int,
    topics: list[str],
    kinds: tuple[str, ...],
    prefix: str,
    mode: str = "users",
) -> dict[str, Any]:
    import aiohttp
    from aiohttp import web

    from bot.slack.verify import sign
    from tests.fakes.slack_api import FakeSlack

    arrived: dict[str, float] = {}
    waiting: dict[str, asyncio.Event] = {}

    class TimedSlack(FakeSlack):
        async def _respond(self, request: web.Request) -> web.Response:
            name = request.match_info["name"]
            arrived.setdefault(name, time.perf_counter())
            waiting.setdefault(name, asyncio.Event()).set()
            return await super()._respond(request)

    fake = await TimedSlack().start()
    print(fake.port, flush=True)
    port = int(await asyncio.to_thread(sys.stdin.readline))
    url = f"http://127.0.0.1:{port}/slack/events"
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=60)
    results: list[dict[str, Any]] = []
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(n: int, kind: str, text: str, channel: str) -> dict[str, Any]:
            name = f"r{n}"
            body = urlencode({
                "token": "legacy", "team_id": "T0001", "team_domain": "lab",
                "channel_id": channel, "channel_name": "papers", "user_id": f"U{n % 97:05d}",
                "user_name": f"user{n % 97}", "command": "/papers", "text": text,
                "api_app_id": "A0001", "is_enterprise_install": "false",
                "response_url": fake.response_url(name), "trigger_id": f"1.2.{n}",
            })  # fmt: skip
            stamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": sign(SECRET.encode(), stamp.encode(), body.encode()),
            }
            start = time.perf_counter()
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    raw, status = await response.text(), response.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                raw, status = type(exc).__name__, 0
            acked = time.perf_counter()
            if "Working on it" in raw:  # this user waits for the answer before the next
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(ANSWER_WAIT):
                        await waiting.setdefault(name, asyncio.Event()).wait()
            return {"n": n, "kind": kind, "name": name, "start": start, "ack": acked - start,
                    "status": status, "raw": raw}  # fmt: skip

        async def run(work: list[tuple[int, str, str, str]]) -> list[dict[str, Any]]:
            done: list[dict[str, Any]] = []
            if mode == "burst":  # rounds of `concurrency` sent at once, each answered whole
                for start in range(0, len(work), concurrency):
                    round_ = work[start : start + concurrency]
                    done += await asyncio.gather(*(one(*item) for item in round_))
                return done
            queue = list(reversed(work))

            async def worker() -> None:
                while queue:
                    done.append(await one(*queue.pop()))

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return done

        warm = commands(WARMUP, topics, f"{prefix}W", kinds)
        await run([(-1 - n, *item) for n, item in enumerate(warm)])
        began, cpu = time.perf_counter(), time.process_time()
        results = await run(
            [(n, *item) for n, item in enumerate(commands(count, topics, f"{prefix}L", kinds))]
        )
        loaded, cpu = time.perf_counter() - began, time.process_time() - cpu
    texts = [str(call.get("text", ""))[:120] for call in fake.responses]
    await fake.stop()
    return {"results": results, "arrived": arrived, "seconds": loaded, "cpu": cpu,
            "response_texts": texts}  # fmt: skip


# The server, in this process.


def summarise(client: dict[str, Any]) -> dict[str, Any]:
    from bot.slack.app import FAILURE
    from bot.slack.endpoint import BUSY, STOPPED

    bad_texts = (FAILURE[:30], BUSY[:30], STOPPED[:30])
    out: dict[str, Any] = {}
    errors: dict[str, int] = {}
    for kind in ("find", "subscribe"):
        rows = [r for r in client["results"] if r["kind"] == kind]
        acks, answers = [], []
        in_ack = working = 0
        for row in rows:
            if row["status"] != 200:
                errors[f"status {row['status']}"] = errors.get(f"status {row['status']}", 0) + 1
                continue
            if any(text in row["raw"] for text in bad_texts):
                errors["failure message"] = errors.get("failure message", 0) + 1
            acks.append(row["ack"])
            if "Working on it" in row["raw"]:
                working += 1
                when = client["arrived"].get(row["name"])
                if when is None:
                    errors["no answer"] = errors.get("no answer", 0) + 1
                    continue
                answers.append(when - row["start"])
            else:
                in_ack += 1
                answers.append(row["ack"])
        out[kind] = {"ack_ms": stats_ms(acks), "answer_ms": stats_ms(answers),
                     "answered_in_ack": in_ack, "working_then_response_url": working}  # fmt: skip
    for text in client["response_texts"]:
        if any(bad in text for bad in bad_texts):
            errors["failure message"] = errors.get("failure message", 0) + 1
    out["errors"] = errors
    return out


def reference(services: Any, items: list[tuple[str, str, str]]) -> list[tuple[str, float]]:
    """The core of each command in-process, one after another: parse, query, render."""
    from bot.slack.app import payloads
    from digests.commands import handle

    timings = []
    for kind, text, channel in items:
        start = time.perf_counter()
        payloads(handle(text, services.context(f"slack:T0001/{channel}", "@bench")))
        timings.append((kind, time.perf_counter() - start))
    return timings


def make_services(db_path: Path, api_url: str) -> Any:
    from bot.services import Services
    from config.settings import load_settings
    from digests.topics import load_catalog

    settings = load_settings(
        {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": api_url},
        dotenv=None,
    )
    return Services(db_path, settings, load_catalog())


async def load(
    db_path: Path, args: argparse.Namespace, topics: list[str], policy: str
) -> dict[str, Any]:
    """One load run against a fresh endpoint. `policy` "after" is today's endpoint;
    "nowait" the same with a queued command acknowledged at once (QUEUED_WAIT 0); "fifo"
    one pool for every command (no lane, no group commit) with QUEUED_WAIT; "before"
    emulates, in today's code, the former policy: one pool for every command, and a
    command that has to queue acknowledged at once ("Working on it…")."""
    from bot.slack import endpoint as endpoint_module
    from bot.slack.client import make_client
    from bot.slack.endpoint import SlackEndpoint
    from bot.slack.http import HttpServer, http_limits

    # A Slack channel id is capitals and digits: a lower-case one is refused ("is not a
    # channel"), and every loaded subscribe would time that refusal.
    prefix = f"C{policy.upper()}{next(RUNS)}"
    client = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.commands", "--client", str(args.requests),
        str(args.concurrency), ",".join(topics), args.kinds, prefix, args.mode,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip
    assert client.stdout is not None and client.stdin is not None
    api_url = f"http://127.0.0.1:{int(await client.stdout.readline())}/api/"
    services = make_services(db_path, api_url)
    endpoint = SlackEndpoint(
        services,
        make_client(TOKEN, api_url),
        signing_secret=SECRET,
        ack_budget=services.settings.slack_ack_seconds,
    )
    real_changes = endpoint_module.writes
    if args.queued_wait is not None:
        endpoint.queued_wait = args.queued_wait
    if policy in ("before", "nowait"):
        endpoint.queued_wait = 0.0
    if policy in ("before", "fifo"):
        endpoint_module.writes = lambda text: False  # type: ignore[assignment]
    server = HttpServer(endpoint, http_limits(services.settings), host="127.0.0.1")
    port = await server.start()
    cpu = time.process_time()  # this process, every thread: the loop and the commands
    try:
        client.stdin.write(f"{port}\n".encode())
        await client.stdin.drain()
        out, _ = await client.communicate()
        cpu = time.process_time() - cpu
    finally:
        endpoint_module.writes = real_changes  # type: ignore[assignment]
        await server.stop()
        await endpoint.close()
    result: dict[str, Any] = json.loads(out)
    summary = summarise(result)
    # Every loaded subscribe must have stored its subscription (its channel is new): an
    # answer that is a refusal is not a fast subscribe.
    made = commands(args.requests, topics, "", tuple(args.kinds.split(",")))
    wanted = sum(kind == "subscribe" for kind, _, _ in made)
    stored = (
        services.db()
        .execute(
            "select count(*) from subscriptions where channel like ?", [f"slack:T0001/{prefix}L%"]
        )
        .fetchone()[0]
    )
    summary["subscribes_stored"] = f"{stored} of {wanted}"
    if stored != wanted:
        summary["errors"]["subscribes not stored"] = wanted - stored
    summary["seconds"] = round(result["seconds"], 2)
    summary["commands_run"] = endpoint.commands_run - WARMUP
    # CPU per request, of the server (this process) and of the client (the other one,
    # which shares this machine's cores; Slack's side would not). Warm-up included.
    total = args.requests + WARMUP
    summary["cpu_ms_per_request"] = {
        "server": round(cpu * 1000 / total, 2),
        "client": round(result["cpu"] * 1000 / args.requests, 2),
    }
    return summary


async def serve(db_path: Path, args: argparse.Namespace, topics: list[str]) -> dict[str, Any]:
    """The load runs (the old policy first, with --compare), between the two halves of
    the serial reference."""
    services = make_services(db_path, "http://127.0.0.1/api/")
    half = args.requests // 2
    ref_items = commands(args.requests, topics, "CREF", tuple(args.kinds.split(",")))
    ref = await asyncio.to_thread(reference, services, ref_items[:half])
    policies = args.policies.split(",") if args.policies else ["after"]
    if args.compare and not args.policies:
        policies = ["before", "after"]
    runs = []
    for _ in range(args.repeat):
        for policy in policies:
            runs.append((policy, await load(db_path, args, topics, policy)))
    ref += await asyncio.to_thread(reference, services, ref_items[half:])
    mine = [summary for policy, summary in runs if policy == "after"] or [runs[-1][1]]
    summary = mine[-1]
    before = next((summary for policy, summary in runs if policy == "before"), None)
    summary["reference"] = {
        kind: stats_ms([seconds for k, seconds in ref if k == kind])
        for kind in ("find", "subscribe")
    }
    summary["reference"]["what"] = "same commands in-process, serially: payloads(handle(...))"
    summary["reference"]["seconds"] = round(sum(seconds for _, seconds in ref), 2)
    if before is not None:
        summary["before_policy"] = before
    if len(runs) > 2:
        summary["runs"] = [
            {"policy": policy, "seconds": run["seconds"],
             **{f"{kind}_answer_p99": run[kind]["answer_ms"].get("p99") for kind in KINDS},
             **{f"{kind}_answer_p50": run[kind]["answer_ms"].get("p50") for kind in KINDS}}
            for policy, run in runs
        ]  # fmt: skip
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--db", type=Path, default=None, help="a ready database (copied)")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--kinds", default=",".join(KINDS), help="find,subscribe (in turn)")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also run the `before` policy (one pool, a queued command acked at once), first",
    )
    parser.add_argument("--queued-wait", type=float, default=None, help="override QUEUED_WAIT")
    parser.add_argument("--policies", default="", help="after,before,nowait,fifo: load runs")
    parser.add_argument("--repeat", type=int, default=1, help="run the policies this often")
    parser.add_argument(
        "--mode",
        choices=["users", "burst"],
        default="users",
        help="users: each of --concurrency users sends its next command when answered; "
        "burst: rounds of --concurrency commands sent at once",
    )
    parser.add_argument("--client", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        count, concurrency, topics, kinds, prefix, mode = args.client
        result = asyncio.run(
            client_main(
                int(count),
                int(concurrency),
                topics.split(","),
                tuple(kinds.split(",")),
                prefix,
                mode,
            )
        )
        print(json.dumps(result))
        return 0
    from bench import corpus
    from bot.logs import configure
    from db import open_db
    from digests.topics import load_catalog

    if args.db is None and not corpus.available():
        print(f"skipped: {corpus.SOURCE} is not here", file=sys.stderr)
        return 0
    configure("error")
    source = args.db or corpus.ready_db(args.papers)
    topics = [topic.id for topic in load_catalog().topics]
    with tempfile.TemporaryDirectory(dir=os.environ.get("PAPERBOY_BENCH_TMP")) as folder:
        db_path = corpus.copy_db(source, Path(folder) / "commands.db")
        db = open_db(db_path)  # migrate once, up front, as `paperboy run` does
        with contextlib.suppress(ImportError):  # the search index beside the store, if any
            from db import text_index

            text_index.ready(db)  # built on the first lookup otherwise: not what we time
        db.close()
        papers = open_db(db_path).execute("select count(*) from papers").fetchone()[0]
        summary = asyncio.run(serve(db_path, args, topics))
    find_p99 = summary["find"]["answer_ms"].get("p99", 0)
    sub_p99 = summary["subscribe"]["answer_ms"].get("p99", 0)
    worst = max(find_p99, sub_p99)
    serial = max(
        summary["reference"]["find"].get("p99", 0), summary["reference"]["subscribe"].get("p99", 0)
    )
    line = {
        "bench": "commands",
        "papers": papers,
        "requests": args.requests,
        "concurrency": args.concurrency,
        "mode": args.mode,
        "p99_what": "ms from POST to the user having the answer (the ack if it carries "
        "it, else its arrival at response_url); ack_ms is the HTTP answer alone",
        **summary,
        "answer_p99_ms": worst,
        "goal_p99_ms": 300,
        "ratio": round(worst / serial, 2) if serial else None,
        "ratio_what": "worst loaded answer p99 / worst serial in-process p99",
        "cpus": os.cpu_count(),
    }
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
