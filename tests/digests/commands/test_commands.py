"""The /papers grammar and its handlers, as every front end uses them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from config.settings import Settings
from db.store import Store
from digests.commands import VERBS, Context, ParseError, handle, parse, registry
from digests.commands.grammar import help_lines
from digests.render import discord, limits, slack
from digests.render.text import reply_text
from digests.topics import Catalog
from tests.conftest import NOW, seed_paper_id

CHANNEL = "slack:T0001/C0001"


@pytest.fixture
def ctx(seeded_db: Store, settings: Settings, catalog: Catalog) -> Context:
    return Context(seeded_db, CHANNEL, "alice", NOW, settings, catalog)


def test_every_verb_has_help_and_an_example_when_it_takes_arguments() -> None:
    names = [verb.name for verb in VERBS]
    assert names == [
        "help", "find", "show", "similar", "topics", "subscribe", "unsubscribe", "list",
        "schedule", "backlog", "digest", "status", "resume", "sources", "why", "feedback",
        "saved", "bibtex",
    ]  # fmt: skip
    for verb in VERBS:
        assert verb.help.endswith(".")
        if any(param.required for param in verb.params):
            assert verb.example.startswith(verb.name)
            parse(verb.example)  # every example parses
    assert len(help_lines()) == len(VERBS)


@pytest.mark.parametrize(
    ("text", "verb", "args"),
    [
        ("", "help", {}),
        ("/papers find diffusion policy", "find", {"query": "diffusion policy"}),
        ("FIND  LoMAP ", "find", {"query": "LoMAP"}),
        ('subscribe "diffusion policy"', "subscribe", {"topic": "diffusion policy"}),
        ("subscribe “smart quotes”", "subscribe", {"topic": "smart quotes"}),
        (
            "schedule monday 09:00 Europe/Berlin",
            "schedule",
            {"weekday": "monday", "time": "09:00", "timezone": "Europe/Berlin"},
        ),
        ("digest preview", "digest", {"mode": "preview"}),
        # An unclosed quote is refused (tests/digests/commands/test_input.py); an apostrophe is none.
        ("find Bellman's equation", "find", {"query": "Bellman's equation"}),
    ],
)
def test_parse(text: str, verb: str, args: dict[str, str]) -> None:
    command = parse(text)
    assert command.verb.name == verb and command.args == args


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("subscrib offline-rl", "subscribe"),
        ("schedule", "needs weekday"),
        ("topics extra words", "takes no arguments"),
        ("digest now", "not one of preview"),
        ("x" * 3000, "too long"),
    ],
)
def test_parse_errors_are_helpful(text: str, words: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert words in caught.value.message or caught.value.suggestion == words


def test_a_wrong_choice_is_echoed_short() -> None:
    with pytest.raises(ParseError) as caught:
        parse("backlog " + "x" * 500)
    assert "not one of on, off" in caught.value.message
    assert len(caught.value.message) < 120


def test_an_unknown_command_is_one_line_with_the_verb_meant(ctx: Context) -> None:
    """A mistyped verb is one line: the verb meant (a word people use for it, else a
    typo of it), and where the list is; a word like no verb gets no guess."""
    reply = handle("subscrib offline-rl", ctx)
    assert reply.error and reply.ephemeral and reply.lines == ()
    assert reply.text == (
        "I don't know `subscrib`. Did you mean `/papers subscribe`? "
        "(`/papers help` lists all commands)"
    )
    assert handle("search diffusion policy", ctx).text.startswith(
        "I don't know `search`. Did you mean `/papers find`?"
    )
    nothing = handle("xyzzy plugh", ctx)
    assert nothing.lines == ()
    assert nothing.text == "I don't know `xyzzy`. `/papers help` lists all commands."
    assert "`/papers help --me`" in handle("lsit --me", ctx).text
    # `remove` is a synonym of unsubscribe, though it is a typo's distance from resume.
    assert "Did you mean `/papers unsubscribe`?" in handle("remove offline-rl", ctx).text
    assert handle("stop", ctx).text == "I don't know `stop`. `/papers help` lists all commands."


def test_a_mistyped_choice_or_help_verb_suggests_the_right_one(ctx: Context) -> None:
    """`saved exprt`, `backlog of`, `help subscrbe` suggest the word meant, as an unknown
    command does; `feedback offline-rl` (a topic where `reset` goes) says what
    `feedback` alone does and how to clear that topic's, rather than only "not one of"."""
    for text, hint in (
        ("saved exprt", "Did you mean `/papers saved export`?"),
        ("backlog of", "Did you mean `/papers backlog off`?"),
        ("feedback offline-rl", "`/papers feedback reset offline-rl`"),
    ):
        reply = handle(text, ctx)
        assert reply.error and hint in reply.text, (text, reply.text)
        assert not reply.changed
    assert "`/papers feedback` shows every topic's feedback" in handle("feedback x", ctx).text
    assert "Did you mean" not in handle("backlog maybe", ctx).text  # nothing close
    typo = handle("help subscrbe", ctx)
    assert typo.error and typo.lines == ()
    assert typo.text == "There is no command 'subscrbe'. Did you mean `/papers help subscribe`?"
    assert handle("help remove", ctx).text.endswith("`/papers help unsubscribe`?")
    assert "Did you mean" not in " ".join(handle("help nope", ctx).lines)


