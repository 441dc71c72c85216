"""Starting the Discord bot: a refused token is one line; a good one logs in and syncs."""

from __future__ import annotations

from pathlib import Path

import discord
import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.runner import DiscordComponent
from config.settings import SettingsError
from digests.topics import Catalog
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_interactions import TOKEN, make_services


async def test_a_refused_token_is_one_line_without_the_token(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_discord: FakeDiscord
) -> None:
    fake_discord.token_ok = False
    component = DiscordComponent(
        make_services(tmp_path, seed_paths, catalog, fake_discord), gateway=False
    )
    with pytest.raises(SettingsError) as caught:
        await component.start()
    assert str(caught.value) == "DISCORD_TOKEN was refused by Discord (401 Unauthorized)"


async def test_login_syncs_and_reports_one_line(
    tmp_path: Path, seed_paths: list[Path], catalog: Catalog, fake_discord: FakeDiscord
) -> None:
    services = make_services(
        tmp_path, seed_paths, catalog, fake_discord, DISCORD_GUILD_ID="111111111111111111"
    )
    component = DiscordComponent(services, gateway=False)
    line = await component.start()
    await component.stop()
    assert line == "discord: logged in as paperboy, /papers for server 111111111111111111 (guild)"
    assert all(request.authorization == f"Bot {TOKEN}" for request in fake_discord.requests)


def test_a_malformed_token_is_named_not_printed(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run"], env={"DISCORD_TOKEN": "not a token", "PAPERBOY_DB": str(tmp_path / "x.db")}
    )
    assert result.exit_code == 2
    assert "DISCORD_TOKEN=(hidden) is not valid" in result.output
    assert "not a token" not in result.output


def test_the_invite_permissions_integer() -> None:
    wanted = discord.Permissions(
        view_channel=True, send_messages=True, embed_links=True, send_messages_in_threads=True
    )
    readme = (Path(__file__).resolve().parents[3] / "docs" / "how-to" / "discord.md").read_text()
    assert f"permissions={wanted.value}" in readme
    assert "scope=bot+applications.commands" in readme
