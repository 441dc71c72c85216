"""Delivery through the outbox against a rate-limited fake Slack and Discord.

    .venv/bin/python -m bench.delivery [--channels 1000] [--parts 3] [--platform both]

For each platform, in a fresh database: 1,000 channels, each with one recorded digest of
`--parts` messages (real papers of the synthetic corpus, rendered by Paperboy's own
renderers: 96 items make 3 Slack messages, 21 make 3 Discord ones), queued in
the outbox. Then the real delivery path delivers them: `DigestScheduler.deliver_due` (the
outbox loop of `paperboy run`: `bot/delivery.py` through the real `SlackPoster` on
slack_sdk, or `DiscordPoster` on discord.py), called again whenever messages wait to retry,
until the outbox is empty (or `--max-seconds`, then the scheduler is stopped as
`paperboy run` stops it).

The fake platform runs in a process of its own (as the real one is elsewhere: its clock is
not slowed by the sender's work) and enforces, per `tests/fakes/rate_limits.py`, a token
bucket per channel and a global one, answering a post over either as the real service does
(Slack: 429 with Retry-After; Discord: 429 with retry_after, X-RateLimit-* headers):

- Discord, its real limits: 5 messages per 5 s per channel (1/s, burst 5) and 50 requests
  a second per bot (burst 50: one second's worth);
- Slack, 1 message a second per channel (burst 3: "short bursts >1 allowed"), and the same
  global 50/s (burst 50) for the workspace-wide limit, which Slack does not publish
  ("several hundred messages per minute", 5-10/s): 5 to 10 times the real one, so that
  3,000 messages take a minute, not ten, and so that a sender needs 5 to 10 times more
  channels in flight than for the real limit. Paperboy is told that limit as a user would
  (`PAPERBOY_SLACK_POSTS_PER_SECOND=50`; a tree without that setting ignores it).

Figures (one JSON line): messages, seconds, the achieved rate (messages sent / seconds)
and the allowed rate: the messages over the time a perfect sender needs for this workload
under these limits (`RateLimits.shortest_time`: the global bucket lets `burst + rate * t`
messages through by time t, each channel's bucket its own `burst + rate * t`; so 3,000
messages at 50/s with a burst of 50 need 59 s, an allowed rate of 50.8/s), and their
ratio, the share of the allowed rate achieved. The 429s the fake answered (total, global,
the most any one channel got); lost (a message queued but never posted, given up, or
recorded as sent without reaching the fake) and duplicates (a message posted more than
once: Slack by channel and content, Discord by nonce and by channel and content); peak RSS
of this process while delivering; how late its event loop woke a 50 ms sleeper (p50, p99,
max: the outbox bookkeeping runs on the loop).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import multiprocessing
import resource
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SLACK_TOKEN = "xoxb-1234567890-bench-token"
GUILD = "111111111111111111"
PAPERS = 400  # distinct papers the digests draw their items from
TEMPLATES = 8  # distinct digests (item windows), shared by the channels in turn
LIMITS = {
    "slack": {"channel_rate": 1.0, "channel_burst": 3, "global_rate": 50.0, "global_burst": 50},
    "discord": {"channel_rate": 1.0, "channel_burst": 5, "global_rate": 50.0, "global_burst": 50},
}


def content_key(channel: str, content: Any) -> str:
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]
    return f"{channel}|{digest}"


# --- the fake, in its own process ---------------------------------------------------


def _fake_process(platform: str, limits: dict[str, Any], conn: Connection) -> None:
    asyncio.run(_serve_fake(platform, limits, conn))


async def _serve_fake(platform: str, limits: dict[str, Any], conn: Connection) -> None:
    from tests.fakes.discord_api import FakeDiscord
    from tests.fakes.rate_limits import RateLimits
    from tests.fakes.slack_api import FakeSlack

    fake: Any = (FakeSlack if platform == "slack" else FakeDiscord)(limits=RateLimits(**limits))
    await fake.start()
    conn.send(fake.port)
    loop = asyncio.get_running_loop()
    while True:
        command = await loop.run_in_executor(None, conn.recv)
        if command == "stats":
            conn.send(_fake_stats(platform, fake))
        else:
            break
    await fake.stop()


def _fake_stats(platform: str, fake: Any) -> dict[str, Any]:
    """What the fake saw: the posts it accepted (by key), and the 429s it answered."""
    posted: Counter[str] = Counter()
    by_content: Counter[str] = Counter()
    if platform == "slack":
        for args in fake.accepted():
            key = content_key(str(args["channel"]), [args.get("text"), args.get("blocks")])
            posted[key] += 1
            by_content[key] += 1
    else:
        for message in fake.created:
            posted[str(message["nonce"])] += 1
            content = [message["content"], message["embeds"]]
            by_content[content_key(message["channel_id"], content)] += 1
    limits = fake.limits
    return {
        "posted": dict(posted),
        "by_content": dict(by_content),
        "refused": dict(limits.refused),
        "refused_global": limits.refused_global,
        "requests": len(fake.calls if platform == "slack" else fake.requests),
    }


# --- the workload ------------------------------------------------------------------


def channel_ids(platform: str, count: int) -> list[str]:
    if platform == "slack":
        return [f"slack:T0001/C{number:08d}" for number in range(count)]
    return [f"discord:{GUILD}/{400000000000000000 + number}" for number in range(count)]


def queue_workload(
    db: Any,
    platform: str,
    channels: list[str],
    parts: int,
    settings: Any,
    catalog: Any,
    now: datetime,
) -> dict[str, str]:
    """Record one digest of `parts` messages for each channel and queue it; returns the
    key of every queued message (Slack: channel and content; Discord: its nonce) -> channel."""
    from bot.delivery import message_key, queue_digest
    from bot.send import platform_messages
    from db import digests as digest_store
    from db.papers import decode
    from digests.channels import parse_channel
    from digests.digest import Digest, DigestItem, ensure_channel, schedule_of
    from digests.timestamps import stamp

    papers = [decode(row) for row in db.query("select * from papers order by id")]
    topics = tuple(catalog.topics[:3])

    def template(start: int, size: int) -> Digest:
        items = tuple(
            DigestItem(papers[(start + i) % len(papers)], (topics[i % 3],), 0.9 - i / 1000)
            for i in range(size)
        )
        return Digest("x", "2026-W02", topics, items, stamp(now), recorded=True, digest_id=0)

    size = 1
    while len(platform_messages(template(0, size), platform, "notice")) < parts:
        size += 1
    templates = []
    for number in range(TEMPLATES):
        digest = template(number * 37, size)
        messages = platform_messages(digest, platform, "notice")
        assert len(messages) == parts, (size, len(messages))
        templates.append((digest, messages))
    log.info("%d items make %d %s messages", size, parts, platform)
    expected: dict[str, str] = {}
    for number, channel in enumerate(channels):
        digest, messages = templates[number % TEMPLATES]
        row = ensure_channel(db, channel, settings, now)
        week = schedule_of(row).key(now)
        items = [
            {
                "paper_id": item.paper["id"],
                "topics": [t.id for t in item.topics],
                "score": item.score,
            }
            for item in digest.items
        ]
        recorded = digest_store.insert_digest(
            db, channel, week, stamp(now), [t.id for t in topics], items
        )
        mine = Digest(channel, week, topics, digest.items, stamp(now), True, int(recorded["id"]))
        queue_digest(db, mine, messages, now)
    name = parse_channel
    for row in db.query("select * from outbox"):
        payload = json.loads(row["payload"])
        ref = name(row["channel"])
        if platform == "slack":
            key = content_key(ref.name, [payload.get("text"), payload.get("blocks")])
        else:
            key = message_key(row)
        expected[key] = str(row["channel"])
    return expected


# --- delivering -----------------------------------------------------------------------


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux)


def _peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def drive(scheduler: Any, db: Any) -> None:
    """The outbox loop: deliver what is due, then wait for the next message due to retry."""
    while not scheduler.stopping:
        await scheduler.deliver_due(datetime.now(UTC))
        left, first = db.execute(
            "select count(*), min(next_attempt_at) from outbox "
            "where state in ('pending', 'sending')"
        ).fetchone()
        if not left:
            return
        wait = 0.05
        if first is not None:
            wait = max(wait, (datetime.fromisoformat(first) - datetime.now(UTC)).total_seconds())
        await asyncio.sleep(wait)


async def loop_lag(lags: list[float], every: float = 0.05) -> None:
    """How late the event loop wakes a sleeper (SQLite bookkeeping runs on the loop)."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(every)
        lags.append(loop.time() - start - every)


