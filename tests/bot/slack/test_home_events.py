"""The Home tab over the real paths: a signed `app_home_opened` Events API callback to the
HTTP endpoint and the same event through Socket Mode, then Home button clicks (signed
`block_actions`), each against the fake Slack Web API."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from bot.slack import app as app_module
from bot.slack import home
from bot.slack.client import make_client
from db import home as home_store
from db import open_db
from db.channels import active_subscriptions, add_subscription
from db.errors import Busy
from db.saved import is_saved
from digests.digest import ensure_channel
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_home import (  # noqa: F401
    AT,
    ME,
    MINE,
    OTHER,
    TEAM,
    home_click,
    home_opened,
    home_opened_envelope,
    http,
    json_headers,
    post_click,
    post_event,
    publishes,
    set_up,
    unsave_values,
    view_of,
)
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    HttpClient,
    make_services,
    signed_headers,
    slash_body,
    socket_mode,
)
from tests.fakes.waiting import eventually


def assert_full_home(view: dict[str, Any], state: dict[str, Any]) -> None:
    text = json.dumps(view, ensure_ascii=False)
    assert view["type"] == "home"
    assert "RLHF" in text  # my topic, with its button
    assert f'"value": "{state["mine"]}"' in text
    assert "<#C0001>" in text  # the channel I manage
    assert unsave_values(view) == [state["papers"][1], state["papers"][0]]
    assert state["digest_title"][:30] in text  # my last personal digest
    assert state["papers"][2] not in text and "Offline RL`" not in text  # not the other's


async def test_opening_the_home_tab_over_http_publishes_the_users_home(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    state = set_up(http.services)
    assert await post_event(http, home_opened()) == 200
    assert await eventually(lambda: publishes(fake_slack))
    [call] = publishes(fake_slack)
    assert call["user_id"] == ME
    assert_full_home(view_of(call), state)
    assert fake_slack.views[ME]["type"] == "home"  # Slack took it


async def test_the_messages_tab_and_unsigned_events_publish_nothing(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    assert await post_event(http, home_opened(tab="messages")) == 200
    body = json.dumps(home_opened())
    forged = {**json_headers(body), "X-Slack-Signature": "v0=" + "0" * 64}
    assert (await http.post("/slack/events", data=body, headers=forged)).status == 401
    for bad in (home_opened(user="alice"), home_opened(team="../x"), {"type": "event_callback"}):
        assert await post_event(http, bad) == 200
    assert await post_event(http, home_opened(user=OTHER)) == 200  # a real one, last
    assert await eventually(lambda: publishes(fake_slack))
    assert [call["user_id"] for call in publishes(fake_slack)] == [OTHER]


async def test_a_user_with_nothing_gets_a_helpful_empty_home(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    assert await post_event(http, home_opened()) == 200
    assert await eventually(lambda: publishes(fake_slack))
    text = json.dumps(view_of(publishes(fake_slack)[0]), ensure_ascii=False)
    for empty in (home.EMPTY_TOPICS, home.EMPTY_CHANNELS, home.EMPTY_SAVED, home.EMPTY_DIGEST):
        assert json.dumps(empty, ensure_ascii=False)[1:-1] in text


async def test_opening_the_home_tab_over_socket_mode(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    state = set_up(services)
    async with socket_mode(services, fake_slack):
        envelope = home_opened_envelope(envelope_id="6a9e2f4c-0d2b-4f6e-9a57-3c1f0e6b2d11")
        await fake_slack.send_envelope(envelope)
        assert await eventually(lambda: publishes(fake_slack))
        assert await eventually(lambda: fake_slack.socket_acks)
        acks = [ack["envelope_id"] for ack in fake_slack.socket_acks]
        assert acks == ["6a9e2f4c-0d2b-4f6e-9a57-3c1f0e6b2d11"]
        [call] = publishes(fake_slack)
        assert call["user_id"] == ME
        assert_full_home(view_of(call), state)


async def test_an_unsave_click_removes_the_paper_and_republishes(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    state = set_up(http.services)
    paper = state["papers"][1]
    assert await post_click(http, home_click(home.HOME_UNSAVE, paper)) == 200
    assert await eventually(lambda: publishes(fake_slack))
    db = open_db(http.services.db_path)
    assert not is_saved(db, f"slack:{TEAM}/{ME}", paper)
    [call] = publishes(fake_slack)
    assert call["user_id"] == ME
    view = view_of(call)
    assert unsave_values(view) == [state["papers"][0]]
    assert "Removed a paper from your saved papers." in json.dumps(view, ensure_ascii=False)


async def test_an_unsubscribe_click_removes_my_topic_and_republishes(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    state = set_up(http.services)
    changed: list[str] = []
    http.services.listeners.append(changed.append)  # the scheduler's hook
    value = str(state["mine"])
    assert await post_click(http, home_click(home.HOME_UNSUBSCRIBE, value)) == 200
    assert await eventually(lambda: publishes(fake_slack))
    assert active_subscriptions(open_db(http.services.db_path), MINE) == []
    assert changed == [MINE]  # the scheduler re-reads my digest
    text = json.dumps(view_of(publishes(fake_slack)[0]), ensure_ascii=False)
    assert json.dumps(home.EMPTY_TOPICS, ensure_ascii=False)[1:-1] in text
    assert "Unsubscribed from RLHF" in text  # the topic's label, not its id


@pytest.mark.parametrize("forged", ["other_saved", "other_topic", "channel_topic", "garbage"])
async def test_a_forged_value_changes_nothing(
    http: HttpClient, fake_slack: FakeSlack, forged: str
) -> None:
    state = set_up(http.services)
    changed: list[str] = []
    http.services.listeners.append(changed.append)
    db = open_db(http.services.db_path)
    channel_sub = active_subscriptions(db, "slack:T0001/C0001")[0]["id"]
    action, value = {
        "other_saved": (home.HOME_UNSAVE, state["papers"][2]),
        "other_topic": (home.HOME_UNSUBSCRIBE, str(state["theirs"])),
        "channel_topic": (home.HOME_UNSUBSCRIBE, str(channel_sub)),
        "garbage": (home.HOME_UNSAVE, "<!channel>' or 1=1"),
    }[forged]
    before = [
        list(db.query('select * from saved order by "user", paper_id')),
        list(db.query("select * from subscriptions order by id")),
    ]
    assert await post_click(http, home_click(action, value)) == 200
    assert await eventually(lambda: publishes(fake_slack))
    after = [
        list(db.query('select * from saved order by "user", paper_id')),
        list(db.query("select * from subscriptions order by id")),
    ]
    assert after == before
    assert changed == []  # nothing for the scheduler to re-read
    [call] = publishes(fake_slack)
    assert call["user_id"] == ME  # only the clicker's own Home, with the refusal on it
    text = json.dumps(view_of(call), ensure_ascii=False)
    assert home.NOT_YOURS in text


async def test_a_channel_change_records_its_manager_by_user_id(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    sent: list[str] = []

    async def command(text: str, channel: str) -> str:
        sent.append(text)  # a response_url of its own: no two bodies (signatures) alike
        body = slash_body(text, fake_slack.response_url(f"r{len(sent)}"), channel=channel)
        response = await http.session.post(
            http.url("/slack/events"), data=body, headers=signed_headers(body)
        )
        return str((await response.json())["text"])

    assert "subscribed this channel" in await command("subscribe rlhf", "C0001")
    assert "You now follow" in await command("subscribe --me offline-rl", "C0002")  # mine
    await command("find offline", "C0003")  # a lookup changes nothing
    await command("subscribe rlhf", "C0001")  # already: no change, still one record
    db = open_db(http.services.db_path)
    assert home_store.recorded_channels(db, f"slack:{TEAM}/{ME}") == ["slack:T0001/C0001"]
    # users.info gives no name here: the Home finds the channel by the user id alone.
    assert await post_event(http, home_opened()) == 200
    assert await eventually(lambda: publishes(fake_slack))
    text = json.dumps(view_of(publishes(fake_slack)[0]), ensure_ascii=False)
    assert "<#C0001>" in text and "C0002" not in text and "C0003" not in text
    assert "Offline RL" in text  # my own topic, under "Your topics"


async def test_the_home_finds_older_changes_by_the_users_slack_name(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    db = open_db(http.services.db_path)
    ensure_channel(db, "slack:T0001/C0009", http.services.settings, NOW)
    add_subscription(db, "slack:T0001/C0009", "rlhf", None, "@alice", AT)  # before ids
    fake_slack.queue("users.info", {"ok": True, "user": {"id": ME, "name": "alice"}})
    assert await post_event(http, home_opened()) == 200
    assert await eventually(lambda: publishes(fake_slack))
    assert "<#C0009>" in json.dumps(view_of(publishes(fake_slack)[0]))


def test_the_manifest_turns_the_home_tab_on() -> None:
    manifest = (Path(__file__).resolve().parents[3] / "deploy" / "slack-manifest.yml").read_text()
    features = manifest[manifest.index("features:") : manifest.index("oauth_config:")]
    assert "home_tab_enabled: true" in features
    assert "messages_tab_enabled: true" in features  # personal digests still arrive
    settings = manifest[manifest.index("settings:") :]
    assert "- app_home_opened" in settings[settings.index("event_subscriptions:") :]


async def test_an_unsave_click_over_socket_mode(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    state = set_up(services)
    async with socket_mode(services, fake_slack):
        for n, paper in enumerate((state["papers"][2], state["papers"][0])):  # theirs, mine
            await fake_slack.send_envelope(
                {
                    "envelope_id": f"0c1d2e3f-4a5b-6c7d-8e9f-00000000000{n}",
                    "type": "interactive",
                    "accepts_response_payload": False,
                    "payload": home_click(home.HOME_UNSAVE, paper),
                }
            )
            assert await eventually(lambda n=n: len(publishes(fake_slack)) == n + 1)
        db = open_db(services.db_path)
        assert is_saved(db, f"slack:{TEAM}/{OTHER}", state["papers"][2])  # forged: kept
        assert not is_saved(db, f"slack:{TEAM}/{ME}", state["papers"][0])
        refused, done = (view_of(call) for call in publishes(fake_slack))
        assert home.NOT_YOURS in json.dumps(refused, ensure_ascii=False)
        assert unsave_values(done) == [state["papers"][1]]
        assert await eventually(lambda: len(fake_slack.socket_acks) == 2)  # both acknowledged


async def test_slack_unreachable_for_users_info_still_publishes_and_no_traceback(
    http: HttpClient, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """A dropped users.info connection does not escape `legacy_names` (which would publish
    no Home and log a traceback as for a bug): the Home comes, found by the id alone. A
    dropped views.publish is one WARNING line, no traceback."""
    state = set_up(http.services)
    fake_slack.drop("users.info")  # every call: retries included
    assert await post_event(http, home_opened()) == 200
    assert await eventually(lambda: fake_slack.views.get(ME))
    assert_full_home(view_of(publishes(fake_slack)[0]), state)
    fake_slack.drop("views.publish")
    calls = len(publishes(fake_slack))
    caplog.clear()
    assert await post_event(http, home_opened(user=OTHER)) == 200
    assert await eventually(
        lambda: any("views.publish for" in r.getMessage() for r in caplog.records)
    )
    assert len(publishes(fake_slack)) > calls  # it was tried
    assert [r for r in caplog.records if r.levelno >= 40 or r.exc_info] == []


async def test_a_stop_waits_for_a_home_being_published(
    http: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint's stop gives a Home acknowledged before it its grace (the task is one
    of its follow-ups); only this test fails without it."""
    started, release = threading.Event(), threading.Event()
    build = home._build

    def held(*args: Any) -> dict[str, Any]:
        started.set()
        release.wait(10)
        return build(*args)

    monkeypatch.setattr(home, "_build", held)
    assert await post_event(http, home_opened()) == 200
    assert await asyncio.to_thread(started.wait, 10)
    stopping = asyncio.ensure_future(http.endpoint.close(grace=10))
    await asyncio.sleep(0.05)
    assert not stopping.done()  # waiting for the Home
    release.set()
    await stopping
    assert [call["user_id"] for call in publishes(fake_slack)] == [ME]


