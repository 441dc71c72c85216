"""The outbox: every message is written here before it is sent, and marked after. States:
`pending`, `sending` (claimed by one sender), `sent`, `failed` (given up), `paused` (the
channel is); a paper counts as delivered to a channel only once a message carrying it is sent."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from db.store import Store

log = logging.getLogger(__name__)

Row = dict[str, Any]
# Papers in messages in these states are delivered, or may still be: never picked again.
CLAIMED_STATES = ("pending", "sending", "sent", "paused")


class EncodedPayload(dict[str, Any]):
    """A message's payload dict that can also give its JSON text, `encoded`, which must
    be `json.dumps(payload, ensure_ascii=False)` byte for byte: `enqueue` stores that
    text instead of encoding the dict again (a renderer joins it from parts encoded
    once per batch). `encode` makes it when asked (a batch's texts are not all held
    at once). Not to be changed once made (the text would no longer match)."""

    __slots__ = ("_encode",)

    def __init__(self, payload: dict[str, Any], encode: Callable[[], str]) -> None:
        super().__init__(payload)
        self._encode = encode

    @property
    def encoded(self) -> str:
        return self._encode()


def _payload_text(payload: dict[str, Any]) -> str:
    if type(payload) is EncodedPayload:
        return payload.encoded
    return json.dumps(payload, ensure_ascii=False)


def enqueue(
    db: Store,
    channel: str,
    digest_id: int,
    messages: list[tuple[dict[str, Any], list[str]]],
    now: str,
) -> int:
    """Queue a digest's messages (payload, paper ids) once; again, it changes nothing.
    A payload is stored as its JSON text (an `EncodedPayload`'s own). Returns how many
    messages the digest has in the outbox (counted, not read back: decoding the payloads
    just written would be a large part of the cost)."""
    with db.write():
        existing = _parts(db, digest_id)
        if existing:
            return existing
        db.executemany(
            "insert into outbox (channel, digest_id, part, payload, paper_ids, state, "
            "attempts, created_at) values (?, ?, ?, ?, ?, 'pending', 0, ?)",
            [
                (channel, digest_id, part, _payload_text(payload), json.dumps(paper_ids), now)
                for part, (payload, paper_ids) in enumerate(messages, start=1)
            ],
        )
    return len(messages)


def _parts(db: Store, digest_id: int) -> int:
    row = db.execute("select count(*) from outbox where digest_id = ?", [digest_id]).fetchone()
    return int(row[0])


def _decode(row: Row) -> Row:
    return {
        **row,
        "payload": json.loads(row["payload"]),
        "paper_ids": json.loads(row["paper_ids"] or "[]"),
    }


def messages_for_digest(db: Store, digest_id: int) -> list[Row]:
    return [
        _decode(row)
        for row in db.query("select * from outbox where digest_id = ? order by part", [digest_id])
    ]


def due(
    db: Store, channel: str, now: str, sender_alive: Callable[[str], bool] = lambda _: True
) -> list[Row]:
    """The channel's messages that may be sent now, in sending order (oldest digest
    first, parts in order). A message waiting to retry, or being sent by a live sender
    elsewhere, holds back those after it. A claim whose sender died, or whose time ran
    out, is taken over: that message may have reached the platform once already."""
    ready = []
    for row in db.query(
        "select * from outbox where channel = ? and state in ('pending', 'sending') "
        "order by digest_id, part",
        [channel],
    ):
        if row["state"] == "sending":
            abandoned = row["claimed_until"] <= now or not sender_alive(row["claimed_by"])
            if not abandoned:
                break
        elif row["next_attempt_at"] is not None and row["next_attempt_at"] > now:
            break
        ready.append(_decode(row))
    return ready


def claim(db: Store, message: Row, sender: str, until: str) -> bool:
    """Take a message for sending; False if another sender took it first.

    The attempt is counted here, before the send, not once its outcome is known: a send
    cut off by a crash or a stop may have reached the platform, so `attempts` bounds the
    copies of a message that can exist, whatever happened to the process."""
    # On PostgreSQL a row another sender is claiming is skipped, not waited for: it is theirs.
    locked = " for update skip locked" if db.dialect == "postgresql" else ""
    cursor = db.execute(
        "update outbox set state = 'sending', claimed_by = ?, claimed_until = ?, "
        "attempts = attempts + 1 where id = (select id from outbox "
        # Unchanged since it was read (a compare-and-swap): a sender whose `due` list is
        # stale never takes a message another sender has tried meanwhile.
        "where id = ? and state = ? and coalesce(claimed_by, '') = ? and attempts = ?"
        f"{locked})",
        [
            sender,
            until,
            message["id"],
            message["state"],
            message["claimed_by"] or "",
            message["attempts"],
        ],
    )
    return cursor.rowcount == 1


def channels_with_due(db: Store, now: str) -> list[str]:
    return [
        str(row["channel"])
        for row in db.query(
            "select distinct outbox.channel from outbox "
            "join channels on channels.id = outbox.channel where channels.paused = 0 and ("
            "(outbox.state = 'pending' and (outbox.next_attempt_at is null "
            "or outbox.next_attempt_at <= ?)) or outbox.state = 'sending') order by 1",
            [now],
        )
    ]


def json_values(db: Store, array: str, alias: str) -> str:
    """A table of the text values of the JSON array `array` (SQL: a column or `?`), one
    column `value`, named `alias`, to use after `from` on either backend."""
    if db.dialect == "postgresql":
        return f"jsonb_array_elements_text(cast({array} as jsonb)) as {alias} (value)"
    return f"json_each({array}) as {alias}"


def claimed_paper_ids(db: Store, channel: str) -> set[str]:
    """Papers delivered to the channel, or queued to be: a new digest never repeats them."""
    placeholders = ", ".join("?" for _ in CLAIMED_STATES)
    each = json_values(db, "outbox.paper_ids", "j")
    rows = db.query(
        f"select distinct j.value as paper_id from outbox, {each} "
        f"where outbox.channel = ? and outbox.state in ({placeholders})",
        [channel, *CLAIMED_STATES],
    )
    return {str(row["paper_id"]) for row in rows}


def digest_parts(db: Store, digest_id: int) -> tuple[str | None, int]:
    """The digest's week and how many parts (messages) it has, for log lines."""
    row = db.execute(
        "select (select week from digests where id = ?), "
        "(select count(*) from outbox where digest_id = ?)",
        [digest_id, digest_id],
    ).fetchone()
    return (str(row[0]) if row[0] is not None else None), int(row[1])


