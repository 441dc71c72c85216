"""The README walked through as a team admin and a user (personal digests, feedback and
saved papers), and the server install of docs/how-to/service.md: the code does what the
docs say, and the docs say what it does."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tests.fakes.cli import paperboy_process, read_only_runner

ROOT = Path(__file__).resolve().parents[1]
SLACK_HOWTO = (ROOT / "docs" / "how-to" / "slack.md").read_text(encoding="utf-8")


def test_chat_feedback_reads_and_needs_an_existing_database(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`feedback` only reads (`feedback reset` changes): like every lookup it answers
    "no database at PATH" and creates nothing. It created an empty database, because the
    chat command asked the verb (`feedback`, a changing verb) rather than the command."""
    db = tmp_path / "typo" / "paperboy.db"
    shown = run("chat", "--channel", "local:lab", "feedback", "--db", str(db))
    assert shown.exit_code == 2, shown.output
    assert shown.output.startswith(f"error: no database at {db};")
    assert not db.parent.exists()


def test_chat_feedback_works_on_a_read_only_database(run, seed_paths) -> None:  # type: ignore[no-untyped-def]
    """README: "`chat` lookups also work on a database that is read-only for you".
    `feedback` is not refused there ("is read-only for you, and this command needs to
    change it"); `feedback reset` is. As root (which ignores permissions) it runs without
    that power, as tests/bot/cli/test_cli.py does."""
    folder = Path(tempfile.mkdtemp(prefix="paperboy-ro-"))
    db = folder / "ro.db"
    try:
        paperboy_process("ingest", *map(str, seed_paths), "--db", str(db))
        paperboy_process("chat", "--channel", "local:lab", "subscribe rlhf", "--db", str(db))
        db.chmod(0o444)
        folder.chmod(0o555)

        paperboy = read_only_runner(run)
        code, output = paperboy("chat", "--channel", "local:lab", "feedback", "--db", str(db))
        assert code == 0 and "No 👍/👎 in this channel yet" in output, output
        code, output = paperboy(
            "chat", "--channel", "local:lab", "feedback reset rlhf", "--db", str(db)
        )
        assert code == 2 and "is read-only for you, and this command needs to change it" in output
        assert "Traceback" not in output
        # The other commands README says work on a read-only database (guards: these
        # passed before too).
        code, output = paperboy("saved", "--user", "local:ann", "--format", "json", "--db", str(db))
        assert code == 0 and output.startswith("[]"), output
        code, output = paperboy("prune", "--dry-run", "--db", str(db))
        assert code == 0 and "nothing to prune" in output, output
        code, output = paperboy("digest", "--channel", "local:lab", "--preview", "--db", str(db))
        assert code == 0 and "Paperboy digest for local:lab" in output, output
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_operator_status_names_each_personal_digest(run, tmp_path: Path, settings: Any) -> None:  # type: ignore[no-untyped-def]
    """`paperboy status` lists every channel, personal digests included, each named, not
    headed "Status of your personal digest, delivered to you by DM:" (the wording
    `/papers status --me` gives its owner), so an operator can tell whose it is."""
    from db.channels import add_subscription
    from db.connection import open_db
    from digests.digest import ensure_channel
    from tests.conftest import NOW

    path = tmp_path / "p.db"
    assert run("chat", "--channel", "local:lab", "subscribe rlhf", "--db", str(path)).exit_code == 0
    db = open_db(path)
    for personal in ("slack:T0001/@U0001", "discord:@123456789012"):
        ensure_channel(db, personal, settings, NOW)
        add_subscription(db, personal, "offline-rl", None, "someone", "2026-11-30T09:00:00Z")
    db.close()

    everything = run("status", "--db", str(path))
    assert everything.exit_code == 0, everything.output
    assert "your personal digest" not in everything.output
    for personal in ("slack:T0001/@U0001", "discord:@123456789012"):
        assert f"Status of {personal} (a personal digest, sent by direct message):" in (
            everything.output
        )
    assert "Status of local:lab:" in everything.output

    one = run("status", "--channel", "slack:T0001/@U0001", "--db", str(path))
    assert one.exit_code == 0, one.output
    assert one.output.startswith(
        "Status of slack:T0001/@U0001 (a personal digest, sent by direct message):\n"
    )
    assert "Topics: Offline RL" in one.output


def _manifest_bot_scopes() -> list[str]:
    text = (ROOT / "deploy" / "slack-manifest.yml").read_text(encoding="utf-8")
    block = text.split("  scopes:\n    bot:\n", 1)[1]
    scopes = []
    for line in block.splitlines():
        found = re.fullmatch(r"      - ([a-z:.]+)(?: #.*)?", line)
        if found is None:
            break
        scopes.append(found.group(1))
    return scopes


