"""Digests for many channels: a week of new papers on top of a store of N.

    .venv/bin/python -m bench.digest --papers 100000 --channels 10000

Copies the ready database of N papers (`bench.corpus`, ingested at INGESTED_AT), ingests a
week of new papers (`--new`, papers N+1.. of the same corpus) three days later, and makes
`--channels` weekly channels with 3 topics each: catalog topics (config/topics.toml) and
free-text ones (ICLR keywords: a shared pool most channels pick from, some unique), a
share of them with the backlog on. Each channel has a previous digest that reached it (one
`sent` message carrying two old papers), built an hour after the store was loaded. Then, a
week after the store, every channel's digest is built and recorded in one batch
(`build_digests`), in a child process: total seconds, ms per channel, peak RSS. Then, on a
fresh copy, the first `--single` channels one at a time (`build_digest`, unbatched): ms
per channel. With `--scheduler`, on another fresh copy, the scheduler's own path: every
channel's job fires at once, as APScheduler starts the jobs due at one moment
(`DigestScheduler._fire`, each channel's run: sources, inbox, build in a batch, queue,
delivery; no platform connected, so the messages stay queued):
total seconds, peak RSS, and how many `build_digests` calls built them. The channels are
Slack and Discord ones (`--platforms mixed`, the default: 60% / 40%, rendered as Block Kit
and embeds, as production renders them), or plain-text `local:` ones (`--platforms local`).

Reference, in the same run: the naive per-channel loop (the unbatched digest code, kept
here: read every candidate row, and with the backlog every stored paper, and score
each against each topic in Python), as previews on a sample of channels, before and after
the build, extrapolated to all channels (regular and backlog channels apart). The sample's
picks are compared with the recorded digests (`same_picks`: the same papers, in the same
order, from the archive or not); a backlog channel's archive picks may differ only where
the bounded archive search (`ARCHIVE_LIMIT`) left a paper out, reported as
`backlog_archive_overlap`.

Prints one JSON line (`cpu_seconds`: the worker process's CPU time, all threads, for the
same span: steadier than wall time on a shared machine). The prepared database is cached
in bench/.cache (per N, channels, schema). Machines here are shared and noisy: compare
ratios from one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.corpus import INGESTED_AT, available, cache_dir, copy_db, generate, load_source

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
PREVIOUS_AT = INGESTED_AT + timedelta(hours=1)  # every channel's previous digest
WEEK_AT = INGESTED_AT + timedelta(days=3)  # the week's new papers are stored
NOW = INGESTED_AT + timedelta(days=7)  # Monday 09:00 UTC: every channel's digest is due
FREE_SHARE = 0.35  # of subscriptions: free text (the rest: catalog topics)
UNIQUE_SHARE = 0.2  # of free-text subscriptions: a text no other channel is likely to have
POOL = 300  # shared free-text topics
# `--platforms mixed` (the default): channel i is a Slack channel unless i % 5 is 3 or 4
# (Discord), so 60% of digests are rendered as Block Kit and 40% as embeds, as production
# renders them; `local` makes plain-text `local:` channels.
SLACK_EVERY = (0, 1, 2)


def _ready(count: int, grow: bool = False) -> Path:
    """The ready database of `count` papers: for the current schema if built, else the
    newest one built (its missing migrations are applied by `open_db`, as on an upgrade),
    else, with `grow`, the 100k one grown to `count` (`_grown`), else built now."""
    from bench.corpus import ready_db

    found = sorted(  # a real one (Paperboy's ingest) before a grown one, then the newest
        cache_dir().glob(f"papers-{count}-s2021-g1-*.db"),
        key=lambda p: (not p.name.endswith("-grown.db"), p.stat().st_mtime),
    )
    found = [path for path in found if not path.name.endswith(".part.db")]
    if found:
        return found[-1]
    return _grown(count) if grow else ready_db(count)


def _grown(count: int) -> Path:
    """A stand-in for the ready database of `count` papers while Paperboy's ingest of that
    many is too slow to wait for: the 100k ready database, then papers 100,001..`count` of
    the same corpus appended by plain INSERTs of the columns a digest reads (title,
    abstract and its text, authors, url, stamps at INGESTED_AT) and the title key (else the
    next ingest backfills it, row by row), the full-text index kept by its triggers. No
    enrichment (derived titles, names, links): a digest scores title, names, keywords and
    abstract, and these papers have no names or keywords."""
    from bench.corpus import jsonl_path
    from digests.identity import title_key
    from digests.timestamps import stamp

    path = cache_dir() / f"papers-{count}-s2021-g1-grown.db"
    if path.exists():
        return path
    partial = path.with_suffix(".part.db")
    partial.unlink(missing_ok=True)
    copy_db(_ready(100_000), partial)
    import sqlite3

    at = stamp(INGESTED_AT)
    with sqlite3.connect(partial) as db, jsonl_path(count).open(encoding="utf-8") as lines:
        batch: list[tuple[Any, ...]] = []
        for number, line in enumerate(lines, start=1):
            if number <= 100_000:
                continue
            paper = json.loads(line)
            key = hashlib.sha256(paper["abstract"].encode()).hexdigest()[:16]
            batch.append((
                f"p{key}", paper["venue"], paper["year"], paper["title"], paper["abstract"],
                paper["abstract"], paper["url"], json.dumps(paper["authors"]), at, at,
                title_key(paper["title"]),
            ))  # fmt: skip
            if len(batch) == 20_000:
                _insert_papers(db, batch)
                batch = []
        _insert_papers(db, batch)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()  # before the rename: its -wal and -shm files carry the old name
    partial.replace(path)
    return path


def _insert_papers(db: Any, rows: list[tuple[Any, ...]]) -> None:
    db.executemany(
        "insert or ignore into papers (id, venue, year, title, abstract, abstract_text, url, "
        "authors, added_at, updated_at, title_key) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.commit()
    log.info("grown store: %d rows", db.execute("select max(rowid) from papers").fetchone()[0])


def _schema() -> str:
    return hashlib.sha256((ROOT / "db" / "migrations.py").read_bytes()).hexdigest()[:8]


def _topics_for(channels: int, seed: int = 11) -> list[list[tuple[str, str | None]]]:
    """Each channel's 3 subscriptions: (topic id, free text or None)."""
    from digests.topics import custom_topic, load_catalog

    rng = random.Random(seed)
    catalog_ids = load_catalog().ids
    keywords = sorted({k.lower() for p in load_source() for k in p.keywords if len(k) > 3})
    rng.shuffle(keywords)
    pool, rare = keywords[:POOL], keywords[POOL:]
    result = []
    for _ in range(channels):
        chosen: dict[str, str | None] = {}
        while len(chosen) < 3:
            if rng.random() >= FREE_SHARE:
                chosen.setdefault(rng.choice(catalog_ids), None)
                continue
            if rng.random() < UNIQUE_SHARE:
                text = f"{rng.choice(rare)} {rng.choice(rare)}"
            else:  # popular texts are shared by many channels (a Zipf-like draw)
                text = pool[min(int(rng.paretovariate(1.0)) - 1, POOL - 1)]
            topic = custom_topic(text)
            chosen.setdefault(topic.id, topic.custom_text)
        result.append(list(chosen.items()))
    return result


