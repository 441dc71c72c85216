"""The schema, as append-only sqlite-utils migrations. Never edit one; add another."""

from __future__ import annotations

import logging

from sqlite_utils.migrations import Migrations

from db.lite import Database

log = logging.getLogger(__name__)

migrations = Migrations("paperboy")


@migrations()
def m001_papers(db: Database) -> None:
    db.table("papers").create(
        {
            "id": str,
            "venue": str,
            "year": int,
            "title": str,
            "title_derived": int,
            "method": str,
            "names": str,
            "name_keys": str,
            "tldr": str,
            "abstract": str,
            "abstract_text": str,
            "url": str,
            "code_url": str,
            "arxiv_url": str,
            "openreview_url": str,
            "links": str,
            "keywords": str,
            "authors": str,
            "sources": str,
            "added_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"abstract", "abstract_text", "title", "added_at"},
        defaults={"title_derived": 0, "links": "[]", "keywords": "[]", "authors": "[]"},
    )
    db.table("papers").create_index(["added_at"])
    db.table("paper_aliases").create(
        {"alias": str, "paper_id": str},
        pk="alias",
        foreign_keys=[("paper_id", "papers", "id")],
    )
    db.table("paper_aliases").create_index(["paper_id"])
    db.table("papers").enable_fts(
        ["title", "names", "keywords", "abstract_text"],
        create_triggers=True,
        tokenize="porter unicode61 remove_diacritics 2",
    )
    db.table("ingests").create(
        {
            "id": int,
            "started_at": str,
            "files": str,
            "added": int,
            "merged": int,
            "skipped": int,
        },
        pk="id",
    )


@migrations()
def m002_channels_and_digests(db: Database) -> None:
    db.table("channels").create(
        {
            "id": str,  # local:NAME, slack:TEAM/CHANNEL or discord:GUILD/CHANNEL
            "platform": str,
            "weekday": str,  # mon .. sun
            "time": str,  # HH:MM
            "timezone": str,  # IANA name
            "schedule_set_by": str,
            "schedule_set_at": str,
            "paused": int,
            "paused_reason": str,
            "paused_at": str,
            "created_at": str,
        },
        pk="id",
        not_null={"platform", "created_at"},
        defaults={"paused": 0},
    )
    db.table("subscriptions").create(
        {
            "id": int,
            "channel": str,
            "topic_id": str,  # catalog id, or custom:slug
            "custom_text": str,  # the free text of a custom topic
            "created_by": str,
            "created_at": str,
            "removed_by": str,
            "removed_at": str,
        },
        pk="id",
        not_null={"channel", "topic_id", "created_at"},
        foreign_keys=[("channel", "channels", "id")],
    )
    db.execute(
        "create unique index subscriptions_active on subscriptions (channel, topic_id) "
        "where removed_at is null"
    )
    db.table("digests").create(
        {
            "id": int,
            "channel": str,
            "week": str,  # ISO week in the channel's timezone: 2026-W49
            "built_at": str,
            "topics": str,  # JSON list of topic ids subscribed when built
            "empty": int,
        },
        pk="id",
        not_null={"channel", "week", "built_at"},
        foreign_keys=[("channel", "channels", "id")],
    )
    db.table("digests").create_index(["channel", "week"], unique=True)
    db.table("digest_items").create(
        {
            "digest_id": int,
            "channel": str,
            "paper_id": str,
            "rank": int,
            "topics": str,  # JSON list of topic ids the paper was picked for
            "score": float,
        },
        pk=("digest_id", "paper_id"),
        foreign_keys=[("digest_id", "digests", "id"), ("paper_id", "papers", "id")],
    )
    db.table("digest_items").create_index(["channel", "paper_id"])


@migrations()
def m003_outbox(db: Database) -> None:
    db.table("outbox").create(
        {
            "id": int,
            "channel": str,
            "digest_id": int,
            "part": int,  # 1, 2, ... in sending order; parts after the first thread under it
            "payload": str,  # JSON: the platform's message arguments
            "paper_ids": str,  # JSON: the papers this message carries
            "state": str,  # pending | sending | sent | failed (given up) | paused
            "claimed_by": str,  # while sending: "host:pid" of the sender
            "claimed_until": str,  # while sending: after this, another sender may take it
            "attempts": int,
            "last_error": str,
            "platform_id": str,  # Slack ts or Discord message id, once sent
            "created_at": str,
            "sent_at": str,
            "next_attempt_at": str,
        },
        pk="id",
        not_null={"channel", "part", "payload", "state", "created_at"},
        defaults={"state": "pending", "attempts": 0},
        foreign_keys=[("channel", "channels", "id"), ("digest_id", "digests", "id")],
    )
    db.table("outbox").create_index(["digest_id", "part"], unique=True)
    db.table("outbox").create_index(["channel", "state"])


@migrations()
def m004_app_state(db: Database) -> None:
    db.table("app_state").create({"key": str, "value": str, "updated_at": str}, pk="key")


@migrations()
def m005_inbox_files(db: Database) -> None:
    db.table("inbox_files").create(
        {
            "path": str,
            "size": int,
            "mtime_ns": int,
            "status": str,  # loaded | error
            "detail": str,
            "seen_at": str,
        },
        pk="path",
    )


@migrations()
def m006_digest_failures(db: Database) -> None:
    # One row per channel whose digest build failed and is waiting to be retried.
    db.table("digest_failures").create(
        {
            "channel": str,
            "due_at": str,  # the moment the digest was built for (its week)
            "attempts": int,
            "last_error": str,
            "first_failed_at": str,
            "next_attempt_at": str,
        },
        pk="channel",
        not_null={"due_at", "attempts", "next_attempt_at"},
    )


@migrations()
def m007_cadence(db: Database) -> None:
    # When a paper first appeared at its source (ISO UTC): arXiv's first-version date,
    # OpenReview's creation date. NULL for papers ingested from files.
    db.table("papers").add_column("published_at", str)
    db.table("papers").create_index(["published_at"])
    # A channel's cadence: weekly (on its `weekday`), daily, or weekdays (Monday to Friday).
    db.table("channels").add_column("cadence", str, not_null_default="weekly")
    # Whether older never-sent papers fill the slots that new papers leave empty.
    db.table("channels").add_column("backlog", int, not_null_default=0)
    # `digests.week` holds the digest's period key: an ISO week (2026-W49) for a weekly
    # channel, a date (2026-11-30) for a daily or weekdays one; still unique per channel.
    # `since`: the moment after which a paper counted as new for this digest.
    db.table("digests").add_column("since", str)
    # Whether an item is an older paper picked from the backlog ("from the archive").
    db.table("digest_items").add_column("from_archive", int, not_null_default=0)


@migrations()
def m008_sources(db: Database) -> None:
    # The sources `paperboy run` fetches: one row per canonical source name.
    db.table("sources").create(
        {
            "name": str,  # SourceSpec.name, canonical ("arxiv:cs.LG")
            "kind": str,  # arxiv | openreview | feed
            "value": str,
            "cron": str,  # its own schedule (crontab, UTC); NULL: PAPERBOY_FETCH_CRON
            "added_at": str,
            "last_success_at": str,
            "last_error_at": str,
            "last_error": str,
            "consecutive_failures": int,
            "next_try_at": str,  # backoff after a failure; NULL when none
            "papers_added": int,  # in all, since the source was added
            "last_read": int,
            "last_added": int,
            "last_merged": int,
            "cursor": str,  # arXiv: the newest submission date seen by a complete fetch
            "etag": str,  # feeds: the validators of the last complete fetch
            "last_modified": str,
            "fetching_by": str,  # a claim: "host/pid", so two processes never fetch one source
            "fetch_started_at": str,
        },
        pk="name",
        not_null={"kind", "value", "added_at"},
        defaults={"consecutive_failures": 0, "papers_added": 0},
    )
    # What a PaperRecord cannot carry, from fetched sources. `categories` and
    # `affiliations` are JSON lists; `revised_at` is arXiv's "updated" (the latest
    # version's date); `tldr_source` says whose the TL;DR is: "authors" beats "derived".
    papers = db.table("papers")
    for column in ("pdf_url", "doi", "journal_ref", "comment", "revised_at", "tldr_source"):
        papers.add_column(column, str)
    papers.add_column("categories", str, not_null_default="[]")
    papers.add_column("affiliations", str, not_null_default="[]")
    papers.add_column("arxiv_version", int)
    # A real title, normalised (`digests.identity.title_key`), to match the same paper from
    # two sources by title and a shared author. NULL for derived titles; filled for older
    # papers by `digests.ingest.pipeline.backfill_title_keys`.
    papers.add_column("title_key", str)
    papers.create_index(["title_key"])


@migrations()
def m009_fingerprints(db: Database) -> None:
    # 128 bits of the SHA-256 of the abstract's fingerprint as the paper was first stored
    # (`digests.identity.fingerprint_hash`, 32 hex digits, 32 MB at 1M papers), so an
    # id match is taken as the same paper only when the fingerprints agree (a merge may
    # later change the stored abstract). No index: it is read from the row an id finds.
    # NULL for papers stored before: they are checked against their stored abstract
    # (`digests.ingest.ids`); db/ cannot compute a fingerprint (that is Python text work).
    db.table("papers").add_column("fingerprint", str)


@migrations()
def m010_ingest_progress(db: Database) -> None:
    # A large ingest commits in chunks, so its row says how far it got. `status`:
    # "running" while it stores (or if it was killed), "complete", or "stopped" (an error
    # part-way, in `error`); `done` of `total` papers read are stored. NULL status: an
    # ingest from before, which was all-or-nothing, so complete.
    ingests = db.table("ingests")
    for column in ("status", "error", "finished_at"):
        ingests.add_column(column, str)
    for column in ("total", "done", "without_abstract"):
        ingests.add_column(column, int)


@migrations()
def m012_search_changes(db: Database) -> None:
    # The papers whose searchable text changed, in order, for the tantivy index beside the
    # store (db/text_index.py): it applies the rows after its watermark and trims them.
    # Written by triggers in the same transaction as the change, so a crash never loses one.
    db.execute(
        "create table search_changes (seq integer primary key autoincrement, "
        "paper_id text not null)"
    )
    db.execute(
        "create trigger papers_search_insert after insert on papers begin "
        "insert into search_changes (paper_id) values (new.id); end"
    )
    db.execute(
        "create trigger papers_search_update after update of "
        "id, title, names, name_keys, keywords, abstract_text on papers begin "
        "insert into search_changes (paper_id) values (old.id); "
        "insert into search_changes (paper_id) select new.id where new.id != old.id; end"
    )
    db.execute(
        "create trigger papers_search_delete after delete on papers begin "
        "insert into search_changes (paper_id) values (old.id); end"
    )


@migrations()
def m013_feedback_and_saved(db: Database) -> None:
    # New tables and indexes only: existing rows are never rewritten, so a large
    # database (the 5 GB bench cache at 1M papers) migrates in place in milliseconds.
    # 👍/👎 on digest items, per channel and topic: `user` is the platform user id, `vote`
    # +1 or -1, `digest_id` the digest the click came from. One row per (channel, topic,
    # paper, user): a repeated click counts once, a 👎 after a 👍 replaces it.
    db.table("feedback").create(
        {
            "id": int,
            "channel": str,
            "topic_id": str,
            "paper_id": str,
            "user": str,
            "vote": int,
            "digest_id": int,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"channel", "topic_id", "paper_id", "user", "vote", "created_at"},
    )
    db.table("feedback").create_index(
        ["channel", "topic_id", "paper_id", "user"], unique=True, index_name="feedback_vote"
    )
    db.table("feedback").create_index(["channel", "paper_id"], index_name="feedback_paper")
    # Each user's reading list: `user` is a user key (`digests.actions.user_key`), `channel`
    # where the paper was saved from (NULL from a command or the CLI).
    db.table("saved").create(
        {"user": str, "paper_id": str, "saved_at": str, "channel": str},
        pk=("user", "paper_id"),
        not_null={"saved_at"},
    )


@migrations()
def m014_subscription_history(db: Database) -> None:
    # Each subscribe after an unsubscribe added a row, for good (300 cycles: 300 rows).
    # Per channel and topic, keep the first row, the latest removed one, the active one,
    # and in Slack channels (not personal digests) those older than the first recorded
    # manager (a Home matches display names there); delete the rest, as
    # db.channels.add_subscription does from now on.
    db.execute(
        "create index if not exists subscriptions_history on subscriptions (channel, topic_id, id)"
    )
    found = db.execute(
        "select value from app_state where key = 'home: managers recorded since'"
    ).fetchone()
    before = str(found[0]) if found else "9999"
    deleted = db.execute(
        "delete from subscriptions where removed_at is not null "
        "and id not in (select min(id) from subscriptions group by channel, topic_id) "
        "and id not in (select max(id) from subscriptions where removed_at is not null "
        "group by channel, topic_id) "
        "and not (substr(channel, 1, 6) = 'slack:' and instr(channel, '/@') = 0 "
        "and (created_at < ? or removed_at < ?))",
        [before, before],
    ).rowcount
    if deleted:
        log.info("m014: deleted %d subscription rows of topics' past cycles", deleted)


@migrations()
def m015_search_watches_authors(db: Database) -> None:
    # Authors are searchable, so a change to them must reach the index like a title's.
    db.execute("drop trigger if exists papers_search_update")
    db.execute(
        "create trigger papers_search_update after update of "
        "id, title, names, name_keys, keywords, abstract_text, authors on papers begin "
        "insert into search_changes (paper_id) values (old.id); "
        "insert into search_changes (paper_id) select new.id where new.id != old.id; end"
    )


@migrations()
def m016_processes(db: Database) -> None:
    # One row per `paperboy run` process (id made at its start); heartbeat_at says it is alive.
    db.execute(
        "create table processes (id text primary key, host text not null, "
        "pid integer not null, role text not null, started_at text not null, "
        "heartbeat_at text not null, stopped_at text)"
    )
    # Named leases ('clock'): held by a process id until expires_at unless renewed.
    db.execute(
        "create table leases (name text primary key, holder text not null, "
        "expires_at text not null)"
    )
