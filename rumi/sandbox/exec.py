"""Running one command inside a chat's container: wrapping, streaming with a deadline, capping.

Why not `container.exec_run`: it buffers all output in memory (a `yes` would eat the Pi's RAM)
and waits forever. Here the raw exec socket is read with `select` against a wall-clock deadline,
only the head and tail of each stream are kept, and when the command ends (or times out) every
process in the container but init and the keep-alive is killed, so nothing it started survives
it, whatever it did to hide (`setsid`, `nohup … &`, dropping the `RUMI_EXEC` marker).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import secrets
import select
import time
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, NotFound

log = logging.getLogger(__name__)

MARKER_ENV = "RUMI_EXEC"
WORKDIR = "/workspace"
KILL_GRACE = 2.0  # seconds past the timeout before the host-side sweep runs
LAST_RESORT_WAIT = 5.0  # seconds after the sweep before the container itself is killed
GONE_WAIT = 1.5  # seconds a SIGKILLed command's container is watched for stopping
# The wrapper shell itself could not fork the command (dash: "Cannot fork", busybox: "can't
# fork"), or the engine could not even start the exec's process.
_WRAPPER_FORK_FAILED = re.compile(r"rumi-exec: (?:\d+: )?(?:Cannot fork|can't fork[^\n]*)\n?")
_FORK_FAILED = re.compile(r"resource temporarily unavailable|cannot fork|can't fork", re.I)
# The engine could not start the exec's process at all (runc's init was killed: the container's
# memory is used up), reported as the exec's output with exit code 126.
_START_FAILED = re.compile(r"OCI runtime exec failed: [^\n]*\n?")
TRUNCATION_NOTE = "\n…[output truncated: {dropped} bytes omitted]…\n"

# Every process of the sandbox except init (pid 1), the keep-alive and the calling shell is
# SIGKILLed, in rounds until a round finds none (a fork bomb refills the table while it is being
# emptied). The keep-alive is the lowest pid above 1: docker-init starts it before anything else
# exists in the container's pid namespace, and pids are never reused below 300. Builtins only
# (no fork), so it works when the pids limit is used up; zombies (state Z) wait for init to reap
# them and are not counted. A process escapes neither by dropping the exec marker nor by
# `setsid`: nothing a command started outlives it.
_KILL_ALL = (
    'k=; for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] && continue; '
    'if [ -z "$k" ] || [ "$p" -lt "$k" ]; then k=$p; fi; done; '
    'r=0; while [ "$r" -lt 200 ]; do f=; '
    'for d in /proc/[0-9]*; do p=${d#/proc/}; '
    'case "$p" in 1|"$k"|"$$") continue;; esac; '
    's=; read -r s 2>/dev/null < "$d/stat"; s=${s##*) }; '
    'case "$s" in Z*|"") continue;; esac; '
    'kill -9 "$p" 2>/dev/null && f=1; done; '
    '[ -z "$f" ] && break; r=$((r+1)); done; '
)

# $1 = seconds, $2 = the user's command line. bash when the image has it (the full image),
# plain sh otherwise (the busybox test image); not a login shell: the image's ENV already sets
# PATH/HOME/LANG and /etc/profile would cost every command a few more milliseconds.
# `timeout -s KILL` is the first line of defence; GNU timeout puts itself in a new process
# group ($!), which is then killed in a fork-free loop until empty; then everything else the
# command left behind (_KILL_ALL).
_WRAPPER = (
    'T="$1"; C="$2"; '
    'if command -v bash >/dev/null 2>&1; then set -- bash -c "$C"; else set -- sh -c "$C"; fi; '
    'if command -v timeout >/dev/null 2>&1; then set -- timeout -s KILL "$T" "$@"; fi; '
    '"$@" & pg=$!; wait "$pg"; rc=$?; '
    'n=0; while [ "$n" -lt 10000 ] && kill -9 -"$pg" 2>/dev/null; do n=$((n+1)); done; '
    + _KILL_ALL + 'exit $rc'
)

# The host-side sweep (a fresh exec, when the command's own wrapper did not end in time).
_SWEEP = _KILL_ALL + '[ -z "$f" ] && exit 0; exit 1'


@dataclass(frozen=True)
class ExecResult:
    """What a command did. `exit_code` is None when it was killed without a status."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    duration: float = 0.0
    container_killed: bool = False
    note: str = ""  # something the person should know (the sandbox was restarted)