def prepare(papers: int, channels: int, new: int, backlog_share: float, grow: bool) -> Path:
    """The database for a run (cached): store, week of papers, channels, previous digests."""
    from db import open_db
    from digests.ingest import ingest_files
    from digests.timestamps import stamp

    store = _ready(papers, grow)
    kind = "grown" if store.name.endswith("-grown.db") else "ready"
    name = f"digest-{papers}-{channels}-{new}-{backlog_share}-{kind}-{_schema()}.db"
    path = cache_dir() / name
    if path.exists():
        return path
    partial = path.with_suffix(".part.db")
    partial.unlink(missing_ok=True)
    copy_db(store, partial)
    db = open_db(partial)
    with tempfile.TemporaryDirectory() as folder:
        week = Path(folder) / "week.jsonl"
        with week.open("w", encoding="utf-8") as out:
            for paper in generate(new, start=papers + 1):
                out.write(json.dumps(paper) + "\n")
        summary = ingest_files(db, [week], now=WEEK_AT)
        log.info("week: %s", summary.describe())
    rng = random.Random(7)
    old_ids = [row[0] for row in db.execute("select id from papers limit 20000").fetchall()]
    created, previous = stamp(INGESTED_AT), stamp(PREVIOUS_AT)
    names = [f"local:bench-{i:05d}" for i in range(channels)]
    with db.conn:
        db.conn.executemany(
            "insert into channels (id, platform, weekday, time, timezone, created_at, cadence, "
            "backlog) values (?, 'local', 'mon', '09:00', 'UTC', ?, 'weekly', ?)",
            [(name, created, int(rng.random() < backlog_share)) for name in names],
        )
        db.conn.executemany(
            "insert into subscriptions (channel, topic_id, custom_text, created_by, created_at) "
            "values (?, ?, ?, 'bench', ?)",
            [
                (name, topic_id, text, created)
                for name, topics in zip(names, _topics_for(channels), strict=True)
                for topic_id, text in topics
            ],
        )
        for name in names:
            picked = rng.sample(old_ids, 2)
            cursor = db.conn.execute(
                "insert into digests (channel, week, built_at, topics, empty, since) "
                "values (?, '2026-W02', ?, '[]', 0, ?)",
                [name, previous, stamp(PREVIOUS_AT - timedelta(days=7))],
            )
            digest_id = cursor.lastrowid
            db.conn.executemany(
                "insert into digest_items (digest_id, channel, paper_id, rank, topics, score) "
                "values (?, ?, ?, ?, '[]', 5.0)",
                [(digest_id, name, paper_id, rank) for rank, paper_id in enumerate(picked, 1)],
            )
            db.conn.execute(
                "insert into outbox (channel, digest_id, part, payload, paper_ids, state, "
                "attempts, created_at, sent_at) values (?, ?, 1, '{}', ?, 'sent', 1, ?, ?)",
                [name, digest_id, json.dumps(picked), previous, previous],
            )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    partial.replace(path)
    return path


