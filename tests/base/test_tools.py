"""ToolRegistry: whatever the model sends, a tool call ends as a `ToolResult`, never a crash.

Issue 2 asks that unknown or malformed calls are tool errors the model sees and can fix, and
that results are truncated to a budget (a 200 KB `ls -R` must not blow the context window).
These drive `ToolRegistry.execute` directly with real tools and raw argument strings, as the
agent loop passes them from the model.
"""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import Field

from rumi.base.tools import (
    TRUNCATION_MARKER,
    NoArgs,
    Tool,
    ToolArgs,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolText,
    localized_tool,
    truncate_middle,
)

CTX = ToolContext(chat_id="5")


class EchoArgs(ToolArgs):
    text: str
    times: int = 1


async def echo(args: EchoArgs, ctx: ToolContext) -> str:
    return args.text * args.times


async def explode(args: NoArgs, ctx: ToolContext) -> str:
    raise RuntimeError("database is locked at /secret/path")


async def refuse(args: NoArgs, ctx: ToolContext) -> str:
    raise ToolError("No tengo permiso para eso.")


def registry(max_result_chars: int = 8_000) -> ToolRegistry:
    tools = ToolRegistry(max_result_chars)
    tools.register(Tool("echo", "repeat a text", EchoArgs, echo))
    tools.register(Tool("explode", "always fails", NoArgs, explode))
    tools.register(Tool("refuse", "reports a failure", NoArgs, refuse))
    tools.register(Tool("hidden", "not available now", NoArgs, refuse, available=lambda: False))
    return tools


async def test_valid_call_runs() -> None:
    result = await registry().execute("echo", '{"text": "ab", "times": 3}', CTX)
    assert result.content == "ababab" and not result.is_error


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("nope", "{}", "Unknown tool 'nope'. Available tools: echo, explode, refuse."),
    ("hidden", "{}", "Unknown tool 'hidden'."),
    ("echo", '{"text": "a",', "Arguments are not valid JSON"),
    ("echo", "[1, 2]", "Arguments must be a JSON object."),
    ("echo", '"just a string"', "Arguments must be a JSON object."),
    ("echo", "null", "Arguments must be a JSON object."),
    ("echo", '{"text": "a", "colour": "red"}', "unknown argument 'colour'"),
    ("echo", "{}", "missing argument 'text'"),
    ("echo", '{"text": "a", "times": "many"}', "Invalid arguments: times:"),
])
async def test_malformed_calls_are_errors_the_model_sees(name: str, raw: str,
                                                         expected: str) -> None:
    result = await registry().execute(name, raw, CTX)
    assert result.is_error and expected in result.content


async def test_missing_arguments_mean_an_empty_object() -> None:
    """Models often send no arguments at all for tools that take none."""
    result = await registry().execute("refuse", None, CTX)
    assert result.is_error and result.content == "No tengo permiso para eso."


async def test_a_crashing_handler_is_logged_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    result = await registry().execute("explode", "{}", CTX)
    assert result.is_error
    assert result.content == "Tool explode failed with an internal error."
    assert "/secret/path" not in result.content  # internals stay in the log
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "tool explode failed in chat 5" in record.getMessage() and record.exc_info


async def test_long_result_keeps_head_marker_and_tail() -> None:
    text = "".join(f"línea {n:05d}\n" for n in range(1_700))  # ~20,000 characters
    assert len(text) > 20_000
    result = await registry(max_result_chars=1_000).execute(
        "echo", json.dumps({"text": text}), CTX)
    assert not result.is_error
    dropped = len(text) - 1_000
    marker = TRUNCATION_MARKER.format(dropped=dropped)
    assert result.content == text[:666] + marker + text[-334:]
    assert len(result.content) == 1_000 + len(marker)


async def test_a_tool_may_have_its_own_budget() -> None:
    tools = ToolRegistry(max_result_chars=10_000)
    tools.register(Tool("small", "tight budget", EchoArgs, echo, max_result_chars=300))
    result = await tools.execute("small", '{"text": "x", "times": 5000}', CTX)
    assert len(result.content) < 300 + 60 and "[truncated 4700 characters]" in result.content