async def test_a_home_built_before_a_click_is_never_published_after_it(
    http: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tab opened (its Home being built, before the click's change) and an Unsave
    clicked on the Home Slack still shows: were the click's fresh Home published first and
    the stale one last, the unsaved paper would come back. One user's Homes are published
    one at a time, in order."""
    state = set_up(http.services)
    paper = state["papers"][1]
    started, release = threading.Event(), threading.Event()
    build = home._build

    def first_held(*args: Any) -> dict[str, Any]:
        view = build(*args)
        if not started.is_set():  # the first Home: built, held before it is published
            started.set()
            release.wait(10)
        return view

    monkeypatch.setattr(home, "_build", first_held)
    assert await post_event(http, home_opened()) == 200  # the tab opened
    assert await asyncio.to_thread(started.wait, 10)  # its Home is built
    assert await post_click(http, home_click(home.HOME_UNSAVE, paper)) == 200
    db = open_db(http.services.db_path)
    assert await eventually(lambda: not is_saved(db, f"slack:{TEAM}/{ME}", paper))
    await asyncio.sleep(0.2)  # room for the click's Home to be published (it was, before)
    release.set()
    assert await eventually(lambda: len(publishes(fake_slack)) == 2)
    last = view_of(publishes(fake_slack)[-1])
    assert unsave_values(last) == [state["papers"][0]]  # the click's fresh Home, last
    assert unsave_values(fake_slack.views[ME]) == [state["papers"][0]]


async def test_a_failure_to_record_the_manager_never_fails_the_change(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In Socket Mode the command commits, then records its manager; a locked database
    there must not answer "something went wrong" for a subscription that was made."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)

    def locked(*args: Any) -> None:
        raise Busy("database is locked")

    monkeypatch.setattr(app_module, "record_manager", locked)
    command = dict(parse_qsl(slash_body("subscribe rlhf", fake_slack.response_url())))
    client = make_client(BOT_TOKEN, fake_slack.api_url)
    [reply, *_] = await app_module.answer_payloads(services, client, command)
    assert "subscribed this channel" in reply["text"]
    assert len(active_subscriptions(open_db(services.db_path), "slack:T0001/C0001")) == 1


async def test_a_home_opened_while_stopping_is_acknowledged_and_not_published(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    """Nothing starts once the endpoint is stopping (only this test fails without the
    check)."""
    await http.endpoint.close(grace=0)
    assert await post_event(http, home_opened()) == 200
    assert not http.endpoint._followups  # no publish was started
    await asyncio.sleep(0.2)
    assert publishes(fake_slack) == []


async def test_a_home_click_over_http_writes_in_the_change_lane_and_a_stop_refuses_it(
    http: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Home clicks over HTTP get their executor from the click dispatcher, so they write
    in the endpoint's change lane under its stop rules, not in a thread of the services:
    one Unsave runs in the lane ("slack-change"); a second, waiting for the lane when the
    stop begins, never runs, so its paper stays saved."""
    state = set_up(http.services)
    first, second = state["papers"][1], state["papers"][0]
    started, release = threading.Event(), threading.Event()
    threads: list[str] = []
    real = home.unsave

    def held(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        started.set()
        assert release.wait(30)
        return real(*args)

    monkeypatch.setattr(home, "unsave", held)
    assert await post_click(http, home_click(home.HOME_UNSAVE, first)) == 200
    assert await asyncio.to_thread(started.wait, 10)
    assert await post_click(http, home_click(home.HOME_UNSAVE, second)) == 200
    await asyncio.sleep(0.1)  # the second click reaches the lane, behind the first
    stopping = asyncio.ensure_future(http.endpoint.close(grace=20))
    assert await eventually(lambda: http.endpoint._closing)
    release.set()
    await stopping
    db = open_db(http.services.db_path)
    assert not is_saved(db, f"slack:{TEAM}/{ME}", first)
    assert is_saved(db, f"slack:{TEAM}/{ME}", second)
    assert threads == ["slack-change"]
