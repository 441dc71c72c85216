"""The commands why, feedback, saved and bibtex (digests/commands: feedback, saved, papers)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import bibtexparser
import pytest

from bot.discordbot.client import PaperboyClient
from bot.discordbot.commands import NEEDS_MANAGE_CHANNELS
from bot.services import Services
from config.settings import Settings
from db import feedback as feedback_store
from db import open_db
from db import saved as saved_store
from db.papers import add_alias, get_paper
from db.store import Store
from digests.bibtex import cite_key, latex_text
from digests.commands import Context, handle, parse
from digests.commands.grammar import VERBS_BY_NAME
from digests.commands.saved import NO_USER, SAVED_SHOWN
from digests.digest import build_digest
from digests.explain import explain
from digests.learning import refined_topic
from digests.matching import PaperText
from digests.render.discord import reply_messages as discord_messages
from digests.render.slack import reply_messages as slack_messages
from digests.render.text import reply_text
from digests.replies import Attachment, Reply
from digests.topics import Catalog
from tests.conftest import NOW, seed_paper_id
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import (
    CHANNEL_ID,
    GUILD,
    MANAGE_CHANNELS,
    dispatch,
    interaction,
)
from tests.fakes.slack_api import FakeSlack


def test_reply_carries_an_attachment_that_renderers_ignore() -> None:
    file = Attachment(filename="saved.bib", content="@misc{x,\n}\n", mime="application/x-bibtex")
    plain = Reply(text="1 saved paper as BibTeX")
    with_file = Reply(text="1 saved paper as BibTeX", attachment=file)
    assert plain.attachment is None
    assert with_file.attachment == file
    assert Attachment("a.txt", "x").mime == "text/plain"
    assert slack_messages(with_file) == slack_messages(plain)
    assert discord_messages(with_file) == discord_messages(plain)
    assert reply_text(with_file) == reply_text(plain)


def test_services_pass_the_user_key_to_the_context(tmp_path: Path, catalog: Catalog) -> None:
    from bot.services import Services
    from config.settings import load_settings

    services = Services(tmp_path / "p.db", load_settings({}, dotenv=None), catalog)
    assert services.context("slack:T1/C1", "@alice").user_key is None
    ctx = services.context("slack:T1/C1", "@alice", user_key="slack:T1/U1")
    assert (ctx.user, ctx.user_key) == ("@alice", "slack:T1/U1")


# --- the commands, on the seed papers -------------------------------------------------

CHANNEL = "slack:T1/C1"
OTHER = "slack:T1/C2"
ALICE = "slack:T1/U1"
AT = "2026-11-30T08:00:00+00:00"


@pytest.fixture
def ctx(seeded_db: Store, settings: Settings, catalog: Catalog) -> Context:
    return Context(seeded_db, CHANNEL, "@alice", NOW, settings, catalog, user_key=ALICE)


@pytest.fixture
def picked(ctx: Context) -> list[str]:
    """The ids of this channel's first digest (offline-rl), recorded."""
    handle("subscribe offline-rl", ctx)
    digest = build_digest(ctx.db, CHANNEL, NOW, catalog=ctx.catalog, settings=ctx.settings)
    assert digest.digest_id is not None and len(digest.items) >= 2
    return [str(item.paper["id"]) for item in digest.items]


def others(db: Store, picked: list[str], n: int) -> list[str]:
    """`n` stored papers not in the digest."""
    rows = db.query("select id from papers order by id")
    return [str(row["id"]) for row in rows if row["id"] not in picked][:n]


def vote(db: Store, paper_id: str, user: str, value: int, channel: str = CHANNEL) -> None:
    feedback_store.record_vote(db, channel, "offline-rl", paper_id, user, value, None, AT)


def feedback_rows(db: Store) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in db.execute("select * from feedback order by id").fetchall()]


def test_why_names_the_digest_the_topic_and_the_terms(ctx: Context, picked: list[str]) -> None:
    reply = handle(f"why {picked[0]}", ctx)
    text = reply_text(reply)
    assert not reply.error and reply.ephemeral
    assert f"digest for 2026-W49 (#1 of {len(picked)}), picked for Offline RL (offline-rl)" in text
    assert "Terms: “" in text and "(abstract" in text
    assert "Feedback: none on this topic here yet." in text


