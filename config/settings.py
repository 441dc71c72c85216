"""Paperboy's settings, each declared once as a field of `Settings`, overridden by the environment.

`load_settings()` reads them from the environment and a `.env` file (the only places secrets
may come from) and fails with one line naming the variable when a value is malformed.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)

DEFAULT_DB = Path("db") / "paperboy.db"
Number = TypeVar("Number", int, float)
T = TypeVar("T")


class SettingsError(ValueError):
    """A setting has a value Paperboy cannot use. The message names the variable."""


@dataclass(frozen=True)
class Setting:
    """One setting: its `Settings` field, environment variable, default, meaning, parser."""

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
    from config.timezones import TimezoneError, parse_timezone

    try:
        return parse_timezone(value)
    except TimezoneError:
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


def _postgresql_url(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"postgres(ql)?://\S*", value):
        raise ValueError("must be a PostgreSQL URL, postgresql://USER:PASSWORD@HOST:5432/DATABASE")
    return value


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


def parse_cron(value: str) -> str:
    """A crontab line (minute hour day month weekday), read as UTC, with its spaces collapsed."""
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


def setting(
    env: str, default: T, help: str, parse: Callable[[str], T], *, secret: bool = False
) -> T:
    """A `Settings` field read from the variable `env` by `parse`; `help` is its Markdown
    meaning. A secret stays out of repr(), so a logged Settings object leaks nothing."""
    metadata = {"env": env, "help": help, "parse": parse, "secret": secret}
    return field(default=default, repr=not secret, metadata=metadata)


@dataclass(frozen=True)
class Settings:
    """Every setting, declared once: its field, variable, default, meaning and parser."""

    @property
    def clock_ttl_seconds(self) -> float:
        """How long the clock's lease lasts unrenewed: it outlives two missed heartbeats, and
        a process silent that long is taken for gone."""
        return self.heartbeat_seconds * 3

    @property
    def database(self) -> str | Path:
        """Where the store is: `database_url` when set, else the SQLite file `db_path`."""
        return self.database_url or self.db_path

    # RUF009: setting() returns a field(), which dataclass does not share between objects.
    db_path: Path = setting(  # noqa: RUF009
        "PAPERBOY_DB", DEFAULT_DB, "SQLite database file.", Path
    )
    database_url: str | None = setting(
        "PAPERBOY_DATABASE_URL",
        None,
        "PostgreSQL database to use instead of the SQLite file, "
        "`postgresql://USER:PASSWORD@HOST:5432/DATABASE` (needs the `postgresql` extra).",
        _postgresql_url,
        secret=True,
    )
    heartbeat_seconds: float = setting(
        "PAPERBOY_HEARTBEAT_SECONDS",
        10.0,
        "With PostgreSQL: how often each `paperboy run` process heartbeats. A process silent "
        "for three beats is taken for gone: another takes over its clock and its claims.",
        _positive_seconds,
    )
    demo_db: Path = setting(  # noqa: RUF009
        "PAPERBOY_DEMO_DB",
        Path("db") / "demo.db",
        "The database `paperboy demo` fills, apart from `PAPERBOY_DB` so that `paperboy run` "
        "never sees the demo's channel or papers.",
        Path,
    )
    digest_size: int = setting(
        "PAPERBOY_DIGEST_SIZE", 5, "Papers per subscribed topic in one digest.", _positive_int
    )
    empty_digest: str = setting(
        "PAPERBOY_EMPTY_DIGEST",
        "notice",
        "A digest with nothing new: `notice` posts one line saying so, `skip` posts nothing.",
        _choice("notice", "skip"),
    )
    first_digest_days: int = setting(
        "PAPERBOY_FIRST_DIGEST_DAYS",
        7,
        "Days a channel's first digest looks back for new papers (and how long before the "
        "previous digest a paper may have been published and still be new).",
        _positive_int,
    )
    default_weekday: str = setting(
        "PAPERBOY_DEFAULT_WEEKDAY",
        "mon",
        "Weekday of a new channel's digest (`mon` .. `sun`).",
        _choice(*WEEKDAYS),
    )
    default_time: str = setting(
        "PAPERBOY_DEFAULT_TIME", "09:00", "Time of a new channel's digest (24-hour).", _clock
    )
    default_timezone: str = setting(
        "PAPERBOY_DEFAULT_TIMEZONE",
        "UTC",
        "IANA timezone of a new channel's schedule.",
        _timezone,
    )
    slack_bot_token: str | None = setting(
        "SLACK_BOT_TOKEN",
        None,
        "Slack bot token (`xoxb-...`). Set it to run the Slack app.",
        _prefixed("xoxb-", "a Slack bot token"),
        secret=True,
    )
    slack_app_token: str | None = setting(
        "SLACK_APP_TOKEN",
        None,
        "Slack app-level token (`xapp-...`) with `connections:write`, for Socket Mode.",
        _prefixed("xapp-", "a Slack app-level token"),
        secret=True,
    )
    slack_signing_secret: str | None = setting(
        "SLACK_SIGNING_SECRET",
        None,
        "Slack signing secret, to verify requests in HTTP mode.",
        _signing_secret,
        secret=True,
    )
    slack_api_url: str = setting(
        "SLACK_API_URL",
        "https://slack.com/api/",
        "Slack Web API base URL (tests point it at a local fake; HTTP mode then also sends "
        "`response_url` answers to that host).",
        _http_url,
    )
    slack_managers: str = setting(
        "PAPERBOY_SLACK_MANAGERS",
        "anyone",
        "Who may change a channel's topics, schedule, backlog and pause in Slack: `anyone` "
        "in the channel, `admins` of the workspace, or user ids such as `U012AB3CD,U045EF6GH`.",
        _managers,
    )
    discord_token: str | None = setting(
        "DISCORD_TOKEN",
        None,
        "Discord bot token. Set it to run the Discord bot.",
        _discord_token,
        secret=True,
    )
    discord_guild_id: int | None = setting(
        "DISCORD_GUILD_ID",
        None,
        "A Discord server id: sync `/papers` to that server only, at once (development).",
        _snowflake,
    )
    discord_api_url: str = setting(
        "DISCORD_API_URL",
        "https://discord.com/api/v10",
        "Discord REST base URL (tests point it at a local fake).",
        _api_base,
    )
    local_dir: Path = setting(  # noqa: RUF009
        "PAPERBOY_LOCAL_DIR",
        Path("db") / "outbox",
        "Where `local:NAME` channels deliver: `NAME.jsonl`, one JSON line per message.",
        Path,
    )
    inbox: Path | None = setting(  # noqa: RUF009
        "PAPERBOY_INBOX",
        None,
        "Folder of paper lists to ingest before each digest run (new or changed files only).",
        Path,
    )
    max_record_kb: int = setting(
        "PAPERBOY_MAX_RECORD_KB",
        100,
        "Largest paper (row, paragraph, JSON object) or line a paper list may hold, in KB; "
        "a file with a bigger one is refused.",
        _positive_int,
    )
    catchup_hours: int = setting(
        "PAPERBOY_CATCHUP_HOURS",
        24,
        "After downtime, post a missed digest on start-up if due at most this long ago.",
        _positive_int,
    )
    max_attempts: int = setting(
        "PAPERBOY_MAX_ATTEMPTS",
        8,
        "Attempts to send a message through transient errors before giving up.",
        _positive_int,
    )
    outbox_keep_days: int = setting(
        "PAPERBOY_OUTBOX_KEEP_DAYS",
        30,
        "Days a sent message's payload (the message as posted) is kept in the outbox; once a "
        "day older ones are emptied, their rows kept. `0` keeps them forever.",
        _keep_days,
    )
    delivery_concurrency: int = setting(
        "PAPERBOY_DELIVERY_CONCURRENCY",
        64,
        "Channels delivered at the same time (keep it above twice "
        "`PAPERBOY_SLACK_POSTS_PER_SECOND`: a Slack channel sends one message a second).",
        _positive_int,
    )
    slack_posts_per_second: float = setting(
        "PAPERBOY_SLACK_POSTS_PER_SECOND",
        5.0,
        "Digest messages posted per second across the Slack workspace, all channels "
        "together: Slack's workspace-wide limit, which it does not publish. Lowered by "
        "itself after a 429, then back.",
        _positive_rate,
    )
    discord_posts_per_second: float = setting(
        "PAPERBOY_DISCORD_POSTS_PER_SECOND",
        50.0,
        "Digest messages posted per second by the Discord bot, all channels together "
        "(Discord's global limit). Lowered by itself after a 429; set above the bot's real "
        "limit, that limit is measured from its 429s and kept to.",
        _positive_rate,
    )
    slack_ack_seconds: float = setting(
        "PAPERBOY_SLACK_ACK_SECONDS",
        1.0,
        "HTTP mode: a `/papers` answer not ready this long after the request arrived is "
        'acknowledged with "Working on it…" and sent after. At most 2.5: Slack waits 3 '
        "seconds.",
        _positive_seconds,
    )
    slack_max_body_bytes: int = setting(
        "PAPERBOY_SLACK_MAX_BODY_BYTES",
        65536,
        "HTTP mode: larger request bodies are refused (413) unread.",
        _positive_int,
    )
    slack_header_timeout: float = setting(
        "PAPERBOY_SLACK_HEADER_TIMEOUT",
        10.0,
        "HTTP mode: seconds a connection has to send a request's headers.",
        _positive_seconds,
    )
    slack_body_timeout: float = setting(
        "PAPERBOY_SLACK_BODY_TIMEOUT",
        10.0,
        "HTTP mode: seconds a request has to send its body (and to read the answer).",
        _positive_seconds,
    )
    slack_max_connections: int = setting(
        "PAPERBOY_SLACK_MAX_CONNECTIONS",
        1000,
        "HTTP mode: open connections at most; at the cap a new one evicts the one whose "
        "unfinished request began first.",
        _positive_int,
    )
    fetch_cron: str = setting(
        "PAPERBOY_FETCH_CRON",
        "0 5 * * *",
        "When `paperboy run` fetches the sources: a crontab line (minute hour day month "
        "weekday), in UTC. A source's own schedule wins.",
        parse_cron,
    )
    arxiv_url: str = setting(
        "PAPERBOY_ARXIV_URL",
        "https://export.arxiv.org/api",
        "arXiv export API base URL (tests point it at a local fake).",
        _api_base,
    )
    openreview_url: str = setting(
        "PAPERBOY_OPENREVIEW_URL",
        "https://api2.openreview.net",
        "OpenReview API v2 base URL (tests point it at a local fake).",
        _api_base,
    )
    contact_email: str | None = setting(
        "PAPERBOY_CONTACT_EMAIL",
        None,
        "An address sent in every fetch's User-Agent, so arXiv and OpenReview can reach you "
        "instead of blocking you.",
        _email,
    )
    fetch_allow_private_redirects: bool = setting(
        "PAPERBOY_FETCH_ALLOW_PRIVATE_REDIRECTS",
        False,
        "`1` lets a source's redirects lead to loopback, private and other non-public "
        "addresses (a local mirror that redirects, even to itself). Off, such a hop fails "
        "the fetch with one line. Only http(s) is followed either way; see "
        "[Security](../explanation/security.md).",
        _flag,
    )


SETTINGS: tuple[Setting, ...] = tuple(
    Setting(f.name, default=f.default, **f.metadata) for f in fields(Settings)
)


def _shown(default: Any) -> str:
    """A default as the reference shows it: blank when unset, a flag as 1 or 0."""
    if default is None:
        return ""
    if isinstance(default, bool):
        return f"`{int(default)}`"
    if isinstance(default, Path):
        return f"`{default.as_posix()}`"
    return f"`{default:g}`" if isinstance(default, float) else f"`{default}`"


def reference_markdown() -> str:
    """The configuration reference: a Markdown table of every setting's variable, default
    and meaning, in declaration order."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for s in SETTINGS:
        rows.append(
            f"| `{s.env}` | {_shown(s.default)} | {s.help}{' Secret.' if s.secret else ''} |"
        )
    return "\n".join(rows) + "\n"