def test_feedback_reset_takes_a_free_text_topic_unquoted_as_unsubscribe_does() -> None:
    """`feedback reset diffusion policy` answered "takes at most 2 arguments", while
    `unsubscribe diffusion policy` works: the topic is the rest of the text."""
    for text in ("feedback reset diffusion policy", 'feedback reset "diffusion policy"'):
        command = parse(text)
        assert command.args == {"action": "reset", "topic": "diffusion policy"}, text
    assert parse("feedback reset 1").args == {"action": "reset", "topic": "1"}
    assert parse("feedback").args == {} and parse("feedback reset").args == {"action": "reset"}
    for text in ("feedback offline-rl", 'feedback "diffusion policy" x'):
        with pytest.raises(ParseError) as caught:
            parse(text)
        assert "is not one of reset" in caught.value.message
    assert parse("unsubscribe diffusion policy").args == {"topic": "diffusion policy"}


def test_help_and_help_for_one_verb(ctx: Context) -> None:
    assert len(handle("help", ctx).lines) >= len(VERBS)
    one = handle("help schedule", ctx)
    assert "Example: `/papers schedule monday 09:00 Europe/Berlin`" in one.lines


def test_find_show_similar(ctx: Context) -> None:
    found = handle("find alpha dpo", ctx)
    assert found.ephemeral and found.papers[0]["method"] == "AlphaDPO"
    shown = handle(f"show {found.papers[0]['id']}", ctx)
    assert shown.papers[0]["id"] == found.papers[0]["id"] and shown.detail
    similar = handle(f"similar {found.papers[0]['id']}", ctx)
    assert similar.papers and found.papers[0]["id"] not in {p["id"] for p in similar.papers}
    assert handle("show pnope", ctx).error
    assert "No papers match" in handle("find ?!?", ctx).text


def test_subscribe_unsubscribe_list(ctx: Context, seeded_db: Store) -> None:
    reply = handle("subscribe offline-rl", ctx)
    assert not reply.error and not reply.ephemeral and reply.changed
    assert "alice subscribed this channel to Offline RL (`offline-rl`)" in reply.text
    assert "already follows" in handle("subscribe Offline RL", ctx).text
    custom = handle('subscribe "diffusion policy"', ctx)
    assert custom.changed and '"diffusion policy"' in custom.text
    listing = handle("list", ctx)
    assert listing.text == "This channel follows 2 topics:"
    assert any("`offline-rl` Offline RL, by alice on 2026-11-30" in line for line in listing.lines)
    number = next(line for line in listing.lines if "diffusion" in line).split()[0]
    assert handle(f"unsubscribe {number}", ctx).changed
    assert handle("unsubscribe offline reinforcement learning", ctx).changed
    assert handle("list", ctx).text == "This channel follows 0 topics:"
    # the history stays
    rows = list(seeded_db.query("select created_by, removed_by from subscriptions"))
    assert rows == [{"created_by": "alice", "removed_by": "alice"}] * 2