def test_why_numbers_a_paper_as_the_digest_shows_it(ctx: Context) -> None:
    """The digest lists its items under their topics; `why` gives the number people saw
    there, not the order of picking (best score across topics), which differs."""
    from digests.render.text import digest_text

    for topic in ("offline-rl", "rlhf", "llm-reasoning-agents"):
        handle(f"subscribe {topic}", ctx)
    digest = build_digest(ctx.db, CHANNEL, NOW, catalog=ctx.catalog, settings=ctx.settings)
    text = digest_text(digest)
    shown = {
        line.split("id: ")[1].strip(): number
        for number, line in enumerate(
            (line for line in text.splitlines() if line.strip().startswith("id: ")), start=1
        )
    }
    picked = [str(item.paper["id"]) for item in digest.items]
    assert len(shown) == len(picked) >= 4
    assert [shown[p] for p in picked] != list(range(1, len(picked) + 1))  # orders differ
    for paper_id in picked:
        number = shown[paper_id]
        block = text.split(f"id: {paper_id}")[0].rsplit("\n\n", 2)[-2]
        assert block.lstrip().startswith(f"{number}. ")
        why = reply_text(handle(f"why {paper_id}", ctx))
        assert f"(#{number} of {len(picked)})" in why, (paper_id, why)


def test_why_term_contributions_add_up_to_the_score(ctx: Context, picked: list[str]) -> None:
    paper = get_paper(ctx.db, picked[0])
    assert paper is not None
    explained = explain(ctx.db, CHANNEL, paper, ctx.catalog)
    (topic,) = explained.topics
    assert topic.picked and topic.score >= ctx.catalog.threshold
    assert sum(t.contribution for t in topic.terms) == pytest.approx(topic.score, abs=0.01)
    assert topic.score == topic.base_score  # no feedback yet


def test_why_shows_the_feedback_that_moved_it(ctx: Context, picked: list[str]) -> None:
    down = others(ctx.db, picked, 2)
    vote(ctx.db, picked[0], "U1", 1)
    vote(ctx.db, picked[1], "U2", 1)
    vote(ctx.db, down[0], "U1", -1)
    vote(ctx.db, down[1], "U1", -1)
    paper = get_paper(ctx.db, picked[0])
    assert paper is not None
    (topic,) = explain(ctx.db, CHANNEL, paper, ctx.catalog).topics
    # The score is the one the channel's next digest uses (digests.learning).
    offline = ctx.catalog.get("offline-rl")
    assert offline is not None
    refined = refined_topic(ctx.db, CHANNEL, offline)
    assert topic.score == refined.score(PaperText.of(paper)) != topic.base_score
    assert (topic.liked, topic.disliked, topic.votes) == (2, 2, (1, 0))
    text = reply_text(handle(f"why {picked[0]}", ctx))
    assert "Feedback: 👍 on 2 and 👎 on 2 of this topic's papers here moved this paper's" in text
    assert "from feedback)" in text
    assert "This paper: 👍 1 👎 0." in text
    assert "voted it down" in reply_text(handle(f"why {down[0]}", ctx))


def test_why_says_a_first_vote_has_not_moved_the_topic_yet(ctx: Context, picked: list[str]) -> None:
    """One 👍 moves no word (refine needs a word in two papers voted alike): `why` says
    so, rather than a bare "did not change", which reads as feedback being ignored."""
    vote(ctx.db, picked[0], "U1", 1)
    text = reply_text(handle(f"why {picked[0]}", ctx))
    assert (
        "Feedback: 👍 on 1 and 👎 on 0 of this topic's papers here did not change this "
        "paper's score yet: a word counts once two papers voted the same way have it."
    ) in " ".join(line.strip() for line in text.splitlines())


def test_why_of_a_paper_never_picked_and_of_a_channel_without_topics(
    ctx: Context, picked: list[str]
) -> None:
    never = others(ctx.db, picked, 1)[0]
    assert "It has not been in this channel's digests." in reply_text(handle(f"why {never}", ctx))
    empty = dataclasses.replace(ctx, channel=OTHER)
    text = reply_text(handle(f"why {never}", empty))
    assert "This channel follows no topics" in text


def test_why_and_bibtex_of_an_unknown_id_say_so(ctx: Context) -> None:
    for verb in ("why", "bibtex"):
        reply = handle(f"{verb} pnope00000000000", ctx)
        assert reply.error
        assert "I have no paper with id `pnope00000000000`" in reply.text
    assert "needs id" in handle("why", ctx).text


