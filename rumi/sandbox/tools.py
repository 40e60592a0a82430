"""The model-facing sandbox tools: bash, read_file, write_file, list_files.

All of them act inside the calling chat's own container (ctx.chat_id), never on the host.
File tools are confined to /workspace twice: the requested path is normalised here, and the
real path (after symlinks) is checked again inside the container before anything is read or
written. Failures become ToolError with a message the model can act on.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import time

from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, localized_tool
from rumi.sandbox.exec import ExecResult
from rumi.sandbox.manager import SandboxError, SandboxManager
from rumi.sandbox.policy import WORKSPACE, parse_size
from rumi.sandbox.tool_text import tool_texts

FILE_OP_TIMEOUT = 20.0
MAX_WRITE_BYTES = 1_000_000

# Shared prologue: $1 is the path (already normalised); resolve symlinks and stay inside.
_CONFINE = (
    'r=$(realpath -- "$1" 2>/dev/null) || { echo "no such file or directory" >&2; exit 3; }; '
    '[ -e "$r" ] || { echo "no such file or directory" >&2; exit 3; }; '
    'case "$r" in /workspace|/workspace/*) ;; '
    '*) echo "resolves outside /workspace" >&2; exit 4;; esac; '
)
_READ = _CONFINE + (
    '[ -d "$r" ] && { echo "is a directory" >&2; exit 5; }; '
    '[ -r "$r" ] || { echo "not readable" >&2; exit 6; }; '
    'wc -c < "$r" >&2; head -c "$2" -- "$r"'
)
_LIST = _CONFINE + 'ls -lA -- "$r"'
# $1 = parent dir, $2 = file name, $3 = quota bytes, $4 = new bytes
_PREPARE_WRITE = (
    'mkdir -p -- "$1" 2>/dev/null; ' + _CONFINE +
    '[ -d "$r/$2" ] && { echo "is a directory" >&2; exit 5; }; '
    'used=$(du -sk /workspace 2>/dev/null | cut -f1); '
    'if [ $(( ${used:-0} * 1024 + $4 )) -gt "$3" ]; then '
    'echo "workspace quota exceeded" >&2; exit 7; fi; echo "$r"'
)
_COMMIT_WRITE = 'mv -f -- "$1/$2" "$1/$3"'  # $1 = parent, $2 = temp name, $3 = file name
# Same arguments; never replaces a file: "informe.pdf" becomes "informe-2.pdf" when taken.
_COMMIT_NEW = (
    'b=${3%.*}; e=${3#"$b"}; [ -z "$b" ] && { b=$3; e=; }; f=$3; i=1; '
    'while [ -e "$1/$f" ] || [ -L "$1/$f" ]; do i=$((i+1)); '
    'if [ $i -gt 999 ]; then rm -f -- "$1/$2"; echo "too many files named $3" >&2; exit 8; fi; '
    'f="$b-$i$e"; done; mv -- "$1/$2" "$1/$f" && echo "$1/$f"'
)


class BashArgs(ToolArgs):
    command: str


class ReadFileArgs(ToolArgs):
    path: str


class WriteFileArgs(ToolArgs):
    path: str
    content: str


class ListFilesArgs(ToolArgs):
    path: str = "."


def confine(path: str) -> str:
    """Normalise a user path into /workspace, or raise ToolError (traversal, other roots)."""
    if not path.strip() or "\x00" in path:
        raise ToolError("The path is empty or invalid.")
    resolved = posixpath.normpath(posixpath.join(WORKSPACE, path.strip()))
    if resolved != WORKSPACE and not resolved.startswith(WORKSPACE + "/"):
        raise ToolError(f"Path {path!r} is outside /workspace; only /workspace can be used.")
    return resolved


def format_exec(result: ExecResult, timeout: float) -> str:
    """One text block for the model: stdout, stderr, then how the command ended."""
    parts = [f"[note: {result.note}]"] if result.note else []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.timed_out:
        parts.append(f"[killed: the command exceeded the {timeout:g} s timeout; "
                     "all its processes were stopped]")
    else:
        parts.append(f"[exit code {result.exit_code}]")
    return "\n".join(parts)


READ_ONLY = frozenset({"read_file", "list_files"})  # a call cut by a crash changed nothing


def sandbox_tools(manager: SandboxManager) -> list[Tool]:
    """Tool objects for the registry; offered only while the sandbox is available."""
    tools = SandboxTools(manager)
    texts = tool_texts(manager.settings.exec_timeout)
    handlers = {"bash": (BashArgs, tools.bash), "read_file": (ReadFileArgs, tools.read_file),
                "write_file": (WriteFileArgs, tools.write_file),
                "list_files": (ListFilesArgs, tools.list_files)}
    return [localized_tool(name, texts[name], model, handler, available=manager.available,
                           changes_state=name not in READ_ONLY)
            for name, (model, handler) in handlers.items()]


class SandboxTools:
    """The four tools' handlers; file operations are short commands run as the sandbox user."""

    def __init__(self, manager: SandboxManager) -> None:
        self.manager = manager
        self.settings = manager.settings

    async def run(self, ctx: ToolContext, argv: list[str]) -> ExecResult:
        try:
            return await self.manager.exec_argv(ctx.chat_id, argv, FILE_OP_TIMEOUT)
        except SandboxError as exc:
            raise ToolError(str(exc)) from exc

    @staticmethod
    def check(result: ExecResult, path: str) -> None:
        if result.timed_out:
            raise ToolError(f"{path}: the sandbox did not answer in time.")
        if result.exit_code != 0:
            reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed"
            raise ToolError(f"{path}: {reason}.")

    async def bash(self, args: BashArgs, ctx: ToolContext) -> str:
        if not args.command.strip():
            raise ToolError("The command is empty.")
        try:
            result = await self.manager.exec(ctx.chat_id, args.command)
        except SandboxError as exc:
            raise ToolError(str(exc)) from exc
        return format_exec(result, self.settings.exec_timeout)

    async def read_file(self, args: ReadFileArgs, ctx: ToolContext) -> str:
        path = confine(args.path)
        limit = self.settings.output_max_chars
        result = await self.run(ctx, ["sh", "-c", _READ, "rumi-read", path, str(limit)])
        self.check(result, args.path)
        size_line = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "0"
        size = int(size_line) if size_line.isdigit() else 0
        text = result.stdout
        if size > limit:
            text += f"\n…[file is {size} bytes; only the first {limit} are shown]"
        return text

    async def write_file(self, args: WriteFileArgs, ctx: ToolContext) -> str:
        path = confine(args.path)
        if path == WORKSPACE:
            raise ToolError("Give a file name inside /workspace.")
        data = args.content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"The content is too large ({len(data)} bytes; "
                            f"max {MAX_WRITE_BYTES}). Write it in parts or generate it with bash.")
        parent, name = posixpath.split(path)
        temp = f".{name}.rumi-{time.monotonic_ns()}"
        quota = parse_size(self.settings.workspace_size, "workspace_size")
        prepared = await self.run(ctx, ["sh", "-c", _PREPARE_WRITE, "rumi-write", parent, name,
                                        str(quota), str(len(data))])
        self.check(prepared, args.path)
        real_parent = prepared.stdout.strip() or parent
        try:
            await self.manager.put_archive(ctx.chat_id, real_parent, _tar_one(temp, data))
        except SandboxError as exc:
            raise ToolError(str(exc)) from exc
        committed = await self.run(ctx, ["sh", "-c", _COMMIT_WRITE, "rumi-commit", real_parent,
                                         temp, name])
        self.check(committed, args.path)
        return f"Wrote {len(data)} bytes to {path}."

    async def list_files(self, args: ListFilesArgs, ctx: ToolContext) -> str:
        path = confine(args.path)
        result = await self.run(ctx, ["sh", "-c", _LIST, "rumi-ls", path])
        self.check(result, args.path)
        return result.stdout.rstrip("\n") or "(empty)"


