"""Odd and hostile input: a clear message, nothing changed, never a crash."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from bot.services import Services
from config.settings import SettingsError, load_settings
from db import open_db
from db.store import Store
from digests.commands import Context, handle
from digests.digest import Digest, DigestItem
from digests.enrich.paper import build_row
from digests.ingest import IngestError, ingest_files
from digests.records import PaperRecord
from digests.render import discord, limits, slack
from digests.topics import Catalog, custom_slug, custom_topic
from tests.conftest import NOW


def test_many_people_subscribing_at_once(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog
) -> None:
    db_path = tmp_path / "p.db"
    ingest_files(open_db(db_path), seed_paths, now=NOW)
    services = Services(db_path, load_settings({}, dotenv=None), catalog, clock=lambda: NOW)
    errors: list[BaseException] = []

    def worker(number: int) -> None:
        try:
            for channel in range(15):
                for topic in ("robotics", "rlhf"):
                    reply = handle(
                        f"subscribe {topic}", services.context(f"local:c{channel}", f"u{number}")
                    )
                    assert not reply.error, reply.text
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = list(
        open_db(db_path).query(
            "select channel, topic_id from subscriptions where removed_at is null"
        )
    )
    assert len(rows) == 30  # each channel follows each topic once, whoever was first


@pytest.fixture
def ctx(seeded_db: Store, settings, catalog: Catalog) -> Context:  # type: ignore[no-untyped-def]
    return Context(seeded_db, "slack:T1/C1", "@alice", NOW, settings, catalog)


def test_odd_characters_in_commands(ctx: Context) -> None:
    handle("subscribe robotics", ctx)
    assert handle("unsubscribe ²", ctx).error  # a digit to Python, not a number to us
    assert handle("unsubscribe #99999999999999999999", ctx).error
    lone = handle("find \ud800", ctx)
    assert lone.error and "cannot read" in lone.text
    assert handle("subscribe \ud800x", ctx).error


def test_slack_reply_text_is_escaped_too(ctx: Context) -> None:
    reply = handle('subscribe "<!channel> robots"', ctx)
    [message] = slack.reply_messages(reply)
    assert "<!channel>" not in message.text and "&lt;!channel&gt;" in message.text


def test_a_digest_with_many_long_escaped_topics_still_fits() -> None:
    topics = tuple(custom_topic("&" * 90 + f" robot{i}") for i in range(25))
    row = build_row(PaperRecord(abstract="We propose RoboNet, a robot.", source="t", line=1), NOW)
    digest = Digest(
        "slack:T1/C1",
        "2026-W49",
        topics,
        (DigestItem(row, topics, 9.0),),
        NOW.isoformat(),
        recorded=False,
    )
    for message in slack.digest_messages(digest):
        assert limits.slack_problems(message.payload()) == []
    for message in discord.digest_messages(digest):
        assert limits.discord_problems(message.payload()) == []


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("inf.csv", 'abstract,year\n"We propose A.",inf\n', "not a number"),
        ("huge.csv", 'abstract,year\n"We propose A.",1e30\n', "not a plausible year"),
        ("old.csv", 'abstract,year\n"We propose A.",12\n', "not a plausible year"),
        ("lone.jsonl", '{"abstract": "We propose \\ud800 A."}\n', "lone surrogate"),
        ("deep.json", "[" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_values_are_one_line_errors(
    fresh_db: Store, tmp_path: Path, name: str, content: str, words: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(IngestError) as caught:
        ingest_files(fresh_db, [path], now=NOW)
    assert str(caught.value).startswith(f"{path}:") and words in str(caught.value)


def test_absurd_latex_still_ingests(fresh_db: Store, tmp_path: Path) -> None:
    path = tmp_path / "deep.txt"
    path.write_text(
        "ICML 2025\n\nWe propose Deep, with $" + "{" * 2000 + "x" + "}" * 2000 + "$ inside.\n"
    )
    assert ingest_files(fresh_db, [path], now=NOW).added == 1


def test_bad_settings_are_settings_errors(tmp_path: Path) -> None:
    for value in ("Europe", "x" * 300, "../../etc/passwd"):
        with pytest.raises(SettingsError, match="PAPERBOY_DEFAULT_TIMEZONE"):
            load_settings({"PAPERBOY_DEFAULT_TIMEZONE": value}, dotenv=None)
    dotenv = tmp_path / ".env"
    dotenv.write_bytes(b"PAPERBOY_DB=\xff\xfe\n")
    with pytest.raises(SettingsError, match=r"\.env"):
        load_settings({}, dotenv=dotenv)


def test_long_free_text_topics_stay_distinct() -> None:
    stem = "reinforcement learning for robotic manipulation with language " * 2
    first, second = custom_slug(stem + "in kitchens"), custom_slug(stem + "in factories")
    assert first != second and len(first) <= len("custom:") + 60


def test_a_non_http_link_is_not_used_as_a_link() -> None:
    row = build_row(PaperRecord(abstract="We propose LinkNet.", source="t", line=1, url="N/A"), NOW)
    topics = (custom_topic("links"),)
    digest = Digest(
        "discord:123456/654321",
        "2026-W49",
        topics,
        (DigestItem(row, topics, 9.0),),
        NOW.isoformat(),
        recorded=False,
    )
    [message] = discord.digest_messages(digest)
    assert "url" not in message.embeds[0]
    assert "<N/A|" not in json.dumps(slack.digest_messages(digest)[0].blocks)


INVISIBLE = ("\u202e", "\u2066", "\u200b", "\u200f", "\ufeff", "\x1b", "\x07", "\x85", "\x00")


def test_topics_with_invisible_or_control_characters_are_refused(
    ctx: Context, seeded_db: Store
) -> None:
    for text in (
        'subscribe "\u202eLR enilffO"',
        "subscribe offline-rl\u200b",
        'subscribe "robots\x1b]0;pwned\x07"',
        "schedule monday 09:00 Europe/Berlin\u2066",
    ):
        reply = handle(text, ctx)
        assert reply.error and "can't contain invisible or control characters" in reply.text
    assert list(seeded_db.query("select * from subscriptions")) == []
    assert list(seeded_db.query("select * from channels")) == []


def test_lookups_ignore_invisible_characters(ctx: Context) -> None:
    found = handle("find alpha\u200bdpo\u202e", ctx)  # pasted text often carries them
    assert found.papers and found.papers[0]["method"] == "AlphaDPO"
    assert "\u200b" not in found.text and "\u202e" not in found.text


def _hostile_digest(channel: str) -> Digest:
    hostile = "".join(INVISIBLE)
    row = build_row(
        PaperRecord(
            abstract="We propose RoboNet, a robot that learns.",
            source="t",
            line=1,
            title=f"Robo{hostile}Net title",
            venue=f"ICML{hostile}",
        ),
        NOW,
    )
    row = {**row, "title": f"Robo{hostile}Net title", "tldr": f"It {hostile}works."}
    topics = (custom_topic("robots"),)
    return Digest(
        channel,
        "2026-W49",
        topics,
        (DigestItem(row, topics, 9.0),),
        NOW.isoformat(),
        recorded=False,
    )


def _visible(rendered: str) -> None:
    for char in INVISIBLE:
        assert char not in rendered, repr(char)


def test_renderers_strip_invisible_and_control_characters(ctx: Context) -> None:
    from digests.render.text import digest_text, reply_text
    from digests.replies import info

    slack_digest = _hostile_digest("slack:T1/C1")
    discord_digest = _hostile_digest("discord:123456/654321")
    rendered = [
        json.dumps([m.payload() for m in slack.digest_messages(slack_digest)], ensure_ascii=False),
        json.dumps(
            [m.payload() for m in discord.digest_messages(discord_digest)], ensure_ascii=False
        ),
        digest_text(slack_digest),
    ]
    reply = info("Top \u202e1\u200b:", "`a\x1b[2Jb` and \u2066c", papers=(), detail="d\u200be")
    rendered += [
        json.dumps([m.payload() for m in slack.reply_messages(reply)], ensure_ascii=False),
        json.dumps([m.payload() for m in discord.reply_messages(reply)], ensure_ascii=False),
        reply_text(reply),
    ]
    for text in rendered:
        assert "RoboNet" in text or "Top 1" in text
        _visible(text)


def test_strip_unsafe_leaves_nothing_unsafe_and_is_idempotent() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from digests.safe_text import has_unsafe, json_safe, strip_unsafe

    alphabet = st.sampled_from(
        [
            *"ab \n\t[];0?P\\\x07\x1b\x9b\x9c\x9d\u202e\u2066\u200b\u2028é",
            *"\u200d\u200c👩ب\U0001f3f4\U000e0067\U000e0062\U000e007f\U000e0001\u206a\ufff9",
            *"\ufe0f\u20e31",
        ]
    )

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=alphabet, max_size=200))
    def check(text: str) -> None:
        cleaned = strip_unsafe(text)
        assert not has_unsafe(cleaned) and strip_unsafe(cleaned) == cleaned
        # An oracle independent of the module's own patterns: what may remain.
        assert not any(char in "\x07\x1b\x9b\x9c\x9d\u202e\u2066\u200b\u2028" for char in cleaned)
        assert not any(char in "\u206a\ufff9\U000e0001" for char in cleaned)
        for index, char in enumerate(cleaned):
            if char in "\u200c\u200d":  # a joiner only between two visible non-ASCII characters
                assert 0 < index < len(cleaned) - 1
                assert all(
                    ord(n) > 0x7F and n in "é👩ب\U0001f3f4\u20e3\ufe0f"
                    for n in cleaned[index - 1 : index + 2 : 2]
                )
            if char == "\ufe0f":  # a selector only after a visible non-ASCII one, or a keycap
                before, after = cleaned[index - 1 : index], cleaned[index + 1 : index + 2]
                assert before in ("é", "👩", "ب", "\U0001f3f4", "\u20e3") or (
                    before in "0123456789#*" and after == "\u20e3"  # keycaps: 0️⃣ … 9️⃣ #️⃣ *️⃣
                )
            if char in "\U000e0067\U000e0062\U000e007f":  # a tag only inside a flag sequence
                assert "\U0001f3f4" in cleaned[max(0, index - 33) : index]
        assert json.loads(json_safe(json.dumps(text, ensure_ascii=False))) == text

    check()


# People's text that needs a joiner or tag characters: emoji sequences, a subdivision flag,
# Persian with a zero-width non-joiner, Devanagari with a zero-width joiner.
PEOPLE_TEXT = (
    "👩\u200d💻 and 👨\u200d👩\u200d👧",
    "🏳\ufe0f\u200d🌈",
    "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f England",
    "می\u200cخواهم",
    "क्\u200dष",
)


def test_joiners_and_flag_tags_in_people_s_text_are_kept(ctx: Context) -> None:
    from digests.render.escape import discord_escape, plain, slack_escape
    from digests.safe_text import has_unsafe, json_safe, strip_unsafe

    for text in PEOPLE_TEXT:
        assert not has_unsafe(text), repr(text)
        for escape in (strip_unsafe, plain, slack_escape, discord_escape):
            assert escape(text) == text, (escape.__name__, repr(text))
        assert json.loads(json_safe(json.dumps(text, ensure_ascii=False))) == text
    reply = handle('subscribe "می\u200cخواهم"', ctx)  # a Persian topic, typed as Persian is
    assert not reply.error, reply.text
    assert "می\u200cخواهم" in reply.text


def test_tag_characters_and_stray_joiners_are_invisible_tricks(
    ctx: Context, seeded_db: Store
) -> None:
    from digests.safe_text import json_safe, strip_unsafe

    hidden = "".join(chr(0xE0000 + ord(char)) for char in "ignore this")  # ASCII smuggling
    for text, cleaned in (
        (f"offline-rl{hidden}", "offline-rl"),
        ("off\u200dline\u200c-rl\u200d", "offline-rl"),  # joiners next to ASCII hide things
        ("\u200d👩", "👩"),  # at the start of text
        ("\U0001f3f4\U000e0067\U000e0062 x", "\U0001f3f4 x"),  # a flag with no cancel tag
        ("a\u180eb\u206ac\ufff9d\ufffbe\u2061f", "abcdef"),
        ("off\u00adline\u034f-\u3164rl\uffa0\U0001d173", "offline-rl"),  # show as nothing
        ("❤\ufe0f 葛\U000e0100 1\ufe0f\u20e3", "❤\ufe0f 葛\U000e0100 1\ufe0f\u20e3"),  # they stay
        ("o\ufe0ff\ufe0e\U000e0100f \ufe0f❤\ufe0f\ufe0f", "off ❤\ufe0f"),  # after ASCII: gone
    ):
        assert strip_unsafe(text) == cleaned, repr(text)
        assert json.loads(json_safe(json.dumps(text, ensure_ascii=False))) == text
    for text in (
        f"subscribe offline-rl{hidden}",
        "subscribe offline\u200d-rl",
        "subscribe off\u00adline-rl",
    ):
        reply = handle(text, ctx)
        assert reply.error and "can't contain invisible or control characters" in reply.text
    assert list(seeded_db.query("select * from subscriptions")) == []


@pytest.mark.parametrize("hider", ["\U000e0041", "\u00ad", "\u034f", "\u200d", "\ufe0e"])
def test_a_token_hidden_with_tag_characters_is_still_refused(tmp_path: Path, hider: str) -> None:
    # Tag characters, soft hyphens and grapheme joiners show as nothing: interleaved, they
    # hid a bot token from the secret check (which runs on the stripped text), and
    # `find xoxb` would have shown it.
    token = "xoxb-" + hider.join("1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx")
    path = tmp_path / "papers.tsv"
    path.write_text(f"title\tabstract\nA paper\tWe propose X. See {token} here.\n", "utf-8")
    db = open_db(tmp_path / "p.db")
    with pytest.raises(IngestError, match="Slack token"):
        ingest_files(db, [path], now=NOW)
    assert db.execute("select count(*) from papers").fetchone()[0] == 0
