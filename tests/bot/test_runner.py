"""`run`: parts start concurrently, an unreachable platform is retried in the background,
and a stop is seen at once, even during start-up."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.runner import SchedulerComponent, SlackComponent, run
from digests.topics import Catalog
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import APP_TOKEN, make_services
from tests.fakes.waiting import eventually


class NeverStarts:
    """A platform whose start hangs (a websocket that never answers)."""

    name = "stuck"

    def __init__(self) -> None:
        self.stopped = False

    async def start(self) -> str:
        await asyncio.Event().wait()
        return "never"

    async def stop(self) -> None:
        self.stopped = True


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


async def test_a_stop_during_start_up_is_seen_at_once(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    stuck = NeverStarts()
    stop = asyncio.Event()
    running = asyncio.create_task(run([stuck, SchedulerComponent(services, [stuck])], stop))
    # the scheduler does not wait for the stuck platform
    assert await eventually(lambda: any(m.startswith("scheduler:") for m in messages(caplog)))
    stop.set()
    await asyncio.wait_for(running, 10)
    assert stuck.stopped
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_an_unreachable_socket_mode_is_retried_in_the_background(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    services = make_services(tmp_path, seed_paths, catalog, fake_slack, SLACK_APP_TOKEN=APP_TOKEN)
    for _ in range(3):  # the websocket URL Slack hands out cannot be reached, three times
        fake_slack.queue("apps.connections.open", {"ok": True, "url": "ws://127.0.0.1:1/socket"})
    slack = SlackComponent(services)
    stop = asyncio.Event()
    running = asyncio.create_task(
        run([slack, SchedulerComponent(services, [slack])], stop, retry_seconds=0.05)
    )
    assert await eventually(
        lambda: "slack: Socket Mode connected as @paperboy in team T0001" in messages(caplog)
    )
    failures = [m for m in messages(caplog) if "cannot open the Socket Mode connection" in m]
    assert len(failures) == 3  # one line per failed attempt
    assert failures[0].startswith("slack: cannot open the Socket Mode connection (ClientConnector")
    assert "trying again in 0 s" in failures[0]
    assert any(m.startswith("scheduler:") for m in messages(caplog))  # not held up
    assert all(r.exc_info is None for r in caplog.records)  # no traceback anywhere
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 3
    stop.set()
    await asyncio.wait_for(running, 10)


async def test_sigterm_while_socket_mode_is_unreachable_stops_promptly(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    services = make_services(tmp_path, seed_paths, catalog, fake_slack, SLACK_APP_TOKEN=APP_TOKEN)
    for _ in range(1000):
        fake_slack.queue("apps.connections.open", {"ok": True, "url": "ws://127.0.0.1:1/socket"})
    slack = SlackComponent(services)
    stop = asyncio.Event()
    running = asyncio.create_task(run([slack, SchedulerComponent(services, [slack])], stop))
    assert await eventually(
        lambda: any("cannot open the Socket Mode connection" in m for m in messages(caplog))
    )
    stop.set()  # what SIGTERM does
    await asyncio.wait_for(running, 10)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


class SlowToCancel(NeverStarts):
    """A platform whose start, once cancelled, takes a while to clean up (a websocket
    being closed): the event loop runs other work meanwhile."""

    async def start(self) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)
            raise
        return "never"


async def test_no_send_can_start_once_stopping_is_logged(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No send starts after "stopping" is logged: the scheduler must refuse new sends from the moment that line is written, not once its turn to stop
    comes (after the starting parts have been cancelled, which yields to the loop)."""
    caplog.set_level(logging.INFO)
    services = make_services(tmp_path, seed_paths, catalog, fake_slack)
    slow = SlowToCancel()
    scheduler = SchedulerComponent(services, [slow])
    seen: list[bool] = []

    class AtStopping(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage() == "stopping":
                seen.append(scheduler.scheduler is not None and scheduler.scheduler.stopping)

    watcher = AtStopping()
    logging.getLogger("bot.runner").addHandler(watcher)
    try:
        stop = asyncio.Event()
        running = asyncio.create_task(run([slow, scheduler], stop))
        assert await eventually(lambda: any(m.startswith("scheduler:") for m in messages(caplog)))
        stop.set()
        await asyncio.wait_for(running, 10)
    finally:
        logging.getLogger("bot.runner").removeHandler(watcher)
    assert seen == [True]


@pytest.mark.parametrize(
    ("answer", "status", "outcome"),
    [
        ({"ok": False, "error": "internal_error"}, 500, "unavailable"),  # an outage
        ({"ok": False, "error": "invalid_auth"}, 200, "refused"),
    ],
)
async def test_a_slack_outage_at_socket_mode_start_is_retried_not_fatal(
    tmp_path: Path,
    seed_paths: list[Path],
    catalog: Catalog,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
    answer: dict[str, object],
    status: int,
    outcome: str,
) -> None:
    """apps.connections.open answering 500 `internal_error` is an outage, not a refused app
    token: `paperboy run` retries it in the background rather than stop, and slack_sdk's
    bare ERROR line for it is kept out."""
    from bot.runner import Unavailable
    from config.settings import SettingsError

    services = make_services(tmp_path, seed_paths, catalog, fake_slack, SLACK_APP_TOKEN=APP_TOKEN)
    fake_slack.queue("apps.connections.open", answer, status=status)
    slack = SlackComponent(services)
    with pytest.raises(SettingsError) as caught:
        await asyncio.wait_for(slack.start(), 10)
    await slack.stop()
    assert isinstance(caught.value, Unavailable) == (outcome == "unavailable")
    if outcome == "refused":
        assert str(caught.value) == "SLACK_APP_TOKEN was refused by Slack (invalid_auth)"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