def test_text_within_the_budget_is_untouched() -> None:
    assert truncate_middle("corto", 10) == "corto"
    assert truncate_middle("x" * 10, 10) == "x" * 10


class RichArgs(ToolArgs):
    """Developer notes that the model never needs to read."""

    title: str = Field(min_length=1, max_length=80, description="the heading")
    kind: str = Field(default="fact", pattern="^(fact|preference|decision)$")
    note: str | None = Field(default=None, max_length=200)
    limit: int = Field(default=8, ge=1, le=30)
    ids: list[int] = Field(min_length=1, max_length=500)


def _keys(node: object) -> set[str]:
    """Every schema keyword in a spec (property names excluded)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    found |= _keys(sub)
                continue
            found.add(key)
            found |= _keys(value)
    elif isinstance(node, list):
        for item in node:
            found |= _keys(item)
    return found


def test_spec_is_lean_but_keeps_what_the_model_needs() -> None:
    spec = Tool("rich", "does things", RichArgs, echo).spec()
    params = spec["function"]["parameters"]
    assert params["type"] == "object" and params["required"] == ["title", "ids"]
    assert params["properties"] == {
        "title": {"description": "the heading", "type": "string"},
        "kind": {"default": "fact", "type": "string",
                 "enum": ["fact", "preference", "decision"]},
        "note": {"type": "string"},
        "limit": {"default": 8, "maximum": 30, "minimum": 1, "type": "integer"},
        "ids": {"items": {"type": "integer"}, "type": "array"},
    }
    noise = {"title", "additionalProperties", "anyOf", "minLength", "maxLength", "minItems",
             "maxItems", "pattern", "description"} & _keys(params)
    assert noise == {"description"}  # only the property's own description, not the docstring
    assert "Developer notes" not in json.dumps(spec)
    assert Tool("none", "no arguments", NoArgs, refuse).spec()["function"]["parameters"] == {
        "type": "object", "properties": {}}


def test_spec_speaks_the_language_asked_and_keeps_the_rest() -> None:
    """One tool, two languages: the description and the named parameters' words change, the
    name, types and constraints do not; a language without words gets the default."""
    texts = {"es": ToolText("hace cosas", {"title": "el título", "nope": "ignorado"}),
             "en": ToolText("does things", {"title": "the heading"})}
    tool = localized_tool("rich", texts, RichArgs, echo)
    es, en, fr = tool.spec("es"), tool.spec("en"), tool.spec("fr")
    assert es["function"]["description"] == "hace cosas" == tool.description
    assert en["function"]["description"] == "does things"
    assert es["function"]["parameters"]["properties"]["title"] == {
        "description": "el título", "type": "string"}
    assert "nope" not in es["function"]["parameters"]["properties"]
    assert fr == tool.spec() == Tool("rich", "hace cosas", RichArgs, echo).spec()
    del es["function"]["description"], en["function"]["description"]
    del es["function"]["parameters"]["properties"]["title"]["description"]
    del en["function"]["parameters"]["properties"]["title"]["description"]
    assert es == en
    registry = ToolRegistry()
    registry.register(tool)
    assert registry.specs("en") == [tool.spec("en")]


async def test_lean_spec_does_not_loosen_validation() -> None:
    tools = ToolRegistry()
    tools.register(Tool("rich", "does things", RichArgs, accept))
    for raw, expected in [
        ('{"title": "", "ids": [1]}', "title:"),
        ('{"title": "x", "ids": []}', "ids:"),
        ('{"title": "x", "ids": [1], "kind": "mood"}', "kind:"),
        ('{"title": "x", "ids": [1], "limit": 99}', "limit:"),
        ('{"title": "x", "ids": [1], "colour": "red"}', "unknown argument 'colour'"),
    ]:
        result = await tools.execute("rich", raw, CTX)
        assert result.is_error and expected in result.content, raw
    assert not (await tools.execute("rich", '{"title": "x", "ids": [1], "note": null}',
                                    CTX)).is_error


async def accept(args: RichArgs, ctx: ToolContext) -> str:
    return "ok"
