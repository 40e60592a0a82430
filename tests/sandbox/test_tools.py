"""The model-facing tools, through the real ToolRegistry and a real container."""

from __future__ import annotations

import json

import pytest

from rumi.base.tools import ToolContext, ToolError, ToolRegistry
from rumi.sandbox.tools import confine, sandbox_tools

pytestmark = pytest.mark.docker


@pytest.fixture
async def tools(manager, chat_ids):
    registry = ToolRegistry()
    for tool in sandbox_tools(manager):
        registry.register(tool)
    assert await manager.status() == (True, None)
    chat = chat_ids()

    async def call(name: str, **arguments: object):
        return await registry.execute(name, json.dumps(arguments), ToolContext(chat_id=chat))

    call.chat = chat
    return call


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "a/../../x", "/workspace/../etc",
                                  "", "  ", "a\x00b"])
def test_confine_rejects_paths_outside_workspace(path):
    with pytest.raises(ToolError):
        confine(path)


@pytest.mark.parametrize(("path", "expected"), [
    (".", "/workspace"), ("a/b.txt", "/workspace/a/b.txt"), ("/workspace/x", "/workspace/x"),
    ("a/../b", "/workspace/b"),
])
def test_confine_accepts_workspace_paths(path, expected):
    assert confine(path) == expected


async def test_python_through_bash_tool(tools):
    result = await tools("bash", command="python3 -c 'print(2**100)'")
    assert (result.is_error, result.content) == (False, "1267650600228229401496703205376\n"
                                                        "[exit code 0]")
    failing = await tools("bash", command="ls /nope")
    assert "[stderr]" in failing.content and failing.content.endswith("[exit code 2]")
    empty = await tools("bash", command="   ")
    assert empty.is_error


async def test_write_read_list_roundtrip(tools):
    written = await tools("write_file", path="notes/hola.txt", content="¡hola, ñandú!\nfin\n")
    assert written.content == "Wrote 21 bytes to /workspace/notes/hola.txt."
    read = await tools("read_file", path="/workspace/notes/hola.txt")
    assert (read.is_error, read.content) == (False, "¡hola, ñandú!\nfin\n")
    listing = await tools("list_files", path="notes")
    assert "hola.txt" in listing.content and "sandbox" in listing.content
    overwritten = await tools("write_file", path="notes/hola.txt", content="nuevo")
    assert not overwritten.is_error
    assert (await tools("read_file", path="notes/hola.txt")).content == "nuevo"
    leftovers = await tools("bash", command="ls -A notes")
    assert leftovers.content == "hola.txt\n[exit code 0]"  # no temp file left behind


async def test_file_tool_errors_are_friendly(tools):
    for name, args in [("read_file", {"path": "../../etc/shadow"}),
                       ("write_file", {"path": "/etc/x", "content": "x"}),
                       ("list_files", {"path": "/"})]:
        result = await tools(name, **args)
        assert result.is_error and "outside /workspace" in result.content
    missing = await tools("read_file", path="missing.txt")
    assert missing.is_error and "no such file" in missing.content
    directory = await tools("read_file", path=".")
    assert directory.is_error and "is a directory" in directory.content


async def test_symlinks_cannot_lead_outside_workspace(tools):
    await tools("bash", command="ln -s /etc etc-link && ln -s /etc/passwd pw")
    read = await tools("read_file", path="pw")
    assert read.is_error and "outside /workspace" in read.content
    write = await tools("write_file", path="etc-link/evil", content="x")
    assert write.is_error
    listing = await tools("list_files", path="etc-link")
    assert listing.is_error


async def test_long_file_is_cut_with_a_note(tools, manager):
    limit = manager.settings.output_max_chars
    await tools("bash", command=f"head -c {limit * 3} /dev/zero | tr '\\0' a > big.txt")
    read = await tools("read_file", path="big.txt")
    assert f"file is {limit * 3} bytes" in read.content


async def test_write_file_respects_the_workspace_quota(make_manager, sandbox_settings, chat_ids):
    manager = make_manager(settings=sandbox_settings(workspace_size="200k"))
    registry = ToolRegistry()
    for tool in sandbox_tools(manager):
        registry.register(tool)
    await manager.status()
    ctx = ToolContext(chat_id=chat_ids())
    await manager.exec(ctx.chat_id, "head -c 150000 /dev/zero > filler")
    small = await registry.execute("write_file", json.dumps({"path": "ok.txt", "content": "x"}),
                                   ctx)
    assert not small.is_error
    big = await registry.execute("write_file",
                                 json.dumps({"path": "big.txt", "content": "y" * 60_000}), ctx)
    assert big.is_error and "quota" in big.content
    assert (await manager.exec(ctx.chat_id, "ls")).stdout.split() == ["filler", "ok.txt"]


def test_a_restart_note_reaches_the_model_first():
    from rumi.sandbox.exec import ExecResult
    from rumi.sandbox.tools import format_exec

    text = format_exec(ExecResult(0, "hi\n", "", note="the sandbox was restarted"), 30)
    assert text.splitlines() == ["[note: the sandbox was restarted]", "hi", "[exit code 0]"]