def test_add_to_slack_names_every_scope_of_the_manifest() -> None:
    """Step 1 of "Add to Slack" lists the bot scopes the manifest asks for; it left out
    `im:write` (personal digests' conversations.open), which an app created before them
    must add."""
    scopes = _manifest_bot_scopes()
    assert "commands" in scopes and "im:write" in scopes  # the manifest was read
    step = SLACK_HOWTO.split("# Add Paperboy to Slack", 1)[1].split(
        "2. **Make an app-level token.**", 1
    )[0]
    for scope in scopes:
        assert f"`{scope}`" in step, scope


def test_slack_http_sends_feedback_to_the_lookup_lane() -> None:
    """The HTTP endpoint runs changes on its one writer thread and everything else in the
    lookup pool. `feedback` (a lookup) went to the writer, as its verb may change things;
    only `feedback reset` does."""
    from bot.slack.endpoint import writes

    assert not writes("feedback")
    assert not writes("feedback --me")
    assert not writes("find offline rl")
    assert writes("feedback reset offline-rl")
    assert writes("subscribe rlhf")
    assert writes("subscribe --me rlhf")  # writes the user's own digest


def test_a_digest_command_answer_has_buttons_in_slack_only(catalog: Any) -> None:
    """README (Discord buttons): the answer to `/papers digest` has no buttons in Discord,
    a preview or not; in Slack a built digest's answer has them (the README must say
    both: that a preview has none alone reads as if a built one had them in Discord)."""
    from digests.render import discord, slack
    from digests.replies import Reply
    from tests.fakes.cql_digest import cql_digest

    built = cql_digest(catalog, "discord:123456789012345678/987")
    answer = Reply(text="This week's digest (already built):", digest=built)
    assert all(not message.components for message in discord.reply_messages(answer))
    slack_answer = Reply(
        text="This week's digest (already built):",
        digest=cql_digest(catalog, "slack:T012AB3C4/C0123456789"),
    )
    blocks = [block for message in slack.reply_messages(slack_answer) for block in message.blocks]
    assert any(block.get("type") == "actions" for block in blocks)


SERVICE_PAGE = (ROOT / "docs" / "how-to" / "service.md").read_text(encoding="utf-8")
# The install's folders on a server, and where this test puts them.
SERVER_FOLDERS = ("/opt/paperboy/src", "/opt/paperboy/venv", "/var/lib/paperboy")
# What the documented .env's placeholders (`...`) stand for: values the settings accept.
FAKE_SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-1111-2222-abcdefgh",
    "SLACK_APP_TOKEN": "xapp-1-A111-2222-abcdef",
    "DISCORD_TOKEN": "MTA5NzQ3NzQ2NjAwNjg1NzY3NQ.GhY2aB.abcdefghijklmnopqrstuvwxyz0123456789",
}


def _section_blocks(heading: str, language: str) -> list[str]:
    """The code blocks in `language` of the service page's section `## heading`."""
    section = SERVICE_PAGE.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [str(block) for block in re.findall(rf"^```{language}\n(.*?)^```", section, re.S | re.M)]


def _copy_checkout(target: Path) -> None:
    """What `pip install` of a checkout reads: the top-level files and the packages."""
    import tomllib

    target.mkdir(parents=True)
    for item in ROOT.iterdir():
        if item.is_file():
            shutil.copy2(item, target / item.name)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        name = pattern.rstrip("*")
        ignore = shutil.ignore_patterns("__pycache__", "*.db", "*.db-*", "*.db.*", "outbox")
        shutil.copytree(ROOT / name, target / name, ignore=ignore)


# A .pth line runs at start-up: a finder that refuses the modules listed.
_IMPORT_BLOCKER = (
    "import sys; sys.meta_path.insert(0, type('NoDevTools', (), {{'find_spec': staticmethod("
    "lambda name, *_: (_ for _ in ()).throw(ImportError(f'{{name}} is a dev tool')) "
    "if name.partition('.')[0] in {0!r} else None)}})())"
)