async def make_poster(platform: str, services: Any, url: str) -> tuple[Any, Any]:
    """The platform's real poster on the fake, and something to close after."""
    if platform == "slack":
        from bot.slack.client import make_client
        from bot.slack.poster import SlackPoster

        return SlackPoster(make_client(SLACK_TOKEN, url)), None
    from bot.discordbot.client import PaperboyClient, use_api_base
    from bot.discordbot.poster import DiscordPoster
    from tests.fakes.discord_interactions import TOKEN

    use_api_base(url)
    client = PaperboyClient(services)
    await client.login(TOKEN)
    return DiscordPoster(client), client


async def run_platform(
    platform: str, args: argparse.Namespace, papers_file: Path, folder: Path
) -> dict[str, Any]:
    from bench.corpus import INGESTED_AT
    from bot.scheduler import DigestScheduler
    from bot.services import Services
    from config.settings import load_settings
    from db import open_db
    from digests.ingest import ingest_files
    from digests.topics import load_catalog
    from tests.fakes.rate_limits import RateLimits

    limits = LIMITS[platform]
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_fake_process, args=(platform, limits, child), daemon=True)
    process.start()
    port = parent.recv()
    url = (
        f"http://127.0.0.1:{port}/api/"
        if platform == "slack"
        else f"http://127.0.0.1:{port}/api/v10"
    )
    db_path = folder / f"{platform}.db"
    # Paperboy is told the workspace's limit, as docs/how-to/service.md asks (no effect before the
    # setting existed); Discord's default is its real global limit.
    env = {
        "PAPERBOY_DB": str(db_path),
        "PAPERBOY_SLACK_POSTS_PER_SECOND": str(LIMITS["slack"]["global_rate"]),
        **dict(args.env),
    }
    settings = load_settings(env, dotenv=None)
    catalog = load_catalog()
    db = open_db(db_path)
    now = INGESTED_AT + timedelta(days=1)
    ingest_files(db, [papers_file], now=INGESTED_AT)
    channels = channel_ids(platform, args.channels)
    expected = queue_workload(db, platform, channels, args.parts, settings, catalog, now)
    total = len(expected)
    services = Services(db_path, settings, catalog, clock=lambda: datetime.now(UTC))
    poster, closer = await make_poster(platform, services, url)
    scheduler = DigestScheduler(services, {platform: poster})
    _reset_peak_rss()
    lags: list[float] = []
    probe = asyncio.ensure_future(loop_lag(lags))
    start = time.perf_counter()
    task = asyncio.ensure_future(drive(scheduler, services.db()))
    try:
        await asyncio.wait_for(asyncio.shield(task), args.max_seconds)
        cut_off = False
    except TimeoutError:
        cut_off = True
        scheduler.halt()  # no new send starts; those under way finish
        await task
    elapsed = time.perf_counter() - start
    probe.cancel()
    peak = _peak_rss_mb()
    lags.sort()
    if closer is not None:
        await closer.close()
    parent.send("stats")
    seen = parent.recv()
    parent.send("stop")
    process.join(10)
    states = Counter(row["state"] for row in db.query("select state from outbox"))
    posted = Counter(seen["posted"])
    unsent = sum(states.get(state, 0) for state in ("pending", "sending", "paused"))
    missing = [key for key in expected if key not in posted]
    unexpected = [key for key in posted if key not in expected]
    duplicates = sum(count - 1 for count in posted.values() if count > 1)
    duplicates += (
        sum(count - 1 for count in seen["by_content"].values() if count > 1)
        if platform == "discord"
        else 0
    )
    refused = Counter(seen["refused"])
    shortest = RateLimits(**limits).shortest_time([args.parts] * len(channels))
    allowed = total / shortest
    rate = len(posted) / elapsed
    return {
        "messages": total,
        "posted": len(posted),
        "elapsed_s": round(elapsed, 1),
        "cut_off": cut_off,
        "rate": round(rate, 1),
        "allowed_rate": round(allowed, 1),
        "share": round(rate / allowed, 3),
        "429s": sum(refused.values()),
        "429s_global": seen["refused_global"],
        "max_429_per_channel": max(refused.values(), default=0),
        "channels_with_429": len(refused),
        # unsent: still queued when cut off; lost: the rest of those never posted (given
        # up, or recorded as sent without reaching the fake)
        "lost": len(missing) - unsent,
        "unsent": unsent,
        "duplicates": duplicates,
        "unexpected": len(unexpected),
        "outbox": dict(states),
        "requests": seen["requests"],
        "peak_rss_mb": peak,
        "loop_lag_ms": {
            "p50": round(1000 * lags[len(lags) // 2], 1) if lags else None,
            "p99": round(1000 * lags[int(len(lags) * 0.99)], 1) if lags else None,
            "max": round(1000 * lags[-1], 1) if lags else None,
        },
        "concurrency": settings.delivery_concurrency,
        "limits": limits,
    }


def main() -> int:
    from bench import corpus

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--parts", type=int, default=3, help="messages per channel's digest")
    parser.add_argument("--platform", choices=["slack", "discord", "both"], default="both")
    parser.add_argument("--max-seconds", type=float, default=150.0, help="then stop delivering")
    parser.add_argument(
        "--papers", type=int, default=0, help="(unused: the store size does not matter here)"
    )
    parser.add_argument(
        "--env", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
        help="NAME=VALUE, a setting for Paperboy (repeatable)",
    )  # fmt: skip
    args = parser.parse_args()
    if not corpus.available():
        print(f"skipped: {corpus.SOURCE} is not here", file=sys.stderr)
        return 0
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("discord").setLevel(logging.ERROR)  # one warning line per 429
    logging.getLogger("bot.ratelimits").setLevel(logging.INFO)  # what the limiter learns
    papers_file = corpus.jsonl_path(PAPERS)
    platforms = ["slack", "discord"] if args.platform == "both" else [args.platform]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for platform in platforms:
            results[platform] = asyncio.run(run_platform(platform, args, papers_file, Path(folder)))
            print(f"{platform}: {json.dumps(results[platform])}", file=sys.stderr, flush=True)
    shares = [result["share"] for result in results.values()]
    print(
        json.dumps(
            {
                "bench": "delivery",
                "papers": PAPERS,
                "channels": args.channels,
                "parts": args.parts,
                **results,
                "reference": {p: {"allowed_rate": r["allowed_rate"]} for p, r in results.items()},
                "ratio": min(shares),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
