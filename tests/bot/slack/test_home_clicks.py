"""A burst of Home clicks from one user publishes the Home a bounded number of times: one
at once, then one with the final state (the clicks' publishes go through the refreshes'
per-user coalescing and pace). Signed `block_actions` to the HTTP endpoint, against the
fake Slack Web API, as in tests/bot/slack/test_home_events.py."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from bot.slack import home
from bot.slack.client import make_client
from db import home as home_store
from db import open_db
from db.channels import active_subscriptions
from db.saved import is_saved
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.clock import FakeTime
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_buttons import settle
from tests.fakes.slack_home import (
    ME,
    MINE,
    OTHER,
    TEAM,
    home_click,
    http,
    post_click,
    publishes,
    set_up,
    unsave_values,
    view_of,
)
from tests.fakes.slack_requests import BOT_TOKEN, HttpClient, make_services
from tests.fakes.waiting import eventually

__all__ = ["http"]  # the fixture (tests/fakes/slack_home.py), used by name

BURST = 20


def clicks(action_id: str, value: str, count: int, user: str = ME) -> list[dict[str, Any]]:
    """`count` clicks of one button, each its own (a body signed twice is a replay)."""
    made = []
    for _ in range(count):
        payload = home_click(action_id, value, user)
        payload["actions"][0]["action_ts"] = f"1764493300.{next(_CLICKS):06d}"
        made.append(payload)
    return made


_CLICKS = itertools.count()


def text_of(call: dict[str, Any]) -> str:
    return json.dumps(view_of(call), ensure_ascii=False)


async def test_a_burst_of_refused_clicks_publishes_the_home_at_most_twice(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    """20 clicks with a forged value, as fast as they come: the first publishes the Home at
    once and the rest wait for one more, after the burst (not 20 views.publish in 0.1 s,
    with no limit)."""
    state = set_up(http.services)
    forged = clicks(home.HOME_UNSAVE, state["papers"][2], BURST)  # another user's paper
    statuses = await asyncio.gather(*(post_click(http, click) for click in forged))
    assert statuses == [200] * BURST
    await settle(http)
    calls = publishes(fake_slack)
    assert 1 <= len(calls) <= 2, len(calls)
    assert {call["user_id"] for call in calls} == {ME}
    assert home.NOT_YOURS in text_of(calls[-1])
    assert is_saved(open_db(http.services.db_path), f"slack:{TEAM}/{OTHER}", state["papers"][2])


async def test_the_last_publish_of_a_burst_shows_its_final_state(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    """A burst of refused clicks, then an Unsave and an Unsubscribe: at most two publishes,
    the last one with both changes and the last click's line."""
    state = set_up(http.services)
    for click in clicks(home.HOME_UNSAVE, state["papers"][2], BURST - 2):
        assert await post_click(http, click) == 200
    assert await post_click(http, home_click(home.HOME_UNSAVE, state["papers"][1])) == 200
    assert await post_click(http, home_click(home.HOME_UNSUBSCRIBE, str(state["mine"]))) == 200
    await settle(http)
    calls = publishes(fake_slack)
    assert 1 <= len(calls) <= 2, len(calls)
    db = open_db(http.services.db_path)
    assert not is_saved(db, f"slack:{TEAM}/{ME}", state["papers"][1])
    assert active_subscriptions(db, MINE) == []
    last = view_of(calls[-1])
    assert unsave_values(last) == [state["papers"][0]]
    assert "Unsubscribed from RLHF" in text_of(calls[-1])
    assert unsave_values(fake_slack.views[ME]) == [state["papers"][0]]  # what Slack shows


async def test_each_user_gets_their_own_publish(http: HttpClient, fake_slack: FakeSlack) -> None:
    """Coalescing is per user: a burst of mine never swallows another user's click."""
    state = set_up(http.services)
    mine = clicks(home.HOME_UNSAVE, state["papers"][2], 10)
    burst = [*mine[:5], *clicks(home.HOME_UNSAVE, state["papers"][2], 1, OTHER), *mine[5:]]
    assert await asyncio.gather(*(post_click(http, c) for c in burst)) == [200] * len(burst)
    await settle(http)
    users = [call["user_id"] for call in publishes(fake_slack)]
    assert users.count(OTHER) == 1 and 1 <= users.count(ME) <= 2
    assert not is_saved(open_db(http.services.db_path), f"slack:{TEAM}/{OTHER}", state["papers"][2])