def thread_root(db: Store, row: Row) -> str | None:
    """The platform id of part 1 of the same digest, if it has been sent."""
    rows = list(
        db.query(
            "select platform_id from outbox where digest_id = ? and part = 1 and state = 'sent'",
            [row["digest_id"]],
        )
    )
    return rows[0]["platform_id"] if rows else None


def _message(message_id: int, sender: str | None) -> tuple[str, list[Any]]:
    """The `where` clause (and its values) naming one message; with `sender`, only while
    that sender's claim holds it: a sender whose claim was taken over changes nothing."""
    if sender is None:
        return "id = ?", [message_id]
    return "id = ? and state = 'sending' and claimed_by = ?", [message_id, sender]


def mark_sent(
    db: Store, message_id: int, platform_id: str, now: str, *, sender: str | None = None
) -> bool:
    """Record a send. With `sender`, only while that sender's claim holds the message.
    A sender whose claim was taken over (it ran out: a clock step, a stalled process)
    records nothing: the message is the new holder's, whose own send's outcome is the one
    recorded (a `sent` over its claim cleared that claim, so its send's outcome could not
    be recorded; over its `sent`, it replaced its platform id). False if not recorded."""
    where, values = _message(message_id, sender)
    cursor = db.execute(
        "update outbox set state = 'sent', platform_id = ?, sent_at = ?, "
        "last_error = null, next_attempt_at = null, claimed_by = null, claimed_until = null "
        f"where {where}",
        [platform_id, now, *values],
    )
    return cursor.rowcount == 1