def test_feedback_lists_votes_per_topic(ctx: Context, picked: list[str]) -> None:
    assert "No 👍/👎 in this channel yet." in handle("feedback", ctx).text
    vote(ctx.db, picked[0], "U1", 1)
    vote(ctx.db, picked[0], "U2", 1)
    vote(ctx.db, picked[1], "U1", -1)
    vote(ctx.db, picked[1], "U1", 1, channel=OTHER)  # another channel's: not shown
    reply = handle("feedback", ctx)
    text = reply_text(reply)
    assert reply.ephemeral and not reply.changed
    assert "Offline RL (offline-rl): 👍 2 · 👎 1 on 2 papers" in text
    assert f"👍 2 👎 0 {picked[0]}" in text
    assert f"👍 0 👎 1 {picked[1]}" in text


def test_feedback_reset_clears_one_topic_of_this_channel(ctx: Context, picked: list[str]) -> None:
    vote(ctx.db, picked[0], "U1", 1)
    vote(ctx.db, picked[1], "U2", -1)
    vote(ctx.db, picked[0], "U1", 1, channel=OTHER)
    reply = handle("feedback reset offline-rl", ctx)
    assert reply.changed and not reply.ephemeral and not reply.error
    assert "@alice cleared this channel's feedback on Offline RL (2 votes)" in reply.text
    assert [row[1] for row in feedback_rows(ctx.db)] == [OTHER]  # the other channel's stays
    again = handle("feedback reset 1", ctx)  # by its number in `list`
    assert "no feedback on Offline RL in this channel to clear" in again.text
    assert not again.changed


def test_feedback_reset_of_bad_topics_changes_nothing(ctx: Context, picked: list[str]) -> None:
    vote(ctx.db, picked[0], "U1", 1)
    before = feedback_rows(ctx.db)
    for text, wanted in (
        ("feedback reset diffusion-models", "This channel does not follow diffusion-models."),
        ("feedback reset", "Which topic's feedback?"),
        ("feedback offline-rl", "is not one of reset"),
        ("feedback reset off\u200bline-rl", "invisible or control characters"),
    ):
        reply = handle(text, ctx)
        assert reply.error and wanted in reply_text(reply), text
    assert feedback_rows(ctx.db) == before


def test_only_feedback_reset_is_a_change() -> None:
    assert not parse("feedback").changes and not parse("feedback").needs_manager
    assert parse("feedback reset offline-rl").needs_manager
    assert parse("subscribe offline-rl").changes  # verbs without a sub-word: as before
    assert not parse("saved export").changes
    assert VERBS_BY_NAME["feedback"].changes  # adapters checking the verb are stricter


def test_help_says_which_sub_word_changes_the_channel(ctx: Context) -> None:
    text = reply_text(handle("help feedback", ctx))
    assert "feedback reset changes the channel's settings" in text
    assert "changes the channel" not in reply_text(handle("help saved", ctx))


def save(db: Store, user: str, paper_id: str, at: str = AT) -> None:
    assert saved_store.save(db, user, paper_id, at)


def test_saved_lists_the_users_own_papers(ctx: Context, picked: list[str]) -> None:
    assert "You have no saved papers yet." in handle("saved", ctx).text
    save(ctx.db, ALICE, picked[0], "2026-11-30T08:00:00+00:00")
    save(ctx.db, ALICE, picked[1], "2026-11-30T09:00:00+00:00")
    save(ctx.db, "slack:T1/U2", picked[2] if len(picked) > 2 else picked[0])
    reply = handle("saved", ctx)
    assert reply.ephemeral and not reply.error
    assert reply.text == "Your 2 saved papers, newest first:"
    assert [line.split("`")[1] for line in reply.lines[:2]] == [picked[1], picked[0]]


def test_saved_needs_a_user_key(ctx: Context, picked: list[str]) -> None:
    save(ctx.db, ALICE, picked[0])
    anonymous = dataclasses.replace(ctx, user_key=None)
    for text in ("saved", "saved export"):
        reply = handle(text, anonymous)
        assert reply.error and reply.text == NO_USER and reply.attachment is None