class ContainerNotRunning(Exception):
    """The container stopped between lookup and exec; the caller recreates it and retries.

    Raised only before the command started (exec create/start refused), so a retry can never
    run a command twice.
    """


class CannotFork(Exception):
    """The container's pids limit is used up, so the command never started: the caller
    recreates the container and runs it (once) in the new one."""


class OutOfMemory(CannotFork):
    """The engine could not even start the command's process (its memory is used up): as
    with `CannotFork` nothing ran, so the caller recreates the container and runs it once."""


class ContainerRemoved(Exception):
    """The container went away after the command had started (pruned, `docker rm`).

    Not retried: the command may already have had effects (files in /workspace survive), and
    running a non-idempotent command twice is worse than reporting the failure.
    """


def new_token() -> str:
    return secrets.token_hex(8)


def wrap_command(command: str, timeout: float) -> list[str]:
    """argv that runs `command` under bash -c (or sh -c) with an in-container kill timer."""
    seconds = str(max(1, math.ceil(timeout)))
    return ["sh", "-c", _WRAPPER, "rumi-exec", seconds, command]


def sweep_command() -> list[str]:
    """argv that SIGKILLs every process of the sandbox but init and the keep-alive."""
    return ["sh", "-c", _SWEEP, "rumi-sweep"]


class CappedBuffer:
    """Keeps the first and last bytes of a stream; counts what was dropped in between."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(1, limit * 2 // 3)
        self.tail_limit = max(1, limit - self.head_limit)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail
        return head + TRUNCATION_NOTE.format(dropped=self.dropped) + tail


def raw_socket(sock: Any) -> Any:
    """The OS socket behind docker-py's exec socket (a SocketIO for unix sockets)."""
    return getattr(sock, "_sock", sock)