def release(
    db: Store,
    message_id: int,
    refund: bool = False,
    *,
    sender: str | None = None,
    error: str | None = None,
    next_attempt_at: str | None = None,
) -> bool:
    """Give a claimed message back (its send was cut off): pending, for any sender. With
    `refund`, the platform refused it (a 429), so it was not posted: its claim's attempt is
    taken back, since `attempts` counts the sends that may have posted it. With `sender`,
    only while that sender's claim holds it (another may have taken it over since: handed
    back, a third could send it while that one does). With `next_attempt_at`, held until
    then, with `error`, in the same statement (no sender can claim it in between). False
    if nothing was given back."""
    sets = ["state = 'pending'", "claimed_by = null", "claimed_until = null"]
    values: list[Any] = []
    if refund:
        sets.append("attempts = case when attempts > 0 then attempts - 1 else 0 end")
    if next_attempt_at is not None:
        sets += ["last_error = ?", "next_attempt_at = ?"]
        values += [error, next_attempt_at]
    where, ids = _message(message_id, sender)
    if sender is None:
        where += " and state = 'sending'"
    cursor = db.execute(f"update outbox set {', '.join(sets)} where {where}", [*values, *ids])
    return cursor.rowcount == 1


def defer(db: Store, message_id: int, next_attempt_at: str) -> None:
    """Hold a pending message (not claimed) until `next_attempt_at`: a rate limit asked us
    to wait that long before sending anything."""
    db.execute(
        "update outbox set next_attempt_at = ? where id = ? and state = 'pending'",
        [next_attempt_at, message_id],
    )


def mark_retry(
    db: Store, message_id: int, error: str, next_attempt_at: str, *, sender: str | None = None
) -> bool:
    """A transient error: stay pending, try again from `next_attempt_at`. With `sender`,
    only while that sender's claim holds the message (see `release`); False if not."""
    where, values = _message(message_id, sender)
    cursor = db.execute(
        "update outbox set state = 'pending', last_error = ?, next_attempt_at = ?, "
        f"claimed_by = null, claimed_until = null where {where}",
        [error, next_attempt_at, *values],
    )
    return cursor.rowcount == 1


def mark_failed(db: Store, message_id: int, error: str, *, sender: str | None = None) -> int | None:
    """Given up: the message will not be sent, and its papers count as undelivered.

    The digest's later parts are given up with it: a part must never go out without the
    parts before it (part 2 posted alone would be a top-level message with no header).
    Returns how many later parts were given up. With `sender`, only while that sender's
    claim holds the message (see `mark_sent`: a sender whose claim was taken over must not
    give up a message another is sending, nor turn its `sent` into `failed`); None, and
    nothing changed, if not."""
    where, values = _message(message_id, sender)
    with db.write():
        given_up = db.execute(
            "update outbox set state = 'failed', last_error = ?, "
            f"next_attempt_at = null, claimed_by = null, claimed_until = null where {where}",
            [error, *values],
        )
        if sender is not None and given_up.rowcount != 1:
            return None
        row = db.execute("select digest_id, part from outbox where id = ?", [message_id]).fetchone()
        if row is None or row[0] is None:
            return 0
        cursor = db.execute(
            "update outbox set state = 'failed', last_error = ?, next_attempt_at = null, "
            "claimed_by = null, claimed_until = null "
            "where digest_id = ? and part > ? and state in ('pending', 'paused')",
            [f"part {row[1]} of this digest was given up", row[0], row[1]],
        )
    return int(cursor.rowcount)


def pause_channel(db: Store, channel: str, error: str) -> None:
    db.execute(
        "update outbox set state = 'paused', last_error = ?, claimed_by = null, "
        "claimed_until = null where channel = ? and state in ('pending', 'sending')",
        [error, channel],
    )