def test_saved_export_is_a_bibtex_attachment(ctx: Context, picked: list[str]) -> None:
    empty = handle("saved export", ctx)
    assert empty.attachment is None and "no saved papers to export" in empty.text
    for paper_id in picked:
        save(ctx.db, ALICE, paper_id)
    reply = handle("saved export", ctx)
    assert reply.ephemeral and not reply.changed
    assert reply.text.startswith(f"{len(picked)} saved papers as BibTeX")
    file = reply.attachment
    assert file is not None
    assert (file.filename, file.mime) == ("paperboy-saved.bib", "application/x-bibtex")
    library = bibtexparser.parse_string(file.content)
    assert not library.failed_blocks
    papers = [get_paper(ctx.db, paper_id) for paper_id in picked]
    assert {e.key for e in library.entries} == {cite_key(p) for p in papers if p}
    titles = {e.fields_dict["title"].value for e in library.entries}
    assert titles == {latex_text(str(p["title"])) for p in papers if p}


def test_bibtex_gives_one_entry_with_the_arxiv_id_of_an_alias(ctx: Context) -> None:
    paper_id = seed_paper_id(ctx.db, "LoMAP")
    add_alias(ctx.db, "arXiv:2502.01234", paper_id)
    reply = handle(f"bibtex {paper_id}", ctx)
    assert reply.ephemeral and not reply.error
    body = "\n".join(line.strip("`") for line in reply.lines)
    library = bibtexparser.parse_string(body)
    (item,) = library.entries
    assert item.key == f"lomap2025_{paper_id[1:7]}"
    assert item.entry_type == "inproceedings"  # ICML, with its eprint
    assert item.fields_dict["eprint"].value == "2502.01234"
    assert reply.attachment is None  # the lines show it all


def test_bibtex_with_a_backtick_comes_as_a_file_too(ctx: Context) -> None:
    paper_id = seed_paper_id(ctx.db, "LoMAP")
    ctx.db.execute("update papers set title = ? where id = ?", ["``Quoted'' LoMAP", paper_id])
    reply = handle(f"bibtex {paper_id}", ctx)
    assert reply.attachment is not None
    assert "``Quoted'' {LoMAP}" in reply.attachment.content


def test_typos_of_the_new_verbs_suggest_them(ctx: Context) -> None:
    for typo, verb in (("bibtx", "bibtex"), ("saaved", "saved"), ("feedbak", "feedback")):
        assert f"Did you mean `/papers {verb}`?" in handle(typo, ctx).text


# --- Discord: the subcommands, through discord.py's real CommandTree ---------------------

EPHEMERAL = 1 << 6


