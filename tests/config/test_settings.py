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