def pump(sock: Any, deadline: float, stdout: CappedBuffer, stderr: CappedBuffer) -> bool:
    """Demultiplex Docker's exec stream into the buffers until EOF (True) or deadline (False).

    Frames are an 8-byte header (stream id, 3 pad bytes, big-endian length) then the payload.
    """
    raw = raw_socket(sock)
    pending = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([raw], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = raw.recv(65536)
        if not chunk:
            return True
        pending += chunk
        while len(pending) >= 8:
            size = int.from_bytes(pending[4:8], "big")
            if len(pending) < 8 + size:
                break
            target = stderr if pending[0] == 2 else stdout
            target.feed(bytes(pending[8 : 8 + size]))
            del pending[: 8 + size]


def run_in_container(
    container: Any, argv: list[str], timeout: float, *, user: str, limit: int
) -> ExecResult:
    """Blocking (call via asyncio.to_thread): exec `argv`, stream, enforce the deadline.

    Escalation when the stream is still open `KILL_GRACE` s after the timeout: a marker sweep
    from a fresh exec, then, `LAST_RESORT_WAIT` s later, killing the container itself.
    """
    api = container.client.api
    out, err = CappedBuffer(limit), CappedBuffer(limit)
    exec_id, sock, started = _start(api, container, argv, user)
    killed_by_host, container_killed = _stream(container, sock, started + timeout, user, out, err)
    duration = time.monotonic() - started
    at_deadline = killed_by_host or duration >= timeout - 0.05
    try:
        exit_code = _exit_code(api, exec_id)
        # A container stopped or removed mid-command SIGKILLs it (137) just like the OOM killer
        # or a `kill -9`; only the container's own state tells them apart. (At the deadline,
        # the kill was ours.)
        if (not at_deadline and exit_code in (None, 137)
                and _container_gone(container)):
            raise ContainerRemoved(f"container {container.name} stopped during the command")
    except NotFound as exc:  # the exec (and its container) vanished while the command ran
        raise ContainerRemoved(str(exc)) from exc
    if exit_code == 2 and _WRAPPER_FORK_FAILED.fullmatch(err.text()):
        raise CannotFork(err.text().strip())
    if exit_code == 126 and not err.text() and _START_FAILED.fullmatch(out.text()):
        raise OutOfMemory(out.text().strip())
    timed_out = killed_by_host or (exit_code in (124, 137) and at_deadline)
    if timed_out and not container_killed:
        _sweep(container, user)
    return ExecResult(
        exit_code=None if killed_by_host else exit_code,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        duration=duration,
        container_killed=container_killed,
    )


def can_run(container: Any, user: str) -> bool:
    """Whether the container can still start a process and see it exit normally.

    Asked after a command was SIGKILLed (137): memory filled by something that outlives every
    process (files in the tmpfs /tmp, which cannot be swapped out) gets every later command
    killed too, and only a new container frees it.
    """
    try:
        result = run_in_container(container, ["true"], 10.0, user=user, limit=200)
    except (CannotFork, ContainerNotRunning, ContainerRemoved, NotFound):
        return False
    return result.exit_code == 0


def _start(api: Any, container: Any, argv: list[str], user: str) -> tuple[str, Any, float]:
    """Create and start the exec: (its id, its socket, when it started)."""
    try:  # nothing has run yet: a missing or stopped container may be recreated and retried
        exec_id = api.exec_create(
            container.id, argv, stdout=True, stderr=True, user=user, workdir=WORKDIR,
            environment={MARKER_ENV: new_token()},
        )["Id"]
        started = time.monotonic()
        return exec_id, api.exec_start(exec_id, socket=True), started
    except APIError as exc:
        if isinstance(exc, NotFound) or exc.status_code == 409:
            raise ContainerNotRunning(str(exc)) from exc
        if _FORK_FAILED.search(str(exc)):
            raise CannotFork(str(exc)) from exc
        raise


def _stream(container: Any, sock: Any, deadline: float, user: str, out: CappedBuffer,
            err: CappedBuffer) -> tuple[bool, bool]:
    """Read the output until the command ends, escalating past the deadline:
    (killed by the host, container killed)."""
    killed_by_host = container_killed = False
    try:
        finished = pump(sock, deadline + KILL_GRACE, out, err)
        if not finished:
            killed_by_host = True
            _sweep(container, user)
            finished = pump(sock, time.monotonic() + LAST_RESORT_WAIT, out, err)
        if not finished:
            log.warning("exec in %s would not die; killing the container", container.name)
            with contextlib.suppress(APIError):
                container.kill()
            container_killed = True
    finally:
        with contextlib.suppress(OSError):
            sock.close()
    return killed_by_host, container_killed


def _sweep(container: Any, user: str) -> None:
    """Kill every process the command left, wherever it went (process group or not)."""
    with contextlib.suppress(APIError):
        container.exec_run(sweep_command(), user=user)


def _container_gone(container: Any) -> bool:
    """Whether the container stopped (raises NotFound once it is removed).

    The exec's stream ends as soon as its processes are killed, a moment before the engine
    marks the container as exited, so the state is watched for up to GONE_WAIT s. Only a
    SIGKILLed command pays for that (an OOM kill, `kill -9`), never a normal exit.
    """
    deadline = time.monotonic() + GONE_WAIT
    while True:
        container.reload()
        if container.status != "running":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _exit_code(api: Any, exec_id: str) -> int | None:
    for _ in range(20):
        info = api.exec_inspect(exec_id)
        if not info.get("Running"):
            return info.get("ExitCode")
        time.sleep(0.05)
    return None