def test_unknown_topic_suggests_the_closest_ids(ctx: Context, seeded_db: Store) -> None:
    reply = handle("subscribe ofline-rl", ctx)
    assert reply.error
    assert "Did you mean `offline-rl`?" in reply.lines
    assert any('subscribe "ofline-rl"' in line for line in reply.lines)
    assert list(seeded_db.query("select * from subscriptions")) == []
    gone = handle("unsubscribe robotics", ctx)
    assert gone.error and "does not follow" in gone.text


def test_schedule_errors_show_an_example(ctx: Context) -> None:
    for text in (
        "schedule someday 09:00",
        "schedule monday 25:00",
        "schedule monday 09:00 Mars/Olympus",
    ):
        reply = handle(text, ctx)
        assert reply.error and "schedule monday 09:00 Europe/Berlin" in reply.text, text
    ok = handle("schedule fri 5:30pm america/new_york", ctx)
    assert ok.changed and "Fridays at 17:30 (America/New_York)" in ok.text
    assert "next on Fri 4 Dec 2026, 17:30 EST" in ok.lines[0]
    assert "Fridays at 17:30" in " ".join(handle("list", ctx).lines)


def test_schedule_keeps_the_timezone_when_none_is_given(ctx: Context) -> None:
    handle("schedule monday 09:00 Asia/Tokyo", ctx)
    reply = handle("schedule tuesday 10:00", ctx)
    assert "(Asia/Tokyo)" in reply.text


def test_digest_preview_and_status(ctx: Context) -> None:
    assert "follows no topics" in handle("digest", ctx).text
    handle("subscribe robotics", ctx)
    preview = handle("digest preview", ctx)
    assert preview.digest is not None and not preview.digest.recorded and preview.ephemeral
    status = handle("status", ctx)
    assert status.lines[0].startswith("Papers stored: 38; last ingest")
    assert "Topics: Robotics" in status.lines
    assert "Last digest: none yet." in status.lines
    assert "Delivery: active." in status.lines


def test_paused_channels_say_so(ctx: Context, seeded_db: Store) -> None:
    from db.channels import set_paused

    handle("subscribe robotics", ctx)
    set_paused(seeded_db, CHANNEL, "channel_not_found", NOW.isoformat())
    assert any(
        "Paused" in line and "channel_not_found" in line for line in handle("status", ctx).lines
    )
    assert any("Paused: channel_not_found" in line for line in handle("list", ctx).lines)


def test_resume_lifts_a_pause_and_releases_held_messages(ctx: Context, seeded_db: Store) -> None:
    from db.channels import set_paused
    from db.outbox import pause_channel

    assert handle("resume", ctx).text == "Delivery to this channel is not paused."
    handle("subscribe robotics", ctx)
    seeded_db.execute(
        "insert into outbox (channel, part, payload, paper_ids, state, attempts, created_at) "
        "values (?, 1, '{}', '[]', 'pending', 0, ?)",
        [CHANNEL, NOW.isoformat()],
    )
    set_paused(seeded_db, CHANNEL, "not_in_channel", NOW.isoformat())
    pause_channel(seeded_db, CHANNEL, "not_in_channel")
    reply = handle("resume", ctx)
    assert reply.changed and not reply.ephemeral
    assert reply.text == "alice resumed delivery to this channel (paused for: not_in_channel)."
    assert reply.lines == ("1 held message will go out within a minute.",)
    states = [row["state"] for row in seeded_db.query("select state from outbox")]
    assert states == ["pending"]
    assert "Delivery: active." in handle("status", ctx).lines


def test_a_bad_channel_is_a_reply_not_a_crash(ctx: Context) -> None:
    from dataclasses import replace

    reply = handle("list", replace(ctx, channel="irc:#lab"))
    assert reply.error and "not a channel" in reply.text


@pytest.mark.parametrize("text", ["", "help", "topics", "find robot", "list", "status", "nonsense"])
def test_every_reply_renders_within_limits_everywhere(ctx: Context, text: str) -> None:
    handle("subscribe robotics", ctx)
    reply = handle(text, ctx)
    assert reply_text(reply)
    for message in slack.reply_messages(reply):
        assert limits.slack_problems(message.payload()) == []
    for message in discord.reply_messages(reply):
        assert limits.discord_problems(message.payload()) == []