async def test_discord_feedback_reset_needs_manage_channels(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    db = open_db(bot.services.db_path)
    channel = f"discord:{GUILD}/{CHANNEL_ID}"
    ctx = bot.services.context(channel, "@alice")
    handle("subscribe offline-rl", ctx)
    paper_id = seed_paper_id(db, "LoMAP")
    feedback_store.record_vote(db, channel, "offline-rl", paper_id, "U1", 1, None, AT)
    await dispatch(bot, fake_discord, interaction("feedback", {"action": "reset", "topic": "1"}))
    [refused] = fake_discord.callbacks()
    assert refused["data"]["content"] == NEEDS_MANAGE_CHANNELS
    assert len(feedback_store.channel_feedback(db, channel)) == 1
    # Reading needs no permission.
    await dispatch(bot, fake_discord, interaction("feedback"))
    shown = fake_discord.callbacks()[-1]["data"]
    assert shown["flags"] & EPHEMERAL
    assert f"👍 1 👎 0 `{paper_id}`" in shown["content"]
    await dispatch(
        bot,
        fake_discord,
        interaction("feedback", {"action": "reset", "topic": "1"}, permissions=MANAGE_CHANNELS),
    )
    cleared = fake_discord.callbacks()[-1]["data"]
    assert "cleared this channel's feedback on Offline RL (1 vote)" in cleared["content"]
    assert not cleared.get("flags", 0) & EPHEMERAL
    assert feedback_store.channel_feedback(db, channel) == []


async def test_discord_why_and_bibtex_answer_only_the_asker(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    paper_id = seed_paper_id(open_db(bot.services.db_path), "LoMAP")
    await dispatch(bot, fake_discord, interaction("why", {"id": paper_id}))
    await dispatch(bot, fake_discord, interaction("bibtex", {"id": paper_id}))
    why, entry = (callback["data"] for callback in fake_discord.callbacks())
    assert why["flags"] & EPHEMERAL and entry["flags"] & EPHEMERAL
    assert "has not been in this channel's digests" in why["content"]
    assert f"@inproceedings{{lomap2025_{paper_id[1:7]}," in entry["content"]


async def test_discord_saved_export_through_the_real_client(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    db = open_db(bot.services.db_path)
    paper_id = seed_paper_id(db, "LoMAP")
    # The asking member of tests.fakes.discord_interactions.interaction, keyed as the adapter keys it.
    saved_store.save(db, "discord:500000000000000000", paper_id, AT)
    saved_store.save(db, "discord:600000000000000000", seed_paper_id(db, "AlphaDPO"), AT)
    await dispatch(bot, fake_discord, interaction("saved"))
    await dispatch(bot, fake_discord, interaction("saved", {"action": "export"}))
    listed, exported = fake_discord.callbacks()
    assert listed["data"]["flags"] & EPHEMERAL
    assert paper_id in listed["data"]["content"] and "AlphaDPO" not in listed["data"]["content"]
    assert exported["data"]["flags"] & EPHEMERAL
    [file] = exported["files"]
    assert file["filename"] == "paperboy-saved.bib"
    (entry,) = bibtexparser.parse_string(file["content"]).entries
    assert entry.key == f"lomap2025_{paper_id[1:7]}"


# --- Slack: who may reset feedback, through the real bolt app over HTTP ----------------


async def test_slack_feedback_reset_needs_a_manager_reading_does_not(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    from tests.fakes.slack_requests import make_services, signed_headers, slash_body, start_http

    services = make_services(
        tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_SLACK_MANAGERS="U0BOSS"
    )
    channel = "slack:T0001/C0001"
    db = open_db(services.db_path)
    handle("subscribe offline-rl", services.context(channel, "@boss"))
    paper_id = seed_paper_id(db, "LoMAP")
    feedback_store.record_vote(db, channel, "offline-rl", paper_id, "U0001", 1, None, AT)
    client = await start_http(services, fake_slack)

    async def post(text: str, user: str = "U0001") -> dict[str, Any]:
        body = slash_body(text, fake_slack.response_url(), user=user)
        response = await client.post("/slack/events", data=body, headers=signed_headers(body))
        return dict(json.loads(await response.text()))

    try:
        refused = await post("feedback reset offline-rl")
        assert refused["text"].startswith("Sorry, only")
        assert len(feedback_store.channel_feedback(db, channel)) == 1
        shown = await post("feedback")  # anyone may read it
        assert shown["response_type"] == "ephemeral"
        assert "👍 1 · 👎 0 on 1 paper" in json.dumps(shown, ensure_ascii=False)
        cleared = await post("feedback reset offline-rl", user="U0BOSS")
        assert cleared["response_type"] == "in_channel"
        assert feedback_store.channel_feedback(db, channel) == []
    finally:
        await client.close()


def test_a_plain_feedback_with_an_invisible_character_is_not_refused(ctx: Context) -> None:
    reply = handle("feedback\u200b", ctx)  # only changes refuse them
    assert not reply.error and "No 👍/👎" in reply.text


def test_feedback_of_a_topic_no_longer_followed_is_shown_and_can_be_reset(
    ctx: Context, picked: list[str]
) -> None:
    vote(ctx.db, picked[0], "U1", 1)
    handle("unsubscribe offline-rl", ctx)
    text = reply_text(handle("feedback", ctx))
    assert "Offline RL (offline-rl, no longer followed): 👍 1 · 👎 0 on 1 paper" in text
    reply = handle("feedback reset offline-rl", ctx)
    assert reply.changed and "cleared this channel's feedback on Offline RL (1 vote)" in reply.text
    assert feedback_rows(ctx.db) == []


async def test_discord_feedback_topic_autocompletes_the_channels_topics(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    subscribe = interaction("subscribe", {"topic": "robotics"}, permissions=MANAGE_CHANNELS)
    await dispatch(bot, fake_discord, subscribe)
    await dispatch(
        bot,
        fake_discord,
        interaction("feedback", {"action": "reset", "topic": "rob"}, kind=4, focused="topic"),
    )
    choices = fake_discord.callbacks()[-1]["data"]["choices"]
    assert [choice["value"] for choice in choices] == ["robotics"]


def test_a_long_saved_list_shows_the_newest_and_counts_the_rest(ctx: Context) -> None:
    ids = [str(row["id"]) for row in ctx.db.query("select id from papers order by id")][:25]
    for number, paper_id in enumerate(ids):
        save(ctx.db, ALICE, paper_id, f"2026-11-30T08:{number:02d}:00+00:00")
    reply = handle("saved", ctx)
    assert reply.text == "Your 25 saved papers, newest first:"
    assert reply.lines[0].startswith(f"`{ids[-1]}`")
    assert reply.lines[SAVED_SHOWN] == "and 5 more"
    exported = handle("saved export", ctx).attachment
    assert exported is not None
    assert len(bibtexparser.parse_string(exported.content).entries) == 25


def test_why_does_not_promise_a_pick_feedback_alone_cannot_make(ctx: Context) -> None:
    # Feedback's learned terms lift papers the topic's own terms do not reach above the
    # line, but the digest scores a refined topic only on its original's papers: `why`
    # must not say such a paper reaches the line (it said so, with a score of 22).
    handle("subscribe offline-rl", ctx)
    offline = ctx.catalog.get("offline-rl")
    assert offline is not None
    papers = [dict(row) for row in ctx.db.query("select * from papers")]
    papers = [found for row in papers if (found := get_paper(ctx.db, row["id"])) is not None]
    by_base = sorted(papers, key=lambda paper: -offline.score(PaperText.of(paper)))
    for paper in by_base[:2]:
        vote(ctx.db, str(paper["id"]), "U1", 1)
    for paper in by_base[-2:]:
        vote(ctx.db, str(paper["id"]), "U1", -1)
    threshold = ctx.catalog.threshold
    lifted = []
    for paper in papers:
        (topic,) = explain(ctx.db, CHANNEL, paper, ctx.catalog).topics
        if topic.score >= threshold > topic.base_score:
            lifted.append(str(paper["id"]))
    assert lifted  # the seeds have such papers (14 of 38)
    digest = build_digest(ctx.db, CHANNEL, NOW, catalog=ctx.catalog, settings=ctx.settings)
    assert not set(lifted) & {str(item.paper["id"]) for item in digest.items}
    text = reply_text(handle(f"why {lifted[0]}", ctx))
    assert "reaches the line" not in text
    assert "on the topic's own terms, and feedback only re-ranks the papers those reach" in text
    picked = str(digest.items[0].paper["id"])
    assert "(reaches the line)" in reply_text(handle(f"why {picked}", ctx))


def _one_vote(services: Services, channel: str, subscriber: str, voter: str) -> Store:
    """`channel` follows offline-rl (`subscriber` subscribed it) and `voter` voted LoMAP
    up there; the services' database."""
    db = open_db(services.db_path)
    handle("subscribe offline-rl", services.context(channel, subscriber))
    feedback_store.record_vote(
        db, channel, "offline-rl", seed_paper_id(db, "LoMAP"), voter, 1, None, AT
    )
    return db


async def test_discord_reset_check_reads_the_action_as_the_grammar_does(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    # The grammar takes `RESET` or ` reset` for reset; the permission check compared the
    # option with "reset" exactly, so another spelling cleared feedback without Manage
    # Channels (Discord's client offers only the choice; the check must not rely on it).
    channel = f"discord:{GUILD}/{CHANNEL_ID}"
    db = _one_vote(bot.services, channel, "@alice", "U1")
    for spelling in ("RESET", "Reset", " reset"):
        await dispatch(
            bot, fake_discord, interaction("feedback", {"action": spelling, "topic": "1"})
        )
        assert fake_discord.callbacks()[-1]["data"]["content"] == NEEDS_MANAGE_CHANNELS
    assert len(feedback_store.channel_feedback(db, channel)) == 1


async def test_discord_slow_feedback_is_deferred_ephemerally_and_a_reset_publicly(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_discord: FakeDiscord
) -> None:
    # Past the acknowledgement budget the answer is deferred; a defer decides who sees the
    # answer. Plain `feedback` only reads: it was deferred publicly (its verb "changes"),
    # so the channel saw an answer meant for the asker.
    from tests.fakes.discord_interactions import logged_in, make_services

    client = await logged_in(
        make_services(tmp_path, seed_paths, catalog, fake_discord), fake_discord, ack_budget=0.0
    )
    try:
        channel = f"discord:{GUILD}/{CHANNEL_ID}"
        handle("subscribe offline-rl", client.services.context(channel, "@alice"))
        # Each deferred answer is a callback and a follow-up: wait for both, or the first
        # one's late follow-up would count as the second's answer.
        await dispatch(client, fake_discord, interaction("feedback"), answers=2)
        await dispatch(
            client,
            fake_discord,
            interaction("feedback", {"action": "reset", "topic": "1"}, permissions=MANAGE_CHANNELS),
            answers=2,
        )
        read, reset = fake_discord.callbacks()
        assert read["type"] == reset["type"] == 5  # deferred
        assert read.get("data", {}).get("flags", 0) & EPHEMERAL
        assert not reset.get("data", {}).get("flags", 0) & EPHEMERAL
    finally:
        await client.close()


async def test_slack_socket_mode_feedback_reset_needs_a_manager(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """The same gate over Socket Mode: slash-command envelopes through bolt's app."""
    from urllib.parse import parse_qsl

    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    from bot.slack.app import create_app
    from bot.slack.client import make_client
    from tests.fakes.slack_requests import APP_TOKEN, BOT_TOKEN, make_services, slash_body
    from tests.fakes.waiting import eventually

    services = make_services(
        tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_SLACK_MANAGERS="U0BOSS"
    )
    channel = "slack:T0001/C0001"
    db = _one_vote(services, channel, "@boss", "U0001")
    app = create_app(services, make_client(BOT_TOKEN, fake_slack.api_url), signing_secret=None)
    handler = AsyncSocketModeHandler(app, APP_TOKEN)
    await handler.connect_async()

    async def send(text: str, user: str) -> dict[str, Any]:
        number = len(fake_slack.socket_acks)
        payload = dict(parse_qsl(slash_body(text, fake_slack.response_url(), user=user)))
        envelope_id = f"5d2c1b0a-0000-4000-8000-{number:012d}"
        await fake_slack.send_envelope(
            {"envelope_id": envelope_id, "type": "slash_commands", "payload": payload,
             "accepts_response_payload": True}
        )  # fmt: skip
        assert await eventually(lambda: len(fake_slack.socket_acks) > number)
        ack = fake_slack.socket_acks[number]
        assert ack["envelope_id"] == envelope_id
        return dict(ack.get("payload") or {})

    try:
        for text in ("feedback reset offline-rl", "FEEDBACK Reset 1"):
            refused = await send(text, "U0001")
            assert refused["text"].startswith("Sorry, only")
        assert len(feedback_store.channel_feedback(db, channel)) == 1
        shown = await send("feedback", "U0001")
        assert "👍 1 · 👎 0 on 1 paper" in json.dumps(shown, ensure_ascii=False)
        cleared = await send("feedback reset offline-rl", "U0BOSS")
        assert cleared["response_type"] == "in_channel"
        assert feedback_store.channel_feedback(db, channel) == []
    finally:
        await handler.close_async()


async def test_discord_feedback_with_a_topic_and_no_action_says_what_to_do(
    bot: PaperboyClient, fake_discord: FakeDiscord
) -> None:
    # The topic option autocompletes, so picking one without action is natural; the
    # grammar read it as the action and answered "`1` is not one of reset".
    channel = f"discord:{GUILD}/{CHANNEL_ID}"
    db = _one_vote(bot.services, channel, "@alice", "U1")
    for topic in ("1", "offline-rl", "reset"):
        await dispatch(bot, fake_discord, interaction("feedback", {"topic": topic}))
        answer = fake_discord.callbacks()[-1]["data"]
        assert answer["flags"] & EPHEMERAL
        assert "not one of" not in answer["content"]
        assert "choose action reset as well" in answer["content"], answer["content"]
    assert len(feedback_store.channel_feedback(db, channel)) == 1


def test_feedback_on_a_free_text_topic_no_longer_followed_names_its_text(
    ctx: Context, picked: list[str]
) -> None:
    # It was named by its slug (`custom:graph-neural-networks-for-molecules`), which
    # nobody typed; the channel's subscription rows keep the text.
    text = "graph neural networks for molecules"
    handle(f'subscribe "{text}"', ctx)
    topic_id = "custom:graph-neural-networks-for-molecules"
    feedback_store.record_vote(ctx.db, CHANNEL, topic_id, picked[0], "U1", -1, None, AT)
    handle(f'unsubscribe "{text}"', ctx)
    shown = reply_text(handle("feedback", ctx))
    assert f'"{text}" (no longer followed): 👍 0 · 👎 1 on 1 paper' in shown
    assert topic_id not in shown
    reply = handle(f'feedback reset "{text}"', ctx)
    assert reply.changed and f'feedback on "{text}" (1 vote)' in reply.text
    assert feedback_rows(ctx.db) == []