def _tar_one(name: str, data: bytes) -> bytes:
    """A tar with one file owned by the sandbox user (put_archive extracts as the daemon)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        info.uid = info.gid = 1000
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def save_new_file(manager: SandboxManager, chat_id: str, directory: str, name: str,
                        data: bytes) -> str:
    """Put `data` into /workspace/<directory>/ as `name`, or `name-2`… when that is taken (a
    received file never replaces one already there); the workspace quota is checked first.

    Returns the file's path in the container; SandboxError (SandboxUnavailable when the engine
    is down) says why nothing was saved.
    """
    if not name or "/" in name or name in (".", "..") or "\x00" in name:
        raise SandboxError(f"Invalid file name {name!r}.")
    try:
        parent = confine(directory)
    except ToolError as exc:
        raise SandboxError(str(exc)) from exc

    async def step(argv: list[str]) -> str:
        result = await manager.exec_argv(chat_id, argv, FILE_OP_TIMEOUT)
        if result.timed_out:
            raise SandboxError("The sandbox did not answer in time.")
        if result.exit_code != 0:
            lines = result.stderr.strip().splitlines()
            raise SandboxError(f"{lines[-1] if lines else 'failed'}.")
        return result.stdout.strip()

    quota = parse_size(manager.settings.workspace_size, "workspace_size")
    real_parent = await step(["sh", "-c", _PREPARE_WRITE, "rumi-write", parent, name,
                              str(quota), str(len(data))]) or parent
    temp = f".{name}.rumi-{time.monotonic_ns()}"
    await manager.put_archive(chat_id, real_parent, _tar_one(temp, data))
    return await step(["sh", "-c", _COMMIT_NEW, "rumi-save", real_parent, temp, name])