def platform_mix(path: Path) -> None:
    """Make the bench's `local:` channels Slack and Discord ones (see SLACK_EVERY), in
    place, in every table that names a channel: what `--platforms mixed` runs on."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        names = [r[0] for r in conn.execute("select id from channels order by id")]
        pairs = []
        for index, name in enumerate(names):
            if index % 5 in SLACK_EVERY:
                pairs.append((name, f"slack:TBENCH/C{index:09d}", "slack"))
            else:
                pairs.append((name, f"discord:100000/{100000 + index}", "discord"))
        with conn:
            conn.execute("create temp table renamed (old text primary key, new text, platform)")
            conn.executemany("insert into renamed values (?, ?, ?)", pairs)
            conn.execute(
                "update channels set platform = (select platform from renamed where old = id), "
                "id = (select new from renamed where old = id)"
            )
            for table in ("subscriptions", "digests", "digest_items", "outbox"):
                conn.execute(
                    f"update {table} set channel = (select new from renamed where old = channel)"
                )
    finally:
        conn.close()


# --- the naive loop: the unbatched digest code, as previews ---------------------------

NAIVE_NEW = (
    "select * from papers where added_at <= :now and ("
    "(added_at >= :since and (published_at is null or published_at > :stale)) "
    "or (published_at > :since and published_at <= :now)) order by added_at"
)


def naive_items(db: Any, channel: str, now: datetime, catalog: Any, settings: Any) -> list[Any]:
    """The items the naive per-channel digest code picks: (paper id, from_archive)."""
    from db import digests as digest_store
    from db import outbox
    from db.channels import get_channel
    from db.papers import decode
    from digests.digest import new_since, subscribed_topics
    from digests.matching import PaperText, score
    from digests.timestamps import stamp

    row = get_channel(db, channel)
    topics = subscribed_topics(db, channel, catalog)
    since, stale = new_since(db, channel, now, settings)
    already = outbox.claimed_paper_ids(db, channel)
    built_at = stamp(now)
    fresh = [
        decode(r)
        for r in db.query(NAIVE_NEW, {"now": built_at, "since": since, "stale": stale})
        if r["id"] not in already
    ]
    fresh_ids = {p["id"] for p in fresh}
    carried = digest_store.picked_paper_ids(db, channel, built_at) - already - fresh_ids
    for paper_id in sorted(carried):
        rows = db.query("select * from papers where id = ? and added_at <= ?", [paper_id, built_at])
        fresh += [decode(r) for r in rows]
    archive: list[dict[str, Any]] = []
    if row and row.get("backlog"):
        fresh_ids = {p["id"] for p in fresh}
        archive = [
            decode(r)
            for r in db.query(
                "select * from papers where added_at <= ? order by added_at", [built_at]
            )
            if r["id"] not in already and r["id"] not in fresh_ids
        ]
    scores: dict[str, dict[str, float]] = {}
    old = {str(p["id"]) for p in archive}
    by_id = {str(p["id"]): p for p in [*archive, *fresh]}
    for paper in by_id.values():
        text = PaperText.of(paper)
        for topic in topics:
            value = score(text, topic.terms)
            if value >= catalog.threshold:
                scores.setdefault(topic.id, {})[str(paper["id"])] = value
    picked: dict[str, float] = {}
    for topic in topics:
        ranked = sorted(
            scores.get(topic.id, {}).items(),
            key=lambda pair: (
                pair[0] in old,
                -pair[1],
                str(by_id[pair[0]].get("added_at") or ""),
                pair[0],
            ),
        )
        for paper_id, value in ranked[: settings.digest_size]:
            picked[paper_id] = max(value, picked.get(paper_id, 0.0))
    items = sorted(((pid in old, -best, pid) for pid, best in picked.items()))
    return [(pid, archived) for archived, _, pid in items]


def _sample(db: Any, size: int, backlog: int) -> list[str]:
    regular = [r[0] for r in db.execute("select id from channels where backlog = 0 order by id")]
    with_backlog = [
        r[0] for r in db.execute("select id from channels where backlog = 1 order by id")
    ]
    step = max(len(regular) // max(size, 1), 1)
    return regular[::step][:size] + with_backlog[:backlog]


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """In a child process: build (or, `naive`, preview) digests; its own peak RSS."""
    from config.settings import load_settings
    from db import open_db
    from digests import digest as digest_module
    from digests.topics import load_catalog

    db = open_db(args.db)
    settings, catalog = load_settings({}, dotenv=None), load_catalog()
    channels = [r[0] for r in db.execute("select id from channels order by id")]
    backlog = {r[0] for r in db.execute("select id from channels where backlog = 1")}
    result: dict[str, Any] = {}
    if args.worker == "naive":
        times: dict[str, list[float]] = {"regular": [], "backlog": []}
        picks = {}
        for channel in _sample(db, args.sample, args.backlog_sample):
            start = time.perf_counter()
            picks[channel] = naive_items(db, channel, NOW, catalog, settings)
            times["backlog" if channel in backlog else "regular"].append(
                time.perf_counter() - start
            )
        result |= {"times": times, "picks": picks}
    elif args.worker == "scheduler":
        result |= _scheduler_run(args.db, channels, settings, catalog)
        result["picks"] = _picks(db, _sample(db, args.sample, args.backlog_sample))
    elif args.worker == "single":  # the scheduler's path before: one `build_digest` per channel
        sample = channels[: args.single]
        start = time.perf_counter()
        for channel in sample:
            digest_module.build_digest(db, channel, NOW, catalog=catalog, settings=settings)
        result["seconds"] = time.perf_counter() - start
        result["built"] = len(sample)
    else:
        start, cpu = time.perf_counter(), time.process_time()
        if hasattr(digest_module, "build_digests"):
            for _ in digest_module.build_digests(
                db, channels, NOW, catalog=catalog, settings=settings
            ):
                pass
        else:  # unbatched: one channel at a time
            for channel in channels:
                digest_module.build_digest(db, channel, NOW, catalog=catalog, settings=settings)
        result["seconds"] = time.perf_counter() - start
        result["cpu_seconds"] = time.process_time() - cpu
        result["items"] = db.execute("select count(*) from digest_items").fetchone()[0]
        result["picks"] = _picks(db, _sample(db, args.sample, args.backlog_sample))
    result["rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["channels"] = len(channels)
    return result


def _picks(db: Any, sample: list[str]) -> dict[str, list[tuple[str, bool]]]:
    """The recorded picks of this week's digests: (paper id, from the archive), in order."""
    return {
        channel: [
            (str(r[0]), bool(r[1]))
            for r in db.execute(
                "select paper_id, from_archive from digest_items i join digests d "
                "on d.id = i.digest_id where d.channel = ? and d.week = '2026-W03' "
                "order by rank",
                [channel],
            )
        ]
        for channel in sample
    }