def _dev_tools() -> set[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {
        re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()
        for requirement in project["project"]["optional-dependencies"]["dev"]
    }


def test_the_server_install_runs_a_first_digest_without_dev_tools() -> None:
    """docs/how-to/service.md, Install, Settings and Check it, followed in a temporary
    folder: the documented venv and `pip install` of the checkout (offline: no
    dependencies fetched, the test environment's own are visible to it), the documented
    .env, then the check's commands with the installed `paperboy`, whose digest lands in
    the local outbox. The installed package must work on its own (templates and data
    shipped), and require none of the dev tools."""
    import json
    import os
    import shlex
    import subprocess
    import sys
    import sysconfig

    base = Path(tempfile.mkdtemp(prefix="paperboy-install-"))
    src, venv, home = (base / folder.lstrip("/") for folder in SERVER_FOLDERS)

    def here(text: str) -> str:
        for folder, moved in zip(SERVER_FOLDERS, (src, venv, home), strict=True):
            text = text.replace(folder, str(moved))
        return text

    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PAPERBOY_", "SLACK_", "DISCORD_", "PIP_", "PYTHON"))
    }
    env.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", HOME=str(home), PIP_CONFIG_FILE=os.devnull)

    def sh(*args: str | Path, cwd: Path = base) -> str:
        """Runs ARGS; their output. A paperboy command also warns of nothing."""
        done = subprocess.run(
            [str(arg) for arg in args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        if Path(args[0]).name == "paperboy":
            assert "warning" not in done.stderr.lower(), done.stderr
        return done.stdout

    try:
        _copy_checkout(src)
        home.mkdir(parents=True)
        (install,) = _section_blocks("Install", "bash")
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        (shown_in_readme,) = re.findall(
            r"^```bash\n(.*?)^```", readme.split("## Running it as a service\n", 1)[1], re.S | re.M
        )[:1]
        for line in shown_in_readme.splitlines():  # the README's short form is the page's
            assert line.split("#")[0].strip() in install.splitlines(), line
        lines = [shlex.split(here(line)) for line in install.splitlines()]
        make_venv = next(line for line in lines if line[1:4] == ["python3", "-m", "venv"])
        pip = next(line for line in lines if line[1:3] == [f"{venv}/bin/pip", "install"])
        assert make_venv[4:] == [str(venv)] and pip[3:] == [str(src)]  # no extra, no dev tools

        sh(sys.executable, *make_venv[2:])
        site = Path(
            sh(
                venv / "bin" / "python",
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ).strip()
        )
        # No network: the dependencies are this environment's, and so is the build backend
        # (setuptools>=77, which tasks.py installs), not the older one venv seeds.
        (site / "test-environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
        if any(site.glob("setuptools-*.dist-info")):
            sh(venv / "bin" / "pip", "uninstall", "--yes", "--quiet", "setuptools")
        sh(*pip[1:], "--no-deps", "--no-build-isolation", "--no-index", "--quiet")

        installed = sorted(p.name.split("-")[0].lower() for p in site.glob("*.dist-info"))
        assert "paperboy" in installed and not set(installed) & _dev_tools(), installed
        shown = sh(
            venv / "bin" / "python",
            "-c",
            "import importlib.metadata as m, bot; print(bot.__file__); print(*m.requires('paperboy'), sep='\\n')",
        ).splitlines()
        assert shown[0].startswith(str(site)), shown[0]  # the installed copy, not the checkout
        required = {
            re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()
            for requirement in shown[1:]
            if "extra ==" not in requirement
        }
        assert "slack-bolt" in required and not required & _dev_tools(), required
        # The dev tools are on the path (this environment's): any import of one by the
        # commands below fails them, so a runtime need of a dev tool cannot pass unseen.
        blocked = sorted(
            module
            for module, dists in importlib.metadata.packages_distributions().items()
            if module.isidentifier() and {dist.lower() for dist in dists} & _dev_tools()
        )
        assert "hypothesis" in blocked and "pytest" in blocked, blocked
        (site / "zz-no-dev-tools.pth").write_text(_IMPORT_BLOCKER.format(blocked) + "\n")
        refused = subprocess.run(
            [venv / "bin" / "python", "-c", "import hypothesis"],
            capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip
        assert refused.returncode == 1 and "a dev tool" in refused.stderr, refused.stderr

        (dotenv,) = _section_blocks("Settings and secrets", "ini")
        lines = []
        for line in dotenv.splitlines():
            name, _, value = line.partition("=")
            lines.append(f"{name}={FAKE_SECRETS[name]}" if "..." in value else line)
        (home / ".env").write_text("\n".join(lines) + "\n", encoding="utf-8")

        (check,) = _section_blocks("Check it", "bash")
        commands = [shlex.split(here(line)) for line in check.splitlines()]
        assert ["cd", str(home)] in commands
        said = [
            sh(venv / "bin" / "paperboy", *c[1:], cwd=home) for c in commands if c[0] == "paperboy"
        ]
        assert "38 added" in said[0], said[0]  # the 38 bundled papers
        assert "1 message sent (into db/outbox)" in said[-1], said[-1]

        (outbox,) = (c[-1] for c in commands if c[0] == "head")
        (message,) = (home / outbox).read_text(encoding="utf-8").splitlines()
        text = json.loads(message)["text"]
        assert text.startswith("Paperboy digest for local:check") and "== Offline RL ==" in text

        (clean,) = (line for line in check.splitlines() if line.startswith("rm "))
        sh("sh", "-c", clean, cwd=home)
        assert sorted(p.name for p in home.rglob("*")) == [".env", "db", "outbox"]
    finally:
        shutil.rmtree(base)
