"""The Slack app over HTTP: signed slash commands through the real bolt AsyncApp."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bot.services import Services
from bot.slack.app import WORKING
from db import open_db
from db.channels import active_subscriptions, add_subscription
from db.errors import Unavailable
from digests.digest import ensure_channel
from digests.failures import UNAVAILABLE
from digests.ingest import ingest_files
from digests.topics import Catalog
from tests.conftest import NOW
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import (
    HttpClient,
    assert_valid_blocks,
    make_services,
    signed_headers,
    slash_body,
    start_http,
)
from tests.fakes.waiting import eventually

CHANNEL = "slack:T0001/C0001"


@pytest.fixture
async def http(tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack):  # type: ignore[no-untyped-def]
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    client = await start_http(services, fake_slack)
    yield client
    await client.close()


async def post(
    client: HttpClient, fake: FakeSlack, text: str, **kwargs: Any
) -> tuple[int, dict[str, Any]]:
    body = slash_body(text, fake.response_url(), **kwargs)
    response = await client.post("/slack/events", data=body, headers=signed_headers(body))
    raw = await response.text()
    return response.status, (json.loads(raw) if raw.startswith("{") else {"raw": raw})


def subscriptions(services: Services, channel: str = CHANNEL) -> list[str]:
    return [row["topic_id"] for row in active_subscriptions(open_db(services.db_path), channel)]


async def test_subscribe_answers_the_channel(http: HttpClient, fake_slack: FakeSlack) -> None:
    status, body = await post(http, fake_slack, "subscribe offline-rl")
    assert status == 200
    assert body["response_type"] == "in_channel"
    assert "@alice subscribed this channel to Offline RL" in body["text"]
    assert_valid_blocks(body["blocks"])
    assert subscriptions(http.services) == ["offline-rl"]


async def test_lookups_are_ephemeral_block_kit(http: HttpClient, fake_slack: FakeSlack) -> None:
    status, body = await post(http, fake_slack, "find alpha dpo")
    assert status == 200 and body["response_type"] == "ephemeral"
    assert_valid_blocks(body["blocks"])
    assert "AlphaDPO" in json.dumps(body["blocks"])
    _, helped = await post(http, fake_slack, "")
    assert helped["response_type"] == "ephemeral" and "/papers find" in json.dumps(helped["blocks"])
    _, typo = await post(http, fake_slack, "subscrib offline-rl")
    assert "Did you mean `/papers subscribe`?" in json.dumps(typo["blocks"])


async def test_a_forged_signature_is_refused_and_changes_nothing(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    body = slash_body("subscribe offline-rl", fake_slack.response_url())
    headers = signed_headers(body, secret="0" * 32)
    response = await http.post("/slack/events", data=body, headers=headers)
    assert response.status == 401
    assert subscriptions(http.services) == []


async def test_a_stale_request_is_refused_and_changes_nothing(
    http: HttpClient, fake_slack: FakeSlack
) -> None:
    body = slash_body("subscribe offline-rl", fake_slack.response_url())
    headers = signed_headers(body, timestamp=int(time.time()) - 6 * 60)
    response = await http.post("/slack/events", data=body, headers=headers)
    assert response.status == 401
    assert subscriptions(http.services) == []


async def test_a_slow_command_is_acknowledged_first_and_answered_later(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot.slack import app as slack_app

    release = threading.Event()
    real_handle = slack_app.handle

    def slow_handle(text: str, ctx: Any) -> Any:
        release.wait(30)  # held until the test has seen the acknowledgement
        return real_handle(text, ctx)

    monkeypatch.setattr(slack_app, "handle", slow_handle)
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    client = await start_http(services, fake_slack, ack_budget=0.2)
    try:
        # The handler cannot finish before we release it, so this answer is the ack alone:
        # if the app waited for the handler, this request would never return.
        status, body = await asyncio.wait_for(post(client, fake_slack, "find diffusion"), 10)
        assert status == 200 and body["text"] == WORKING and body["response_type"] == "ephemeral"
        assert fake_slack.responses == []
        release.set()
        assert await eventually(lambda: fake_slack.responses)
        [answer] = fake_slack.responses
        assert answer["response_type"] == "ephemeral"
        assert "Top 5" in answer["text"]
    finally:
        release.set()
        await client.close()


async def test_admins_only_refuses_others_politely(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(
        tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_SLACK_MANAGERS="admins"
    )
    fake_slack.admins.add("UADMIN")
    client = await start_http(services, fake_slack)
    try:
        _, refused = await post(client, fake_slack, "subscribe robotics")
        assert refused["response_type"] == "ephemeral"
        assert refused["text"].startswith("Sorry, only workspace admins")
        assert subscriptions(services) == []
        _, lookup = await post(client, fake_slack, "topics")  # lookups stay open to all
        assert "topics" in lookup["text"]
        _, allowed = await post(client, fake_slack, "subscribe robotics", user="UADMIN")
        assert allowed["response_type"] == "in_channel"
        assert subscriptions(services) == ["robotics"]
        assert [
            call.args.get("user") for call in fake_slack.calls if call.method == "users.info"
        ] == ["U0001", "UADMIN"]
    finally:
        await client.close()


async def test_a_list_of_managers(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(
        tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_SLACK_MANAGERS="U0BOSS,UOTHER"
    )
    client = await start_http(services, fake_slack)
    try:
        _, refused = await post(client, fake_slack, "schedule monday 10:00")
        assert refused["text"].startswith("Sorry, only")
        _, allowed = await post(client, fake_slack, "schedule monday 10:00", user="U0BOSS")
        assert allowed["response_type"] == "in_channel"
    finally:
        await client.close()


async def test_mentions_in_paper_text_are_inert(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    hostile = tmp_path / "hostile.tsv"
    hostile.write_text(
        "title\tabstract\n<!channel> Ping Everyone\t"
        "We propose PingNet for <!here> & <@U123> alike.\n"
    )
    ingest_files(open_db(services.db_path), [hostile], now=NOW)
    client = await start_http(services, fake_slack)
    try:
        _, body = await post(client, fake_slack, "find pingnet")
        text = json.dumps(body)
        assert "<!channel>" not in text and "<!here>" not in text and "<@U123>" not in text
        assert "&lt;!channel&gt;" in text
    finally:
        await client.close()


async def test_a_crash_in_a_command_is_a_polite_reply(
    http: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.slack import app as slack_app

    def broken(text: str, ctx: Any) -> Any:
        raise RuntimeError("database on fire")

    monkeypatch.setattr(slack_app, "handle", broken)
    status, body = await post(http, fake_slack, "list")
    assert status == 200
    assert body["text"].startswith("Sorry, something went wrong")
    assert "Traceback" not in json.dumps(body) and "on fire" not in json.dumps(body)


async def test_a_database_outage_is_said_as_such(
    http: HttpClient, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.slack import app as slack_app

    def down(text: str, ctx: Any) -> Any:
        raise Unavailable("connection refused: is the server running on host db5?")

    monkeypatch.setattr(slack_app, "handle", down)
    status, body = await post(http, fake_slack, "subscribe rlhf")
    assert status == 200 and body["text"] == UNAVAILABLE
    assert "db5" not in json.dumps(body)


async def test_a_large_digest_preview_fits_one_response_url(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_slack: FakeSlack
) -> None:
    """A response_url takes at most 5 replies: a big preview fits in them."""
    services = make_services(tmp_path, seed_paths, catalog, fake_slack, PAPERBOY_DIGEST_SIZE="400")
    many = tmp_path / "many.tsv"
    rows = [
        f"Offline RL study {n}\tWe study offline reinforcement learning from a fixed dataset "
        f"with conservative Q-learning and behavior regularization, case word{n}x{n * 7}."
        for n in range(400)
    ]
    many.write_text("title\tabstract\n" + "\n".join(rows) + "\n")
    ingest_files(open_db(services.db_path), [many], now=NOW)
    db = open_db(services.db_path)
    ensure_channel(db, CHANNEL, services.settings, NOW)
    add_subscription(db, CHANNEL, "offline-rl", None, "test", NOW.isoformat())
    client = await start_http(services, fake_slack, ack_budget=0.001)
    try:
        status, ack = await post(client, fake_slack, "digest preview")
        assert status == 200
        expected = 5 if ack["text"] == WORKING else 4  # else the ack was the first message
        assert await eventually(lambda: len(fake_slack.responses) >= expected)
        await client.endpoint.close()  # waits for the answer to be posted whole
        replies = fake_slack.responses
        assert len(replies) == expected  # a response_url takes 5 at most
        for reply in replies:
            assert_valid_blocks(reply["blocks"])
        last = json.dumps(replies[-1]["blocks"])
        assert "more papers, left out here" in last
    finally:
        await client.close()