def _scheduler_run(db: Path, channels: list[str], settings: Any, catalog: Any) -> dict[str, Any]:
    """Every channel's digest job fired at once, through the scheduler (see the docstring)."""
    import asyncio

    import bot.scheduler as scheduler_module
    from bot.scheduler import DigestScheduler
    from bot.services import Services

    calls: list[int] = []
    real = getattr(scheduler_module, "build_digests")  # noqa: B009 (replaced below)

    def counted(database: Any, names: Any, *args: Any, **kwargs: Any) -> Any:
        names = list(names)
        calls.append(len(names))
        return real(database, names, *args, **kwargs)

    setattr(scheduler_module, "build_digests", counted)  # noqa: B010 (a spy: counts the calls)
    scheduler = DigestScheduler(
        Services(db, settings, catalog, clock=lambda: NOW),
        {},
        configured={"local", "slack", "discord"},
    )

    async def fire_all() -> None:  # APScheduler: one task per job due, started together
        await asyncio.gather(*(scheduler._fire(channel) for channel in channels))

    start, cpu = time.perf_counter(), time.process_time()
    asyncio.run(fire_all())
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    check = scheduler.services.db()
    built = check.execute("select count(*) from digests where week = '2026-W03'").fetchone()[0]
    queued = check.execute(
        "select count(distinct channel) from outbox where state = 'pending'"
    ).fetchone()[0]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "built": built,
        "queued_channels": queued,
        "build_digests_calls": len(calls),
        "largest_batch": max(calls, default=0),
    }


