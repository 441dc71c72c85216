"""Slack edge cases: the App Home kept current without being opened
again. It is re-published when the user's personal digest is delivered (through the
runner's Slack poster) and when they save a paper with a digest's 🔖 button, only for
users who opened their Home before, never for a channel's members; one user's waiting
refreshes are taken together. Signed requests to the HTTP endpoint, Socket Mode envelopes,
and the fake Web API, as in tests/bot/slack/test_home_events.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.runner import components
from bot.send import send_digest
from bot.slack import home
from bot.slack.client import make_client
from bot.slack.home import HomeRefreshingPoster
from db import home as home_store
from db import open_db
from db.channels import add_subscription
from digests.actions import SAVE
from digests.digest import ensure_channel
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_buttons import Env, click, click_payload, env, item_blocks, paper_of, settle
from tests.fakes.slack_home import (
    home_opened,
    home_opened_envelope,
    post_event,
    publishes,
    unsave_values,
    view_of,
)
from tests.fakes.slack_requests import APP_TOKEN, BOT_TOKEN, make_services, socket_mode, start_http
from tests.fakes.waiting import eventually

__all__ = ["env"]  # the fixture (tests/fakes/slack_buttons.py), used by name

TEAM, ME, OTHER = "T0001", "U0001", "U0002"


async def refreshed() -> None:
    """Wait for the Home refreshes started so far to finish."""
    assert await eventually(lambda: not home._running)


def published_to(fake: FakeSlack, user: str) -> list[dict[str, Any]]:
    return [view_of(call) for call in publishes(fake) if call["user_id"] == user]


async def test_a_delivered_personal_digest_republishes_the_home_of_its_user(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack, SLACK_APP_TOKEN=APP_TOKEN)
    http = await start_http(services, fake_slack)
    try:
        assert await post_event(http, home_opened(ME)) == 200  # only I opened my Home
        assert await eventually(lambda: published_to(fake_slack, ME))
        await settle(http)
    finally:
        await http.close()
    db = open_db(services.db_path)
    channels = [f"slack:{TEAM}/@{ME}", f"slack:{TEAM}/@{OTHER}", f"slack:{TEAM}/C0001"]
    for channel in channels:  # my digest, the other's, and a channel's (I manage it)
        ensure_channel(db, channel, services.settings, NOW)
        add_subscription(db, channel, "offline-rl", None, "@alice", NOW.isoformat())
    home_store.record_manager(db, channels[2], f"slack:{TEAM}/{ME}", NOW.isoformat())
    # The poster the runner's scheduler delivers with.
    [slack_part, *_, scheduler] = components(services, slack_http=False, port=3000)
    slack_part.client = make_client(BOT_TOKEN, fake_slack.api_url)  # type: ignore[attr-defined]
    poster = scheduler.posters()["slack"]  # type: ignore[attr-defined]
    assert isinstance(poster, HomeRefreshingPoster)
    before = len(publishes(fake_slack))
    mine, _ = await send_digest(
        db, poster, channels[0], NOW, catalog=catalog, settings=services.settings
    )
    await refreshed()
    [view] = [view_of(call) for call in publishes(fake_slack)[before:]]
    assert publishes(fake_slack)[-1]["user_id"] == ME
    text = json.dumps(view, ensure_ascii=False)
    assert "Your last personal digest" in text
    assert str(mine.items[0].paper["title"])[:30] in text  # the digest just delivered
    for channel in channels[1:]:  # the other user never opened theirs; a channel's digest
        _, result = await send_digest(
            db, poster, channel, NOW, catalog=catalog, settings=services.settings
        )
        assert result.state == "done", result
    await refreshed()
    assert len(publishes(fake_slack)) == before + 1
    assert published_to(fake_slack, OTHER) == []


async def test_a_save_from_a_digest_republishes_the_savers_home(
    env: Env, fake_slack: FakeSlack
) -> None:
    _, http, _, ts = env
    assert await post_event(http, home_opened(ME)) == 200
    assert await eventually(lambda: published_to(fake_slack, ME))
    await settle(http)
    assert unsave_values(published_to(fake_slack, ME)[-1]) == []
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    assert await click(http, click_payload(fake_slack, ts, SAVE)) == 200
    await settle(http)
    await refreshed()
    assert [unsave_values(view) for view in published_to(fake_slack, ME)] == [[], [paper]]
    # Saved again ("already in your saved papers"): nothing changed, nothing published.
    assert await click(http, click_payload(fake_slack, ts, SAVE)) == 200
    await settle(http)
    await refreshed()
    assert len(published_to(fake_slack, ME)) == 2
    # Someone who never opened their Home: their save publishes nothing.
    assert await click(http, click_payload(fake_slack, ts, SAVE, user=OTHER)) == 200
    await settle(http)
    await refreshed()
    assert published_to(fake_slack, OTHER) == []
    assert "Saved" in fake_slack.responses[-1]["text"]


async def test_opening_the_home_over_socket_mode_is_remembered(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    key = f"slack:{TEAM}/{ME}"
    assert not home_store.has_opened_home(open_db(services.db_path), key)
    async with socket_mode(services, fake_slack):
        await fake_slack.send_envelope(home_opened_envelope(ME))
        assert await eventually(lambda: published_to(fake_slack, ME))
    db = open_db(services.db_path)
    assert home_store.has_opened_home(db, key)
    assert not home_store.has_opened_home(db, f"slack:{TEAM}/{OTHER}")
    assert not home_store.record_home_opened(db, key, NOW.isoformat())  # once


async def test_refreshes_waiting_for_one_user_are_taken_together(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    db = open_db(services.db_path)
    home_store.record_home_opened(db, f"slack:{TEAM}/{ME}", NOW.isoformat())
    client = make_client(BOT_TOKEN, fake_slack.api_url)
    first = home.refresh_home(services, client, TEAM, ME)
    assert first is not None
    assert home.refresh_home(services, client, TEAM, ME) is None  # the first shows it too
    assert home.refresh_home(services, client, TEAM, OTHER) is not None  # another user's
    assert await first
    await refreshed()
    assert len(published_to(fake_slack, ME)) == 1
    assert published_to(fake_slack, OTHER) == []  # never opened: nothing published
    again = home.refresh_home(services, client, TEAM, ME)  # a later change: a new one
    assert again is not None and await again
    assert len(published_to(fake_slack, ME)) == 2


async def test_a_slack_connect_guests_save_shows_in_their_own_workspaces_home(
    env: Env, fake_slack: FakeSlack
) -> None:
    """A guest's Home comes from their own workspace (app_home_opened's team_id); so does
    the list their save goes to, and the refresh that follows."""
    _, http, _, ts = env
    guest, their_team = "U0009", "T0009"
    assert await post_event(http, home_opened(guest, team=their_team)) == 200
    assert await eventually(lambda: published_to(fake_slack, guest))
    await settle(http)
    paper = paper_of(item_blocks(fake_slack, ts)[0])
    payload = click_payload(fake_slack, ts, SAVE, user=guest)
    payload["user"]["team_id"] = their_team  # team.id stays the installing workspace's
    assert await click(http, payload) == 200
    await settle(http)
    await refreshed()
    assert [unsave_values(view) for view in published_to(fake_slack, guest)] == [[], [paper]]