def resume_channel(db: Store, channel: str) -> None:
    db.execute(
        "update outbox set state = 'pending', next_attempt_at = null "
        "where channel = ? and state = 'paused'",
        [channel],
    )


def count_paused(db: Store, channel: str) -> int:
    """How many of the channel's messages are held while it is paused."""
    return int(
        db.execute(
            "select count(*) from outbox where channel = ? and state = 'paused'", [channel]
        ).fetchone()[0]
    )


def last_delivery(db: Store, channel: str) -> Row | None:
    """The channel's most recent message that was sent, given up or paused."""
    rows = list(
        db.query(
            "select * from outbox where channel = ? and state not in ('pending', 'sending') "
            "order by coalesce(sent_at, created_at) desc, id desc limit 1",
            [channel],
        )
    )
    return _decode(rows[0]) if rows else None


# --- pruning: a sent message's payload is not needed once it is sent ---------------------

# What a pruned payload reads as: valid JSON (every reader decodes `payload`), and the
# column is NOT NULL (m003), so no migration is needed to empty it.
PRUNED_PAYLOAD = "{}"
# Messages whose payloads are dropped per write transaction: the write lock is held for
# one batch at a time (milliseconds; docs/dev/benchmarks.md, "Outbox pruning"), and
# the digests, commands and deliveries waiting for it go in between batches.
PRUNE_BATCH = 1000

_PRUNABLE = "state = 'sent' and sent_at < ? and payload != '" + PRUNED_PAYLOAD + "'"


def prunable(db: Store, before: str) -> tuple[int, int]:
    """How many sent messages `prune_sent(db, before)` would empty, and how many bytes of
    payload they hold (UTF-8)."""
    # SQLite before 3.43 has no octet_length; PostgreSQL has no blob.
    size = (
        "octet_length(payload)" if db.dialect == "postgresql" else "length(cast(payload as blob))"
    )
    row = db.execute(
        f"select count(*), coalesce(sum({size}), 0) from outbox where {_PRUNABLE}",
        [before],
    ).fetchone()
    return int(row[0]), int(row[1])


def prune_sent(
    db: Store,
    before: str,
    *,
    batch: int = PRUNE_BATCH,
    stop: Callable[[], bool] = lambda: False,
) -> int:
    """Drop the payload (the message as posted) of every message sent before `before`,
    `batch` messages per write transaction; returns how many were emptied. Their payload
    becomes `PRUNED_PAYLOAD`. Everything else in the row stays: its papers (`paper_ids`:
    "never the same paper twice" reads them), its platform id (`thread_root`: a later part
    threads under part 1), its state, times, attempts and error (`last_delivery`, status).
    Nothing reads a sent message's payload again (a button click carries its message).

    Only `sent` messages: pending, sending and paused ones are still to be sent, and given
    up (`failed`) ones are kept whole, as the evidence of what failed (they are few). The
    ids to empty are read outside the write lock, walking the table once in id order;
    the batch's transaction checks again that each is still a sent message (`stop()`
    between batches ends it early: what was emptied stays emptied, the rest waits for the
    next prune).

    Each row is deleted and written again, same id and columns, with the empty payload:
    an `update` in place shrinks the rows but SQLite leaves their pages as they were
    (a digest message's row fills most of a page), so a week at 10,000 channels keeps
    34 MB of mostly empty pages; a delete merges them, 7 MB (docs/dev/benchmarks.md).
    PostgreSQL updates in place: its vacuum reuses the space."""
    if db.dialect == "postgresql":
        return _prune_in_place(db, before, batch, stop)
    names, emptied = working_table(db)
    # SQLite built with secure_delete on (Debian's build: this machine's) writes zeros over
    # every page a pruned payload frees, through the write-ahead log: 324 MB written to
    # prune a week's 139 MB at 10,000 channels, and a `-wal` grown by all of it (and kept
    # at that size) while a reader holds a snapshot. FAST still clears the b-tree pages;
    # the freed overflow pages keep their bytes until reused or a VACUUM (payloads are
    # rendered from `papers` and `digest_items`, which the store keeps anyway).
    secure = int(db.execute("PRAGMA secure_delete").fetchone()[0])
    if secure == 1:
        db.execute("PRAGMA secure_delete = FAST")
    try:
        return prune_batches(db, before, batch, stop, names, emptied)
    finally:
        if secure == 1:
            db.execute("PRAGMA secure_delete = ON")