def _child(kind: str, db: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "bench.digest", "--worker", kind, "--db", str(db),
        "--sample", str(args.sample), "--backlog-sample", str(args.backlog_sample),
        "--single", str(args.single),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} worker failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--new", type=int, default=3_000, help="the week's new papers")
    parser.add_argument("--backlog-share", type=float, default=0.01)
    parser.add_argument("--sample", type=int, default=20, help="naive: regular channels")
    parser.add_argument("--backlog-sample", type=int, default=1, help="naive: backlog channels")
    parser.add_argument(
        "--grow",
        action="store_true",
        help="no ready database of N papers: grow the 100k one by plain inserts (see _grown)",
    )
    parser.add_argument(
        "--naive-runs", type=int, choices=[1, 2], default=2, help="reference: before, after"
    )
    parser.add_argument(
        "--single", type=int, default=500, help="channels built one at a time (0: none)"
    )
    parser.add_argument(
        "--scheduler",
        action="store_true",
        help="also every channel's job fired at once through bot.scheduler (its own path)",
    )
    parser.add_argument(
        "--platforms",
        choices=["mixed", "local"],
        default="mixed",
        help="the channels' platforms: 60%% Slack, 40%% Discord (mixed), or plain text (local)",
    )
    parser.add_argument(
        "--worker",
        choices=["prepare", "build", "naive", "single", "scheduler"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "prepare":
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
        prepared = prepare(args.papers, args.channels, args.new, args.backlog_share, args.grow)
        print(json.dumps({"db": str(prepared)}))
        return 0
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    if not available():
        print("skipped: ../shared/corpora is not here", file=sys.stderr)
        return 0
    # In a child of its own: Linux keeps a process's peak RSS across fork and exec, so the
    # workers started by a parent that had grown the store would report its peak as theirs.
    command = [sys.executable, "-m", "bench.digest", "--worker", "prepare", *sys.argv[1:]]
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    prepared = Path(json.loads(done.stdout.strip().splitlines()[-1])["db"])
    with tempfile.TemporaryDirectory(dir=cache_dir()) as folder:
        runs: list[dict[str, Any]] = []
        kinds = [
            "naive",
            "build",
            *(["scheduler"] if args.scheduler else []),
            *(["single"] if args.single else []),
            "naive",
        ]
        kinds = kinds if args.naive_runs == 2 else kinds[:-1]
        for kind in kinds:
            # A fresh copy each time: the build records digests, the naive loop must not see them.
            copy = copy_db(prepared, Path(folder) / f"{kind}-{len(runs)}.db")
            if args.platforms == "mixed":
                platform_mix(copy)
            runs.append(_child(kind, copy, args))
            copy.unlink()
            for suffix in ("-wal", "-shm"):
                Path(str(copy) + suffix).unlink(missing_ok=True)
    naive_runs, built = [runs[0], runs[-1]] if args.naive_runs == 2 else [runs[0]], runs[1]
    through = runs[2] if args.scheduler else None
    single = runs[3 if args.scheduler else 2] if args.single else None
    channels = built["channels"]
    backlog_channels = round(channels * args.backlog_share)
    regular = statistics.median(t for r in naive_runs for t in r["times"]["regular"])
    backlogged = [t for r in naive_runs for t in r["times"]["backlog"]]
    with_backlog = statistics.median(backlogged) if backlogged else 0.0
    naive_total = regular * (channels - backlog_channels) + with_backlog * backlog_channels
    same, overlap = [], []
    for channel, expected in naive_runs[0]["picks"].items():
        got = [tuple(p) for p in built["picks"].get(channel, [])]
        want = [tuple(p) for p in expected]
        if any(archived for _, archived in want):
            fresh = [p for p in want if not p[1]]
            same.append([p for p in got if not p[1]] == fresh)
            old_want = {p for p, archived in want if archived}
            old_got = {p for p, archived in got if archived}
            overlap.append(len(old_want & old_got) / max(len(old_want), 1))
        else:
            same.append(got == want)
    result = {
        "bench": "digest",
        "papers": args.papers,
        "new_papers": args.new,
        "channels": channels,
        "platforms": args.platforms,
        "backlog_channels": backlog_channels,
        "seconds": round(built["seconds"], 2),
        "cpu_seconds": round(built.get("cpu_seconds", 0.0), 2),
        "ms_per_channel": round(1000 * built["seconds"] / channels, 2),
        "peak_rss_mb": built["rss_mb"],
        "items": built["items"],
        "same_picks": all(same),
        "sampled_channels": len(same),
        "backlog_archive_overlap": round(statistics.mean(overlap), 3) if overlap else None,
        "scheduler": {
            "what": "every channel's job fired at once through bot.scheduler: sources, "
            "inbox, builds in batches, queue (no platform connected)",
            "seconds": round(through["seconds"], 2),
            "cpu_seconds": round(through.get("cpu_seconds", 0.0), 2),
            "ms_per_channel": round(1000 * through["seconds"] / channels, 2),
            "peak_rss_mb": through["rss_mb"],
            "built": through["built"],
            "queued_channels": through["queued_channels"],
            "build_digests_calls": through["build_digests_calls"],
            "largest_batch": through["largest_batch"],
            "same_picks_as_batch": through["picks"] == built["picks"],
        }
        if through
        else None,
        "one_at_a_time": {
            "what": "build_digest per channel (the scheduler's path), the first channels",
            "channels": single["built"],
            "ms_per_channel": round(1000 * single["seconds"] / single["built"], 2),
            "peak_rss_mb": single["rss_mb"],
        }
        if single
        else None,
        "reference": {
            "what": "naive per-channel loop (the unbatched digest code), previews on a sample, "
            "extrapolated to all channels",
            "regular_s_per_channel": round(regular, 3),
            "backlog_s_per_channel": round(with_backlog, 2),
            "extrapolated_seconds": round(naive_total, 1),
            "peak_rss_mb": max(r["rss_mb"] for r in naive_runs),
        },
        "ratio": round(naive_total / built["seconds"], 1) if built["seconds"] else None,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