# Escapes python-dotenv decodes inside quotes; any other backslash stays as written.
_ESCAPES = {
    '"': {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n",
          "r": "\r", "t": "\t", "v": "\v"},
    "'": {"\\": "\\", "'": "'"},
}  # fmt: skip


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a `.env` file as python-dotenv does: `KEY=value` lines (`export ` allowed),
    `#` comment lines, and an unquoted value ending at ` #` (a comment after it); a value
    in single quotes is taken as written (but `\\'`), in double quotes with `\\n`-style escapes. No
    `${VAR}` expansion. SettingsError names the line of a quote left open."""
    values: dict[str, str] = {}
    try:
        if not path.is_file():
            return values
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(
            f"{path} cannot be read as a .env file ({type(exc).__name__})"
        ) from None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if value[:1] in ("'", '"'):
            parsed = _quoted(value)
            if parsed is None:
                raise SettingsError(
                    f"{path} line {number}: the value of {key.strip()} opens a quote and "
                    f"never closes it on that line"
                )
            value = parsed
        else:
            value = re.split(r"\s#", value, maxsplit=1)[0].rstrip()
        values[key.strip()] = value
    return values


def _quoted(value: str) -> str | None:
    """The text of a value that starts with a quote, or None when the quote is not closed
    (what follows the closing quote, a comment say, is dropped)."""
    quote, escapes, i = value[0], _ESCAPES[value[0]], 1
    out: list[str] = []
    while i < len(value):
        char = value[i]
        if char == quote:
            return "".join(out)
        if char == "\\" and value[i + 1 : i + 2] in escapes:
            out.append(escapes[value[i + 1]])
            i += 2
            continue
        out.append(char)
        i += 1
    return None


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
