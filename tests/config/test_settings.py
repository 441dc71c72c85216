from __future__ import annotations

import logging
from pathlib import Path

import pytest

from config.settings import (
    DEFAULT_DB,
    SETTINGS,
    SettingsError,
    load_settings,
    read_dotenv,
    reference_markdown,
)


def test_defaults_without_environment() -> None:
    settings = load_settings({}, dotenv=None)
    assert settings.db_path == DEFAULT_DB
    assert settings.digest_size == 5


def test_environment_overrides_dotenv(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text('# comment\nexport PAPERBOY_DB="from-dotenv.db"\nPAPERBOY_DIGEST_SIZE=7\n')
    assert read_dotenv(dotenv)["PAPERBOY_DB"] == "from-dotenv.db"
    settings = load_settings({"PAPERBOY_DIGEST_SIZE": "3"}, dotenv=dotenv)
    assert settings.db_path == Path("from-dotenv.db")
    assert settings.digest_size == 3


@pytest.mark.parametrize("value", ["0", "-1", "five"])
def test_bad_values_name_the_variable(value: str) -> None:
    with pytest.raises(SettingsError, match="PAPERBOY_DIGEST_SIZE"):
        load_settings({"PAPERBOY_DIGEST_SIZE": value}, dotenv=None)


def test_every_setting_has_help() -> None:
    for setting in SETTINGS:
        assert setting.help and setting.env.startswith(("PAPERBOY_", "SLACK_", "DISCORD_"))


def test_the_reference_has_one_row_per_setting() -> None:
    reference = reference_markdown()
    for setting in SETTINGS:
        assert reference.count(f"| `{setting.env}` |") == 1, setting.env
    assert "| `PAPERBOY_DB` | `db/paperboy.db` | SQLite database file. |" in reference
    assert reference.count("\n") == len(SETTINGS) + 2


def test_a_mistyped_setting_name_is_named_once_with_the_closest_setting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import config.settings as settings_module

    settings_module._warned.clear()
    environ = {
        "PAPERBOY_DIGST_SIZE": "3",  # a typo: ignored, so the default stands
        "PAPERBOY_ZZZ": "secret-value",
        "PAPERBOY_BENCH_CACHE": "/tmp/cache",  # read by the benchmarks, not a setting
        "PAPERBOY_DIGEST_SIZE": "4",
    }
    with caplog.at_level(logging.WARNING, logger="config.settings"):
        first = load_settings(environ, dotenv=None)
        load_settings(environ, dotenv=None)
    assert first.digest_size == 4
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "PAPERBOY_DIGST_SIZE is not a Paperboy setting, so it is ignored; "
        "did you mean PAPERBOY_DIGEST_SIZE?",
        "PAPERBOY_ZZZ is not a Paperboy setting, so it is ignored",
    ]
    assert "secret-value" not in caplog.text


def test_a_dotenv_is_read_as_python_dotenv_reads_it(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "PAPERBOY_FETCH_CRON=0 5 * * *   # the default: daily at 05:00 UTC\n"
        "FRAGMENT=https://example.org/a#b\n"
        "SINGLE='a # b\\'s \\d'  # a comment\n"
        'DOUBLE="one\\ntwo \\" three \\d" # a comment\n'
        "export EXPORTED = plain\n"
        "EMPTY=\n"
        "QUOTED_EMPTY=''\n"
        "   # an indented comment\n"
        "NO_EQUALS_SIGN\n",
        encoding="utf-8",
    )
    assert read_dotenv(dotenv) == {
        "PAPERBOY_FETCH_CRON": "0 5 * * *",
        "FRAGMENT": "https://example.org/a#b",
        "SINGLE": "a # b's \\d",
        "DOUBLE": 'one\ntwo " three \\d',
        "EXPORTED": "plain",
        "EMPTY": "",
        "QUOTED_EMPTY": "",
    }
    assert load_settings({}, dotenv=dotenv).fetch_cron == "0 5 * * *"


def test_a_quote_left_open_in_a_dotenv_is_one_line_naming_it(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("PAPERBOY_DIGEST_SIZE=3\nPAPERBOY_DB='paperboy.db\n", encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings({}, dotenv=dotenv)
    assert str(refused.value) == (
        f"{dotenv} line 2: the value of PAPERBOY_DB opens a quote and never closes it on that line"
    )


def test_a_dotenv_in_a_folder_this_user_may_not_enter_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sudo -u paperboy paperboy status` from an admin's 0700 home: looking for `.env`
    there is EACCES (root passes any permission check, so the OS answer is simulated)."""
    dotenv = tmp_path / ".env"
    real_is_file = Path.is_file

    def refused(path: Path) -> bool:
        if path == dotenv:
            raise PermissionError(13, "Permission denied", str(path))
        return real_is_file(path)

    monkeypatch.setattr(Path, "is_file", refused)
    with pytest.raises(SettingsError) as error:
        read_dotenv(dotenv)
    assert str(error.value) == f"{dotenv} cannot be read as a .env file (PermissionError)"


ROOT = Path(__file__).resolve().parents[2]
# What a documented placeholder (`...`) stands for, so that the line can be loaded.
PLACEHOLDERS = {
    "SLACK_BOT_TOKEN": "xoxb-1-2-abc",
    "SLACK_APP_TOKEN": "xapp-1-A1-2-abc",
    "DISCORD_TOKEN": "MTA5NzQ3NzQ2NjAwNjg1NzY3NQ.GhY2aB.abcdefghijklmnopqrstuvwxyz0123456789",
    "DISCORD_GUILD_ID": "111111111111111111",
}


def documented_dotenv_lines() -> list[tuple[str, str]]:
    """(page, line) for every `NAME=value` line of a setting in a code block of the README
    and the docs pages (not the development logs)."""
    names = {setting.env for setting in SETTINGS}
    pages = [
        ROOT / "README.md",
        *(p for p in (ROOT / "docs").rglob("*.md") if "dev" not in p.parts),
    ]
    found = []
    for page in pages:
        for block in page.read_text(encoding="utf-8").split("```")[1::2]:
            for line in block.splitlines():
                key = line.strip().removeprefix("export ").partition("=")[0].strip()
                if "=" in line and key in names:
                    found.append((page.relative_to(ROOT).as_posix(), line.strip()))
    return found


def test_every_documented_dotenv_line_loads(tmp_path: Path) -> None:
    lines = documented_dotenv_lines()
    assert len(lines) >= 4  # the Slack, Discord and sources pages have some
    for page, line in lines:
        key = line.removeprefix("export ").partition("=")[0].strip()
        dotenv = tmp_path / ".env"
        dotenv.write_text(
            line.replace("...", PLACEHOLDERS.get(key, "...")) + "\n", encoding="utf-8"
        )
        value = read_dotenv(dotenv)[key]
        assert "#" not in value, (page, line)
        load_settings({}, dotenv=dotenv)  # raises SettingsError on a value it refuses
