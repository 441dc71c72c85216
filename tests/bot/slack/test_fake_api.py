"""The fake Slack Web API's update, DM, upload and Home methods, driven by the real
slack_sdk client: what Paperboy's tests rely on answers as Slack does (ok and error
shapes)."""

from __future__ import annotations

import json

import pytest
from slack_sdk.errors import SlackApiError

from bot.slack.client import make_client
from tests.fakes.slack_api import FakeSlack

TOKEN = "xoxb-test"


def button(action_id: str, value: str = "1:p1") -> dict[str, object]:
    text = {"type": "plain_text", "text": "👍"}
    return {"type": "button", "action_id": action_id, "value": value, "text": text}


async def test_chat_update_changes_a_posted_message(fake_slack: FakeSlack) -> None:
    client = make_client(TOKEN, fake_slack.api_url)
    posted = await client.chat_postMessage(channel="C0001", text="digest", blocks=[])
    blocks = [{"type": "actions", "block_id": "b1", "elements": [button("paperboy_up")]}]
    updated = await client.chat_update(channel="C0001", ts=posted["ts"], blocks=blocks)
    assert updated["ok"] and updated["ts"] == posted["ts"]
    assert updated["message"]["blocks"] == blocks
    assert fake_slack.messages[("C0001", posted["ts"])]["blocks"] == blocks
    with pytest.raises(SlackApiError) as missing:
        await client.chat_update(channel="C0001", ts="1.000000", blocks=blocks)
    assert missing.value.response["error"] == "message_not_found"
    with pytest.raises(SlackApiError) as empty:
        await client.chat_update(channel="C0001", ts=posted["ts"], text="")
    assert empty.value.response["error"] == "no_text"


async def test_blocks_past_block_kit_limits_are_invalid_blocks(fake_slack: FakeSlack) -> None:
    client = make_client(TOKEN, fake_slack.api_url)
    posted = await client.chat_postMessage(channel="C0001", text="digest")
    too_many = [button(f"a{i}") for i in range(26)]
    with pytest.raises(SlackApiError) as refused:
        await client.chat_update(
            channel="C0001", ts=posted["ts"], blocks=[{"type": "actions", "elements": too_many}]
        )
    assert refused.value.response["error"] == "invalid_blocks"
    assert "no more than 25 items" in refused.value.response["errors"][0]
    twins = [{"type": "divider", "block_id": "x"}, {"type": "divider", "block_id": "x"}]
    with pytest.raises(SlackApiError) as duplicate:
        await client.chat_postMessage(channel="C0001", text="t", blocks=twins)
    assert duplicate.value.response["error"] == "invalid_blocks"


async def test_conversations_open_finds_the_same_dm(fake_slack: FakeSlack) -> None:
    client = make_client(TOKEN, fake_slack.api_url)
    first = await client.conversations_open(users="U0001")
    again = await client.conversations_open(users=["U0001"])
    assert first["channel"]["id"].startswith("D")
    assert again["channel"]["id"] == first["channel"]["id"]
    assert again["already_open"] and "already_open" not in first.data
    fake_slack.unknown_users.add("U0404")
    for users, error in (("U0404", "user_not_found"), ("UBOT", "cannot_dm_bot")):
        with pytest.raises(SlackApiError) as refused:
            await client.conversations_open(users=users)
        assert refused.value.response["error"] == error


async def test_files_upload_v2_reaches_the_dm(fake_slack: FakeSlack) -> None:
    client = make_client(TOKEN, fake_slack.api_url)
    dm = (await client.conversations_open(users="U0001"))["channel"]["id"]
    content = "@misc{a, title={Ünïcode {LaTeX} $x^2$}}\n"
    done = await client.files_upload_v2(
        channel=dm, filename="saved.bib", content=content, initial_comment="Your saved papers"
    )
    assert done["ok"] and done["file"]["name"] == "saved.bib"
    [upload] = fake_slack.uploads
    assert upload["content"].decode() == content
    assert upload["channel_id"] == dm and upload["initial_comment"] == "Your saved papers"
    methods = [call.method for call in fake_slack.calls]
    assert methods[-2:] == ["files.getUploadURLExternal", "files.completeUploadExternal"]
    with pytest.raises(SlackApiError) as never_uploaded:
        await client.files_completeUploadExternal(files=[{"id": "F404", "title": "x"}])
    assert never_uploaded.value.response["error"] == "file_not_found"


async def test_views_publish_stores_the_home_view(fake_slack: FakeSlack) -> None:
    client = make_client(TOKEN, fake_slack.api_url)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Your papers"}}]
    published = await client.views_publish(user_id="U0001", view={"type": "home", "blocks": blocks})
    assert published["view"]["type"] == "home" and published["view"]["id"].startswith("V")
    assert fake_slack.views["U0001"]["blocks"] == blocks
    again = await client.views_publish(
        user_id="U0001", view=json.dumps({"type": "home", "blocks": blocks})
    )
    assert again["view"]["id"] == published["view"]["id"]
    with pytest.raises(SlackApiError) as stale:
        await client.views_publish(
            user_id="U0001", view={"type": "home", "blocks": blocks}, hash=published["view"]["hash"]
        )
    assert stale.value.response["error"] == "hash_conflict"
    with pytest.raises(SlackApiError) as modal:
        await client.views_publish(user_id="U0001", view={"type": "modal", "blocks": blocks})
    assert modal.value.response["error"] == "invalid_arguments"
    assert modal.value.response["response_metadata"]["messages"]
    fake_slack.home_enabled = False
    with pytest.raises(SlackApiError) as off:
        await client.views_publish(user_id="U0002", view={"type": "home", "blocks": blocks})
    assert off.value.response["error"] == "not_enabled"