def _prune_in_place(db: Store, before: str, batch: int, stop: Callable[[], bool]) -> int:
    """`prune_sent` on PostgreSQL: `batch` rows per statement, in id order."""
    total, after = 0, 0
    while not stop():
        # Checked again as each row is written: one changed since it was picked is left.
        picked, last, emptied = db.execute(
            f"with picked as (select id from outbox where id > ? and {_PRUNABLE} "
            "order by id limit ?), emptied as (update outbox set payload = ? "
            f"where id in (select id from picked) and {_PRUNABLE} returning id) "
            "select (select count(*) from picked), (select max(id) from picked), "
            "(select count(*) from emptied)",
            [after, before, batch, PRUNED_PAYLOAD, before],
        ).fetchone()
        total += int(emptied)
        if picked < batch:
            break
        after = int(last)
    return total


def working_table(db: Store) -> tuple[str, str]:
    """Make `temp.outbox_pruning`, where a batch's rows are as they will be, apart (a
    temporary table: this connection's), from the outbox's columns now: one left by an
    earlier prune on this connection may have fewer (a migration since), and every batch
    would fail on it. Returns the columns' names, and the same with the payload a `?`."""
    columns = [str(row[1]) for row in db.execute("PRAGMA table_info(outbox)")]
    names = ", ".join(f'"{name}"' for name in columns)
    emptied = ", ".join("?" if name == "payload" else f'"{name}"' for name in columns)
    db.execute("drop table if exists temp.outbox_pruning")
    db.execute(f"create temp table outbox_pruning as select {names} from main.outbox where 0")
    return names, emptied


def prune_batches(
    db: Store,
    before: str,
    batch: int,
    stop: Callable[[], bool],
    names: str,
    emptied: str,
) -> int:
    """`prune_sent`'s batches, through its working table `temp.outbox_pruning`."""
    total, after = 0, 0
    while not stop():
        ids = [
            int(row[0])
            for row in db.execute(
                f"select id from outbox where id > ? and {_PRUNABLE} order by id limit ?",
                [after, before, batch],
            )
        ]
        if not ids:
            break
        # No foreign key checks while the rows are written back, unchanged but for the
        # payload: a row whose channel or digest is missing (written with the checks off,
        # say by an old migration) would be refused, and every prune would stop at that
        # batch, day after day. (A no-op inside a caller's transaction: checks stay on.)
        checks = db.execute("PRAGMA foreign_keys").fetchone()[0]
        db.execute("PRAGMA foreign_keys = OFF")
        try:
            with db.write():
                db.execute("delete from temp.outbox_pruning")
                # The batch as its id range, checked again: not one parameter an id (SQLite
                # before 3.32 allows 999 a statement). A row of the range prunable now is one
                # of `ids`, or one sent since with an older stamp (a clock behind): old too.
                db.execute(
                    f"insert into temp.outbox_pruning select {emptied} from main.outbox "
                    f"where id between ? and ? and {_PRUNABLE}",
                    [PRUNED_PAYLOAD, ids[0], ids[-1], before],
                )
                db.execute(
                    "delete from main.outbox where id in (select id from temp.outbox_pruning)"
                )
                cursor = db.execute(
                    f"insert into main.outbox ({names}) select {names} from temp.outbox_pruning"
                )
                db.execute("delete from temp.outbox_pruning")
        finally:
            db.execute(f"PRAGMA foreign_keys = {'ON' if checks else 'OFF'}")
        total += cursor.rowcount
        after = ids[-1]
        if len(ids) < batch:
            break
    return total