def test_show_of_a_long_abstract_renders_within_limits(ctx: Context, seeded_db: Store) -> None:
    from digests.ingest import ingest_files

    path = ctx.settings.db_path.parent / "unused"  # noqa: F841 - settings stay untouched
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "long.txt"
        file.write_text("ICML 2025\n\nWe propose LongNet, a method. " + "word " * 5000)
        ingest_files(seeded_db, [file], now=NOW - timedelta(days=1))
    reply = handle(f"show {seed_paper_id(seeded_db, 'We propose LongNet')}", ctx)
    for message in discord.reply_messages(reply):
        assert limits.discord_problems(message.payload()) == []
    for message in slack.reply_messages(reply):
        assert limits.slack_problems(message.payload()) == []


@pytest.mark.parametrize(
    ("zone", "stored"),
    [
        ("europe/berlin", "Europe/Berlin"),
        ("America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
        ("US/Eastern", "US/Eastern"),
        ("gmt", "UTC"),
        ("Etc/UTC", "UTC"),
    ],
)
def test_schedule_accepts_the_timezones_people_mean(ctx: Context, zone: str, stored: str) -> None:
    reply = handle(f"schedule monday 09:00 {zone}", ctx)
    assert reply.changed and f"({stored})" in reply.text


@pytest.mark.parametrize(
    ("zone", "hint"),
    [
        # Real tz database names: the message must not call them "not an IANA timezone".
        ("localtime", "is a system or legacy timezone name"),
        ("Factory", "is a system or legacy timezone name"),
        ("posixrules", "is a system or legacy timezone name"),
        ("Etc/Unknown", "is not an IANA timezone"),
        ("right/UTC", "is a system or legacy timezone name"),
        ("Etc/GMT+5", "'Etc/GMT+5' means UTC-5 all year, with no daylight saving"),
        ("etc/gmt-14", "'etc/gmt-14' means UTC+14 all year"),
        ("Japan", "is an old name for a timezone; use its Area/City name, Asia/Tokyo"),
        ("GB", "Europe/London"),
        ("/etc/localtime", None),
        ("../../etc/passwd", None),
        ("Europe/Berlim", "Did you mean Europe/Berlin?"),
        ("Berlin", "Did you mean Europe/Berlin?"),
        ("EST", "is an abbreviation, not a timezone; use a city zone such as America/New_York"),
    ],
)
def test_schedule_refuses_timezones_nobody_means(
    ctx: Context, seeded_db: Store, zone: str, hint: str | None
) -> None:
    reply = handle(f"schedule monday 09:00 {zone}", ctx)
    assert reply.error and "schedule monday 09:00" in reply.text
    assert hint is None or hint in reply.text
    assert list(seeded_db.query("select * from channels where schedule_set_by is not null")) == []


def test_the_default_timezone_setting_follows_the_same_rule() -> None:
    from config.settings import SettingsError, load_settings

    with pytest.raises(SettingsError, match="PAPERBOY_DEFAULT_TIMEZONE"):
        load_settings({"PAPERBOY_DEFAULT_TIMEZONE": "localtime"}, dotenv=None)
    assert (
        load_settings({"PAPERBOY_DEFAULT_TIMEZONE": "gmt"}, dotenv=None).default_timezone == "UTC"
    )


def test_list_numbers_from_one_and_unsubscribe_takes_those_numbers(
    ctx: Context, seeded_db: Store
) -> None:
    from dataclasses import replace

    other = replace(ctx, channel="slack:T0001/C0002")
    for topic in ("rlhf", "robotics", "quantum-ml"):  # row ids 1-3 belong to another channel
        handle(f"subscribe {topic}", other)
    handle("subscribe offline-rl", ctx)
    handle('subscribe "diffusion policy"', ctx)
    listing = handle("list", ctx)
    assert [line.split()[0] for line in listing.lines[:2]] == ["#1", "#2"]
    assert handle("unsubscribe 3", ctx).error  # only two here
    gone = handle("unsubscribe 2", ctx)
    assert gone.changed and '"diffusion policy"' in gone.text
    first = handle("unsubscribe #1", ctx)
    assert first.changed and "Offline RL" in first.text
    assert handle("unsubscribe #1", ctx).error  # nothing left to remove
    assert handle("list", ctx).text == "This channel follows 0 topics:"
    assert handle("list", other).text == "This channel follows 3 topics:"
    assert handle("unsubscribe robotics", other).changed  # names still work
    handle('subscribe "2048"', ctx)  # a topic named by a number past the list's end
    assert handle("unsubscribe 2048", ctx).changed


def test_an_ambiguous_id_prefix_lists_the_candidates(ctx: Context, seeded_db: Store) -> None:
    rows = list(seeded_db.query("select id, title from papers order by id limit 2"))
    prefix = "p3e9"
    for number, row in enumerate(rows):
        seeded_db.execute(
            "update papers set id = ? where id = ?", [f"{prefix}0000{number}", row["id"]]
        )
    reply = handle(f"show {prefix}", ctx)
    assert reply.error and reply.text == "'p3e9' matches 2 papers; use more of the id:"
    assert reply.lines == tuple(f"`{prefix}0000{n}` {row['title']}" for n, row in enumerate(rows))
    assert handle(f"show {prefix}00001", ctx).papers[0]["title"] == rows[1]["title"]
    assert "I have no paper" in handle("show p3e8", ctx).text
    # Shorter than an id prefix may be: listed, not "no paper" (ids do start with it).
    short = handle("show p3e", ctx)
    assert short.error and short.text == "'p3e' matches 2 papers; use more of the id:"
    assert len(short.lines) == 2
    seeded_db.execute("update papers set id = 'p3f00001' where id = ?", [f"{prefix}00001"])
    one = handle("show p3f", ctx)
    assert one.error and one.text == "'p3f' matches 1 paper; use more of the id:"
    assert handle("show p3f0", ctx).papers[0]["title"] == rows[1]["title"]


@pytest.mark.parametrize(
    "ref",
    [
        "2502.01234",
        "2502.01234v2",
        "arXiv:2502.01234",
        "ARXIV:2502.01234v1",
        "https://arxiv.org/abs/2502.01234v2",
        "arxiv.org/abs/2502.01234",  # a link as copied from the address bar
        "http://export.arxiv.org/abs/2502.01234",
        "https://arxiv.org/pdf/2502.01234v1.pdf",
    ],
)
def test_arxiv_ids_in_every_usual_form(ctx: Context, tmp_path, ref: str) -> None:  # type: ignore[no-untyped-def]
    from digests.ingest import ingest_files
    from tests.fakes.arxiv_feed import ARXIV_FEED

    feed = tmp_path / "feed.xml"
    feed.write_text(ARXIV_FEED, encoding="utf-8")
    ingest_files(ctx.db, [feed], now=NOW)
    shown = handle(f"show {ref}", ctx)
    assert not shown.error, shown.text
    assert shown.papers[0]["url"] == "https://arxiv.org/abs/2502.01234"


def test_show_gives_a_plain_abstract_and_the_title_once(ctx: Context) -> None:
    reply = handle("show p15e97bd3ed8b16b4", ctx)  # AlphaDPO: LaTeX and 58.7\% in its abstract
    text = reply_text(reply)
    assert text.count("AlphaDPO: Adaptive preference optimization framework") == 1
    assert "58.7% LC win rate" in text and "\\%" not in text and "\\(" not in text
    assert "π̂_ref" in text
    [message] = slack.reply_messages(reply)
    assert reply.text in message.text  # the notification still names the paper
    sections = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
    assert sum("AlphaDPO: Adaptive preference" in section for section in sections) == 1
    [discord_message] = discord.reply_messages(reply)
    assert "AlphaDPO: Adaptive" not in discord_message.content
    assert discord_message.embeds[0]["title"].startswith("AlphaDPO: Adaptive")


def test_every_verb_has_a_handler() -> None:
    registry.check()
    handler = registry.HANDLERS.pop("find")
    try:
        with pytest.raises(LookupError, match="find"):
            registry.check()
    finally:
        registry.HANDLERS["find"] = handler


def test_a_verb_cannot_get_a_second_handler() -> None:
    before = dict(registry.HANDLERS)
    with pytest.raises(LookupError, match="find"):
        registry.handler_for("find")(lambda command, ctx: registry.HANDLERS["help"](command, ctx))
    assert before == registry.HANDLERS