class HeldTime(FakeTime):
    """`FakeTime` whose sleeps wait until `go` is set: the refreshes queue up meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        await self.go.wait()
        await super().sleep(seconds)


def backlog(services: Any, fake_slack: FakeSlack, users: list[str]) -> tuple[Any, HeldTime]:
    """Users who opened their Home, a pace of one at a time whose waits are held, and a
    client: the first refresh publishes, the next ones wait for the test to let time go."""
    db = open_db(services.db_path)
    for user in users:
        home_store.record_home_opened(db, f"slack:{TEAM}/{user}", NOW.isoformat())
    clock = HeldTime()
    pace = home.RefreshPace(at_once=1, monotonic=clock.monotonic, sleep=clock.sleep)
    home._pacing[asyncio.get_running_loop()] = pace
    return make_client(BOT_TOKEN, fake_slack.api_url, sleep=FakeTime().sleep), clock


async def test_a_click_goes_before_waiting_refreshes(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """A click during a backlog of refreshes (many personal digests just delivered) is
    published at the next turn, not after the backlog: its user is looking. A click needs
    no recorded opening (they clicked on their Home)."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    users = [f"U{n:04d}" for n in range(100, 110)]
    client, clock = backlog(services, fake_slack, users)
    waiting = [home.refresh_home(services, client, TEAM, user) for user in users]
    pace = home._pacing[asyncio.get_running_loop()]
    assert await eventually(lambda: len(publishes(fake_slack)) == 1 and pace.waiting == 9)
    clicked = home.refresh_after_click(services, client, TEAM, ME, "Clicked.")
    await asyncio.sleep(0.05)
    clock.go.set()
    assert await clicked
    assert all([await task for task in waiting if task is not None])
    # The refreshes' own order is their opening checks' (threads): not fixed.
    order = [call["user_id"] for call in publishes(fake_slack)]
    assert order[1] == ME and sorted(order[:1] + order[2:]) == users
    assert "Clicked." in text_of(publishes(fake_slack)[1])


async def test_a_click_takes_along_a_refresh_waiting_for_the_same_user(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """My refresh waiting behind others (my digest delivered), then my click: one publish
    for both, at the next turn, with the click's line."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    others = [f"U{n:04d}" for n in range(100, 106)]
    client, clock = backlog(services, fake_slack, [*others, ME])
    waiting = [home.refresh_home(services, client, TEAM, user) for user in others]
    pace = home._pacing[asyncio.get_running_loop()]
    assert await eventually(lambda: len(publishes(fake_slack)) == 1 and pace.waiting == 5)
    mine = home.refresh_home(services, client, TEAM, ME)
    assert await eventually(lambda: pace.waiting == 6)  # mine, last in the queue
    clicked = home.refresh_after_click(services, client, TEAM, ME, "Clicked.")
    assert clicked is mine
    clock.go.set()
    assert await clicked
    assert all([await task for task in waiting if task is not None])
    order = [call["user_id"] for call in publishes(fake_slack)]
    assert order[1] == ME and sorted(order[:1] + order[2:]) == others
    assert "Clicked." in text_of(publishes(fake_slack)[1])


async def test_once_refreshes_stop_a_click_still_publishes_at_once(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """Slack refused the token: the waiting refreshes give up without taking turns, so a
    click after them waits one turn at most, not one per refresh given up."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    users = [f"U{n:04d}" for n in range(100, 110)]
    db = open_db(services.db_path)
    for user in users:
        home_store.record_home_opened(db, f"slack:{TEAM}/{user}", NOW.isoformat())
    fake_slack.queue("views.publish", {"ok": False, "error": "token_revoked"})
    clock = FakeTime()
    pace = home.RefreshPace(at_once=1, monotonic=clock.monotonic, sleep=clock.sleep)
    home._pacing[asyncio.get_running_loop()] = pace
    client = make_client(BOT_TOKEN, fake_slack.api_url, sleep=FakeTime().sleep)
    start = clock.now
    tasks = [home.refresh_home(services, client, TEAM, user) for user in users]
    assert [await task for task in tasks if task is not None] == [False] * len(users)
    assert pace.stopped == "token_revoked" and len(publishes(fake_slack)) == 1
    # The first published at once; the nine behind it gave up without a turn each.
    assert clock.sleeps == [] and clock.now == start
    assert await home.refresh_after_click(services, client, TEAM, ME, "Clicked.")
    assert round(clock.now - start, 6) <= pace.interval
    assert publishes(fake_slack)[-1]["user_id"] == ME
