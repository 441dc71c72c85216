"""Paperboy's settings: declared once, with defaults, overridden by the environment.

Every setting is a `Setting` in `SETTINGS`; `load_settings()` reads them from the
environment (and from a `.env` file, which is the only other place secrets may come
from) and fails with one line naming the variable when a value is malformed.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)

DEFAULT_DB = Path("db") / "paperboy.db"
Number = TypeVar("Number", int, float)


class SettingsError(ValueError):
    """A setting has a value Paperboy cannot use. The message names the variable."""


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str
    secret: bool = False


def _number_in(
    convert: Callable[[str], Number], low: float, high: float, problem: str
) -> Callable[[str], Number]:
    """A parser of a number (`convert`: int or float) from `low` to `high`: anything else
    (not a number, out of range, nan) fails with `problem`, not with int's or float's own
    message ("invalid literal for int() with base 10")."""

    def parse(value: str) -> Number:
        try:
            number = convert(value)
        except ValueError:
            raise ValueError(problem) from None
        if not low <= number <= high:  # also refuses nan and inf (for a finite `high`)
            raise ValueError(problem)
        return number

    return parse


_positive_int = _number_in(int, 1, math.inf, "must be a positive whole number")
# Up to a century; far more and `now - days` is before year 1.
_keep_days = _number_in(
    int, 0, 36_500, "must be a whole number of days, from 0 (keep forever) to 36500"
)


def _positive_seconds(value: str) -> float:
    number = float(value)
    if not 0 < number <= 3600:  # also refuses nan and inf
        raise ValueError("must be a number of seconds, more than 0")
    return number


_positive_rate = _number_in(
    float, 0.1, 10_000, "must be a number of messages a second, from 0.1 to 10000"
)


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value.strip().lower() not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value.strip().lower()

    return parse


def _flag(value: str) -> bool:
    answer = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
    if value.strip().lower() not in answer:
        raise ValueError("must be 1 (yes) or 0 (no)")
    return answer[value.strip().lower()]


def _clock(value: str) -> str:
    match = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", value.strip())
    if not match:
        raise ValueError("must be a 24-hour time such as 09:00")
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def _timezone(value: str) -> str:
    # The same rule as `/papers schedule` (no `localtime`, `Factory`, abbreviations).
    from digests.schedule import ScheduleError, parse_timezone

    try:
        return parse_timezone(value)
    except ScheduleError:
        raise ValueError("must be an IANA timezone such as Europe/Berlin or UTC") from None


def _prefixed(prefix: str, what: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        value = value.strip()
        if (
            not value.startswith(prefix)
            or len(value) < len(prefix) + 8
            or any(c.isspace() for c in value)
        ):
            raise ValueError(f"must be {what}, which starts with {prefix}")
        return value

    return parse


def _signing_secret(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"[0-9a-fA-F]{16,128}", value):
        raise ValueError("must be the app's Signing Secret (hexadecimal) from Basic Information")
    return value


def _hide_userinfo(value: str) -> str:
    """A URL with any `user:password@` replaced, so an error message can show it."""
    return re.sub(r"(?<=://)[^/\s@]*@", "(hidden)@", value)


def _http_url(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
        raise ValueError("must be an http(s) URL")
    if "@" in value.split("://", 1)[1].split("/", 1)[0]:
        # aiohttp refuses them next to the token's Authorization header (a ValueError).
        raise ValueError(
            "must not contain a user name or password (user:password@): "
            "the bot token is the only login the API needs"
        )
    return value if value.endswith("/") else value + "/"


def _managers(value: str) -> str:
    value = value.strip()
    if value.lower() in ("anyone", "admins"):
        return value.lower()
    ids = [part.strip() for part in value.split(",") if part.strip()]
    if not ids or not all(re.fullmatch(r"[UW][A-Z0-9]{2,}", part) for part in ids):
        raise ValueError('must be "anyone", "admins" or Slack user ids such as U012AB3CD,U045EF6GH')
    return ",".join(ids)


def _discord_token(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"[\w-]{20,}\.[\w-]{4,}\.[\w-]{20,}", value):
        raise ValueError("must be the bot token from the Developer Portal's Bot page (three parts)")
    return value


def _snowflake(value: str) -> int:
    if not re.fullmatch(r"\d{5,25}", value.strip()):
        raise ValueError("must be a numeric Discord id (right-click the server: Copy Server ID)")
    return int(value.strip())


def _api_base(value: str) -> str:
    return _http_url(value).rstrip("/")


def _cron(value: str) -> str:
    """A crontab line (minute hour day month weekday), read as UTC."""
    from apscheduler.triggers.cron import CronTrigger

    value = " ".join(value.split())
    try:
        CronTrigger.from_crontab(value, timezone="UTC")
    except ValueError as exc:
        raise ValueError(
            f'must be a crontab line "minute hour day month weekday", e.g. "0 5 * * *" ({exc})'
        ) from None
    return value


def _email(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"[^@\s;()<>]+@[^@\s;()<>]+\.[^@\s;()<>]+", value):
        raise ValueError("must be an e-mail address such as team@example.org")
    return value


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

SETTINGS: tuple[Setting, ...] = (
    Setting("db_path", "PAPERBOY_DB", DEFAULT_DB, "SQLite database file.", Path),
    Setting(
        "digest_size",
        "PAPERBOY_DIGEST_SIZE",
        5,
        "Papers per subscribed topic in one digest.",
        _positive_int,
    ),
    Setting(
        "empty_digest",
        "PAPERBOY_EMPTY_DIGEST",
        "notice",
        'A week with nothing new: "notice" posts one line saying so, "skip" posts nothing.',
        _choice("notice", "skip"),
    ),
    Setting(
        "first_digest_days",
        "PAPERBOY_FIRST_DIGEST_DAYS",
        7,
        "Days a channel's first digest looks back for new papers.",
        _positive_int,
    ),
    Setting(
        "default_weekday",
        "PAPERBOY_DEFAULT_WEEKDAY",
        "mon",
        "Weekday of a new channel's digest (mon .. sun).",
        _choice(*WEEKDAYS),
    ),
    Setting(
        "default_time", "PAPERBOY_DEFAULT_TIME", "09:00", "Time of a new channel's digest.", _clock
    ),
    Setting(
        "default_timezone",
        "PAPERBOY_DEFAULT_TIMEZONE",
        "UTC",
        "IANA timezone of a new channel's schedule.",
        _timezone,
    ),
    Setting(
        "slack_bot_token",
        "SLACK_BOT_TOKEN",
        None,
        "Slack bot token (xoxb-...). Set it to run the Slack app.",
        _prefixed("xoxb-", "a Slack bot token"),
        secret=True,
    ),
    Setting(
        "slack_app_token",
        "SLACK_APP_TOKEN",
        None,
        "Slack app-level token (xapp-...) with connections:write, for Socket Mode.",
        _prefixed("xapp-", "a Slack app-level token"),
        secret=True,
    ),
    Setting(
        "slack_signing_secret",
        "SLACK_SIGNING_SECRET",
        None,
        "Slack signing secret, to verify requests in HTTP mode.",
        _signing_secret,
        secret=True,
    ),
    Setting(
        "slack_api_url",
        "SLACK_API_URL",
        "https://slack.com/api/",
        "Slack Web API base URL (tests point it at a local fake).",
        _http_url,
    ),
    Setting(
        "slack_managers",
        "PAPERBOY_SLACK_MANAGERS",
        "anyone",
        'Who may change a channel\'s topics and schedule in Slack: "anyone" in the channel, '
        '"admins" of the workspace, or a comma-separated list of user ids.',
        _managers,
    ),
    Setting(
        "discord_token",
        "DISCORD_TOKEN",
        None,
        "Discord bot token. Set it to run the Discord bot.",
        _discord_token,
        secret=True,
    ),
    Setting(
        "discord_guild_id",
        "DISCORD_GUILD_ID",
        None,
        "A Discord server id: sync /papers to that server only, instantly (for development).",
        _snowflake,
    ),
    Setting(
        "discord_api_url",
        "DISCORD_API_URL",
        "https://discord.com/api/v10",
        "Discord REST base URL (tests point it at a local fake).",
        _api_base,
    ),
    Setting(
        "local_dir",
        "PAPERBOY_LOCAL_DIR",
        Path("db") / "outbox",
        "Folder where local:NAME channels deliver: one JSON line per message in NAME.jsonl.",
        Path,
    ),
    Setting(
        "inbox",
        "PAPERBOY_INBOX",
        None,
        "Folder of paper lists to ingest before each digest run (new or changed files only).",
        Path,
    ),
    Setting(
        "max_record_kb",
        "PAPERBOY_MAX_RECORD_KB",
        100,
        "Largest paper (row, paragraph, JSON object) or line a paper list may hold, in KB; "
        "a file with a bigger one is refused.",
        _positive_int,
    ),
    Setting(
        "catchup_hours",
        "PAPERBOY_CATCHUP_HOURS",
        24,
        "After downtime, post a missed digest on start-up if it was due at most this long ago.",
        _positive_int,
    ),
    Setting(
        "max_attempts",
        "PAPERBOY_MAX_ATTEMPTS",
        8,
        "Attempts to send a message through transient errors before giving it up.",
        _positive_int,
    ),
    Setting(
        "outbox_keep_days",
        "PAPERBOY_OUTBOX_KEEP_DAYS",
        30,
        "Days a sent message's payload is kept in the outbox (once a day the older ones are "
        "emptied; the rows stay); 0 keeps them forever.",
        _keep_days,
    ),
    Setting(
        "delivery_concurrency",
        "PAPERBOY_DELIVERY_CONCURRENCY",
        64,
        "Channels delivered at the same time (each sends at most one message a second on "
        "Slack, so keep it above twice PAPERBOY_SLACK_POSTS_PER_SECOND).",
        _positive_int,
    ),
    Setting(
        "slack_posts_per_second",
        "PAPERBOY_SLACK_POSTS_PER_SECOND",
        5.0,
        "Digest messages posted per second across the Slack workspace, all channels "
        "together (Slack's workspace-wide limit; lowered by itself after a 429).",
        _positive_rate,
    ),
    Setting(
        "discord_posts_per_second",
        "PAPERBOY_DISCORD_POSTS_PER_SECOND",
        50.0,
        "Digest messages posted per second by the Discord bot, all channels together "
        "(Discord's global limit; lowered by itself after a 429).",
        _positive_rate,
    ),
    Setting(
        "slack_ack_seconds",
        "PAPERBOY_SLACK_ACK_SECONDS",
        1.0,
        "HTTP mode: a /papers answer not ready this long after the request arrived is "
        'acknowledged with "Working on it…" and sent after.',
        _positive_seconds,
    ),
    Setting(
        "slack_max_body_bytes",
        "PAPERBOY_SLACK_MAX_BODY_BYTES",
        65536,
        "HTTP mode: larger request bodies are refused (413) unread.",
        _positive_int,
    ),
    Setting(
        "slack_header_timeout",
        "PAPERBOY_SLACK_HEADER_TIMEOUT",
        10.0,
        "HTTP mode: seconds a connection has to send a request's headers.",
        _positive_seconds,
    ),
    Setting(
        "slack_body_timeout",
        "PAPERBOY_SLACK_BODY_TIMEOUT",
        10.0,
        "HTTP mode: seconds a request has to send its body (and to read the answer).",
        _positive_seconds,
    ),
    Setting(
        "slack_max_connections",
        "PAPERBOY_SLACK_MAX_CONNECTIONS",
        1000,
        "HTTP mode: open connections at most; at the cap a new one evicts the oldest that "
        "has not sent a whole request yet.",
        _positive_int,
    ),
    Setting(
        "fetch_cron",
        "PAPERBOY_FETCH_CRON",
        "0 5 * * *",
        "When `paperboy run` fetches the sources (crontab, UTC); a source's own schedule wins.",
        _cron,
    ),
    Setting(
        "arxiv_url",
        "PAPERBOY_ARXIV_URL",
        "https://export.arxiv.org/api",
        "arXiv export API base URL (tests point it at a local fake).",
        _api_base,
    ),
    Setting(
        "openreview_url",
        "PAPERBOY_OPENREVIEW_URL",
        "https://api2.openreview.net",
        "OpenReview API v2 base URL (tests point it at a local fake).",
        _api_base,
    ),
    Setting(
        "contact_email",
        "PAPERBOY_CONTACT_EMAIL",
        None,
        "An address sent in the User-Agent of every fetch, so arXiv can reach the operator.",
        _email,
    ),
    Setting(
        "fetch_allow_private_redirects",
        "PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS",
        False,
        "1: a source's redirects may lead to loopback, private and other non-public "
        "addresses (a local mirror that redirects); by default such a redirect fails the "
        "fetch. The source's own URL may point anywhere either way.",
        _flag,
    ),
)


@dataclass(frozen=True)
class Settings:
    db_path: Path = DEFAULT_DB
    digest_size: int = 5
    empty_digest: str = "notice"
    first_digest_days: int = 7
    default_weekday: str = "mon"
    default_time: str = "09:00"
    default_timezone: str = "UTC"
    # Secrets never appear in repr(), so logging a Settings object leaks nothing.
    slack_bot_token: str | None = field(default=None, repr=False)
    slack_app_token: str | None = field(default=None, repr=False)
    slack_signing_secret: str | None = field(default=None, repr=False)
    slack_api_url: str = "https://slack.com/api/"
    slack_managers: str = "anyone"
    discord_token: str | None = field(default=None, repr=False)
    discord_guild_id: int | None = None
    discord_api_url: str = "https://discord.com/api/v10"
    local_dir: Path = Path("db") / "outbox"
    inbox: Path | None = None
    max_record_kb: int = 100
    catchup_hours: int = 24
    max_attempts: int = 8
    outbox_keep_days: int = 30
    delivery_concurrency: int = 64
    slack_posts_per_second: float = 5.0
    discord_posts_per_second: float = 50.0
    slack_ack_seconds: float = 1.0
    slack_max_body_bytes: int = 65536
    slack_header_timeout: float = 10.0
    slack_body_timeout: float = 10.0
    slack_max_connections: int = 1000
    fetch_cron: str = "0 5 * * *"
    arxiv_url: str = "https://export.arxiv.org/api"
    openreview_url: str = "https://api2.openreview.net"
    contact_email: str | None = None
    fetch_allow_private_redirects: bool = False


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a `.env` file: `KEY=value` lines, `#` comments, optional quotes."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(
            f"{path} cannot be read as a .env file ({type(exc).__name__})"
        ) from None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def load_settings(
    environ: Mapping[str, str] | None = None, dotenv: Path | None = Path(".env")
) -> Settings:
    """Build Settings from defaults, then `.env`, then the environment (which wins)."""
    source: dict[str, str] = read_dotenv(dotenv) if dotenv else {}
    source.update(os.environ if environ is None else environ)
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw = source.get(setting.env)
        if raw is None or raw == "":
            values[setting.name] = setting.default
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError as exc:
            shown = "(hidden)" if setting.secret else repr(_hide_userinfo(raw))
            raise SettingsError(f"{setting.env}={shown} is not valid: {exc}") from None
    _warn_unknown(source)
    return Settings(**values)


# PAPERBOY_ names read elsewhere (the benchmarks' cache and scratch folders), not settings.
OTHER_NAMES = frozenset({"PAPERBOY_BENCH_CACHE", "PAPERBOY_BENCH_TMP"})
_warned: set[str] = set()  # once a process: the settings are read more than once


def _warn_unknown(source: Mapping[str, str]) -> None:
    """One warning a process per PAPERBOY_ name that is no setting (a typo such as
    PAPERBOY_DIGST_SIZE would otherwise be ignored without a word), with the closest
    setting's name. Names only: a value may be a secret."""
    known = {setting.env for setting in SETTINGS}
    for name in sorted(source):
        if name.startswith("PAPERBOY_") and name not in known | OTHER_NAMES | _warned:
            _warned.add(name)
            # Compared without the prefix every name shares (else all look alike).
            close = difflib.get_close_matches(name[9:], [k[9:] for k in sorted(known)], n=1)
            hint = f"; did you mean PAPERBOY_{close[0]}?" if close else ""
            log.warning("%s is not a Paperboy setting, so it is ignored%s", name, hint)
