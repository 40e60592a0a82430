"""Tool registry: JSON-schema tools the model may call, validated before they run.

Every failure a tool can have becomes a `ToolResult(is_error=True)` the model sees; nothing a
model sends can crash the agent loop.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

log = logging.getLogger(__name__)

TRUNCATION_MARKER = "\n…[truncated {dropped} characters]…\n"


class ToolArgs(BaseModel):
    """Base for tool argument models: unknown arguments are an error the model is told about."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(ToolArgs):
    """For tools that take no arguments."""


class ToolError(Exception):
    """Raised by a tool to report a failure to the model (not a bug)."""


@dataclass
class ToolContext:
    """What a tool call knows about where it runs: always one chat, never another."""

    chat_id: str
    session: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResult:
    content: str
    is_error: bool = False


Handler = Callable[[Any, ToolContext], Awaitable[str]]


@dataclass(frozen=True)
class ToolText:
    """A tool's description and its parameters' descriptions in one language: a chat in
    English must not read Spanish tool schemas beside "Reply language: English" (issue 27)."""

    description: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class Tool:
    name: str
    description: str
    args_model: type[ToolArgs]
    handler: Handler
    available: Callable[[], bool] = lambda: True
    max_result_chars: int | None = None
    # False for tools that only read: a call cut by a crash is then not worth telling the
    # person about (it may have run; nothing changed).
    changes_state: bool = True
    texts: dict[str, ToolText] = field(default_factory=dict)   # language code -> its words

    def spec(self, language: str | None = None) -> dict[str, Any]:
        """The definition sent with every request: it is paid for on every call, so the
        schema is the lean one (`lean_schema`); validation still uses the full model.

        In `language` when the tool has words for it (the name never changes). The result is
        a pure function of the language, so a chat's tool list stays byte-identical turn to
        turn and the prompt cache keeps working."""
        schema = lean_schema(self.args_model.model_json_schema())
        schema.pop("description", None)  # the model class docstring is for developers
        properties = schema.pop("properties", {})
        text = self.texts.get(language or "")
        if text is not None:
            for name, words in text.params.items():
                if name in properties:
                    properties[name] = {**properties[name], "description": words}
        parameters = {"type": "object", "properties": properties, **schema}
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": text.description if text is not None else self.description,
                "parameters": parameters,
            },
        }


def localized_tool(name: str, texts: dict[str, ToolText], args_model: type[ToolArgs],
                   handler: Handler, **options: Any) -> Tool:
    """A tool described in every language of `texts`; the first one is its default."""
    default = next(iter(texts.values()))
    return Tool(name, default.description, args_model, handler, texts=texts, **options)


# Keywords the model does not need: pydantic's generated titles repeat the property names,
# `additionalProperties` and length/item limits are enforced (with a clear error) when the
# arguments are validated, so sending them costs tokens on every request for nothing.
SCHEMA_NOISE = frozenset({
    "title", "additionalProperties", "minLength", "maxLength", "minItems", "maxItems",
})
_NAMED_SCHEMAS = frozenset({"properties", "$defs"})
_ALTERNATION = re.compile(r"^\^\(([\w-]+(?:\|[\w-]+)*)\)\$$")


def lean_schema(node: Any) -> Any:
    """A JSON schema as the model needs it: types, required, enums, descriptions, defaults
    and numeric bounds. `X | None = None` becomes an optional `X`, and a `^(a|b)$` pattern
    becomes an enum (shorter, and clearer to a model than a regular expression)."""
    if isinstance(node, list):
        return [lean_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    options = node.get("anyOf")
    if options is not None:
        kept = [o for o in options if o != {"type": "null"}]
        node.pop("anyOf")
        if len(kept) == 1 and isinstance(kept[0], dict):
            node = {**kept[0], **node}
        elif kept:
            node["anyOf"] = kept
    if "default" in node and node["default"] is None:
        del node["default"]
    match = _ALTERNATION.match(str(node.get("pattern", "")))
    if match and node.get("type") == "string":
        del node["pattern"]
        node["enum"] = match.group(1).split("|")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in SCHEMA_NOISE:
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: lean_schema(sub) for name, sub in value.items()}
        else:
            out[key] = lean_schema(value)
    return out


def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and tail of a long text: errors usually live at the end of output."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    dropped = len(text) - head - tail
    return text[:head] + TRUNCATION_MARKER.format(dropped=dropped) + text[-tail:]


class ToolRegistry:
    def __init__(self, max_result_chars: int = 8_000) -> None:
        self._tools: dict[str, Tool] = {}
        self.max_result_chars = max_result_chars

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def available(self) -> list[Tool]:
        return [t for t in self._tools.values() if _is_available(t)]

    def specs(self, language: str | None = None) -> list[dict[str, Any]]:
        return [t.spec(language) for t in self.available()]

    def names(self) -> list[str]:
        return [t.name for t in self.available()]

    async def execute(self, name: str, raw_arguments: str | None, ctx: ToolContext) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None or not _is_available(tool):
            known = ", ".join(self.names()) or "none"
            return ToolResult(f"Unknown tool {name!r}. Available tools: {known}.", is_error=True)
        try:
            payload = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolResult(f"Arguments are not valid JSON: {exc.msg}.", is_error=True)
        if not isinstance(payload, dict):
            return ToolResult("Arguments must be a JSON object.", is_error=True)
        try:
            args = tool.args_model.model_validate(payload)
        except ValidationError as exc:
            return ToolResult(_describe_validation(exc), is_error=True)
        try:
            content = await tool.handler(args, ctx)
            is_error = False
        except ToolError as exc:
            content, is_error = str(exc), True
        except Exception:
            log.exception("tool %s failed in chat %s", name, ctx.chat_id)
            content, is_error = f"Tool {name} failed with an internal error.", True
        limit = tool.max_result_chars or self.max_result_chars
        return ToolResult(truncate_middle(content, limit), is_error=is_error)


def _is_available(tool: Tool) -> bool:
    try:
        return bool(tool.available())
    except Exception:
        log.exception("availability check of tool %s failed", tool.name)
        return False


def _describe_validation(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r}")
        elif err["type"] == "missing":
            problems.append(f"missing argument {where!r}")
        else:
            problems.append(f"{where}: {err['msg']}")
    return "Invalid arguments: " + "; ".join(problems) + "."
