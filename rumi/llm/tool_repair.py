"""Recover the tool calls Groq refused to parse, so a formatting slip does not end the turn.

Groq parses the model's tool-call syntax on its side and answers HTTP 400 `tool_use_failed` when
that parser disagrees with the model, handing back the raw attempt as `failed_generation`. The
models are usually right about *what* to do and only wrong about the wrapping (`<function=x>`
tags with a stray `=`, a fenced JSON block, single quotes, a missing brace). Reading those
shapes here keeps the conversation going; when the intent is genuinely unclear we never guess a
tool or arguments, we hand the model a short note so its one retry can fix the format.

Everything here is pure: no I/O, nothing is executed, and no input makes `recover` raise.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection
from dataclasses import dataclass, field

import json_repair

from rumi.llm.tool_names import resolve

log = logging.getLogger(__name__)

QUOTE_CHARS = 200
MAX_LISTED_TOOLS = 40
MAX_DEPTH = 8

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}"
_VALID_NAME = re.compile(rf"{_NAME}")
_OPENER = re.compile(rf"<function\s*=\s*({_NAME})|<function>({_NAME})(?=\s*[{{=,(])")
_CLOSER = re.compile(r"</function\s*>")
_HARMONY_CALL = re.compile(r"\bto=([^\s<]{1,128})(?:[^{]{0,200}?)<\|message\|>")
_HARMONY_END = re.compile(r"<\|(?:call|end|return)\|>")
_GLUED = re.compile(rf"(?<![A-Za-z0-9_.\-])({_NAME})\s*[=,:]?\s*(?=\{{)")
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_EMBEDDED_CALL = re.compile(r"\{\s*\"(?:name|function|tool_calls|tool_uses)\"\s*:")
_NOT_IN_TOOLS = re.compile(
    r"attempted to call tool\s+['\"`]?(.{1,64}?)['\"`]?\s+which was not in request\.tools",
    re.IGNORECASE,
)
_ARGS_NOT_JSON = "parse tool call arguments"
_VALIDATION_FAILED = "tool call validation failed"
_SEPARATORS = " \t\r\n>=,:"
_DECODER = json.JSONDecoder(strict=False)


@dataclass(frozen=True)
class RecoveredCall:
    name: str
    arguments: str


@dataclass(frozen=True)
class Recovery:
    """Exactly one of: calls to run, prose to show as the answer, or a note for one retry."""

    calls: list[RecoveredCall] = field(default_factory=list)
    text: str | None = None
    feedback: str | None = None


@dataclass(frozen=True)
class _Problem:
    """A call-shaped fragment we could not turn into a call: the reason, for the feedback."""

    reason: str


_Item = RecoveredCall | _Problem


class _Unparsed:
    """Sentinel: the text was not JSON even after repair."""


_FAIL = _Unparsed()


def recover(
    failed_generation: str | None, error_message: str, tool_names: Collection[str]
) -> Recovery:
    """Read Groq's `failed_generation` into calls, plain text, or feedback for the model.

    Calls naming unknown tools are still returned: the tool registry's "Unknown tool" answer is
    what teaches the model the right name. Partial success (some calls readable, some not) is
    feedback, because running half of what the model planned is worse than asking again.
    """
    generation = failed_generation if isinstance(failed_generation, str) else ""
    message = error_message if isinstance(error_message, str) else ""
    names = _safe_names(tool_names)
    try:
        return _recover(generation, message, names)
    except Exception:  # the contract is "never raise": a parser bug must not end the turn
        log.warning("tool-call recovery failed unexpectedly", exc_info=True)
        return Recovery(feedback=_feedback(None, generation, message, names))


def _recover(generation: str, message: str, names: list[str]) -> Recovery:
    items, seen = _extract(generation, names)
    calls = [item for item in items if isinstance(item, RecoveredCall)]
    problems = [item for item in items if isinstance(item, _Problem)]
    if calls and not problems:
        return Recovery(calls=calls)
    if problems:
        return Recovery(feedback=_feedback(problems[0].reason, generation, message, names))
    lowered = message.lower()
    clue = (
        _NOT_IN_TOOLS.search(message) or _ARGS_NOT_JSON in lowered or _VALIDATION_FAILED in lowered
    )
    if seen or clue or not generation.strip():
        return Recovery(feedback=_feedback(None, generation, message, names))
    return Recovery(text=generation.strip())


def _extract(text: str, names: list[str]) -> tuple[list[_Item], bool]:
    """Every call-shaped fragment, and whether the text had call syntax at all."""
    harmony = list(_HARMONY_CALL.finditer(text))
    if harmony:
        return _harmony_calls(text, harmony, names), True
    if _OPENER.search(text) or _CLOSER.search(text):
        return _function_tags(text, names), True
    blocks = [m.group(1) for m in _TOOL_CALL_TAG.finditer(text)]
    if blocks:
        return [item for block in blocks for item in _json_items(block, names)], True
    for match in _FENCE.finditer(text):
        items = _json_items(match.group(1), names) if _looks_like_json(match.group(1)) else []
        if items:
            return items, True
    if _looks_like_json(text):
        return _json_items(text, names), True
    return _embedded_calls(text, names), False


def _harmony_calls(text: str, openers: list[re.Match[str]], names: list[str]) -> list[_Item]:
    """gpt-oss's own format leaked whole: `to=functions.NAME … <|message|>{…}<|call|>`."""
    items: list[_Item] = []
    for index, opener in enumerate(openers):
        limit = openers[index + 1].start() if index + 1 < len(openers) else len(text)
        end = _HARMONY_END.search(text, opener.end(), limit)
        body = text[opener.end() : end.start() if end else limit].strip()
        if _looks_like_json(body):
            items.append(_make_call(opener.group(1), _parse_value(body), names, present=True))
        elif body:
            items.append(_Problem(f"the arguments for `{opener.group(1)}` were not a JSON "
                                  f"object: {_quote(body)}"))
        else:
            items.append(_make_call(opener.group(1), None, names, present=False))
    return items


def _function_tags(text: str, names: list[str]) -> list[_Item]:
    """`<function=name>{...}</function>` and its variants, or `name{...}</function>`."""
    items: list[_Item] = []
    pos = 0
    openers = list(_OPENER.finditer(text))
    if openers:
        for index, opener in enumerate(openers):
            if opener.start() < pos:
                continue
            limit = openers[index + 1].start() if index + 1 < len(openers) else len(text)
            name = opener.group(1) or opener.group(2)
            item, pos = _call_at(name, text, opener.end(), limit, names)
            items.append(item)
        return items
    for closer in _CLOSER.finditer(text):
        if closer.start() < pos:
            continue
        segment = text[pos : closer.start()]
        if segment.strip():
            item, end = _segment_call(text, pos, closer.start(), names)
            items.append(item)
            pos = max(closer.end(), end)
        else:
            pos = closer.end()
    if not items:
        items.append(_Problem("it had a `</function>` tag but no tool call before it"))
    return items


def _segment_call(text: str, start: int, stop: int, names: list[str]) -> tuple[_Item, int]:
    """One `...</function>` segment without an opening tag: JSON, or a name glued to JSON."""
    segment = text[start:stop]
    if _looks_like_json(segment):
        items = _json_items(segment, names)
        if len(items) == 1:
            return items[0], stop
        if items:
            return _Problem("it mixed several calls into one `</function>` block"), stop
    glued = _GLUED.search(segment)
    if glued:
        return _call_at(glued.group(1), text, start + glued.end(), len(text), names)
    return _Problem(f"it was not a tool call: {_quote(segment)}"), stop


def _call_at(name: str, text: str, start: int, limit: int, names: list[str]
             ) -> tuple[_Item, int]:
    """Arguments starting at `start` for tool `name`; returns the item and where they ended.

    Valid JSON is read straight through (it may even contain `</function>` inside a string);
    only a broken object is repaired, and then only up to the closing tag.
    """
    i = start
    while i < limit and text[i] in _SEPARATORS:
        i += 1
    close = _CLOSER.search(text, i, limit)
    chunk_end = close.start() if close else limit
    if text.startswith("{", i):
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            return _make_call(name, _parse_value(text[i:chunk_end]), names, present=True), chunk_end
        return _make_call(name, value, names, present=True), end
    body = text[i:chunk_end].strip().rstrip(">").strip()
    if not body:
        return _make_call(name, None, names, present=False), chunk_end
    if body[0] in '"[':
        return _make_call(name, _parse_value(body), names, present=True), chunk_end
    return _Problem(f"the arguments for `{name}` were not a JSON object: {_quote(body)}"), chunk_end


def _json_items(text: str, names: list[str]) -> list[_Item]:
    value = _parse_value(text)
    if isinstance(value, _Unparsed):
        return []
    return _walk(value, 0, names)


def _walk(value: object, depth: int, names: list[str]) -> list[_Item]:
    """Call shapes models produce: OpenAI-style `tool_calls`, bare `{name, arguments}`, lists."""
    if depth > MAX_DEPTH:
        return []
    if isinstance(value, list):
        return [item for element in value for item in _walk(element, depth + 1, names)]
    if not isinstance(value, dict):
        return []
    for key in ("tool_calls", "tool_uses"):
        if isinstance(value.get(key), list):
            return _walk(value[key], depth + 1, names)
    function = value.get("function")
    source = value
    if isinstance(function, dict):
        name = function.get("name")
        if "arguments" in function or "parameters" in function:
            source = function
    elif isinstance(function, str):
        name = function
    elif "recipient_name" in value:
        name = value.get("recipient_name")
    elif "name" in value and ("arguments" in value or "parameters" in value):
        name = value.get("name")
    else:
        return []
    if not isinstance(name, str):
        return [_Problem("a tool call in it had no tool name")]
    key = "arguments" if "arguments" in source else "parameters"
    return [_make_call(name, source.get(key), names, present=key in source)]


def _make_call(name: str, arguments: object, names: list[str], *, present: bool) -> _Item:
    """A call whose arguments are a JSON object; anything else is a problem, never `{}`."""
    name = resolve(name, names) or name.strip()
    if name.startswith("functions."):
        name = name[len("functions.") :]
    if not _VALID_NAME.fullmatch(name):
        return _Problem(f"{_quote(name)} is not a valid tool name")
    if not present or arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, str):
        decoded = _parse_value(arguments)
        if isinstance(decoded, str) and _looks_like_json(decoded):
            decoded = _parse_value(decoded)
        if not isinstance(decoded, _Unparsed):
            arguments = decoded
    if not isinstance(arguments, dict):
        return _Problem(
            f"the arguments for `{name}` were {_describe(arguments)}, not a JSON object"
        )
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _Problem(f"the arguments for `{name}` were not valid JSON")
    return RecoveredCall(name=name, arguments=text)


def _embedded_calls(text: str, names: list[str]) -> list[_Item]:
    """A call written inside prose ("I'll run: {"name": ...}"): only trusted for known tools,
    since prose may legitimately show JSON to the user."""
    known = set(names)
    for match in _EMBEDDED_CALL.finditer(text):
        try:
            value, _ = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        items = _walk(value, 0, names)
        if items and all(isinstance(i, RecoveredCall) and i.name in known for i in items):
            return items
    return []


def _parse_value(text: str) -> object:
    """Strict JSON first; then json_repair for the faults models make (quotes, commas, braces)."""
    stripped = text.strip()
    try:
        value, _ = _DECODER.raw_decode(stripped)
        return value
    except (ValueError, RecursionError):
        pass
    if not _looks_like_json(stripped) or _cut_inside_a_string(stripped):
        return _FAIL
    try:
        value = json_repair.repair_json(stripped, return_objects=True)
    except Exception:  # third-party parser on arbitrary text: any failure means "unreadable"
        return _FAIL
    return value if isinstance(value, dict | list) else _FAIL


def _cut_inside_a_string(text: str) -> bool:
    """An odd number of unescaped double quotes: the text stops inside a string. Repairing
    would close it and run a cut-off command ("rm -rf /workspace/" of a longer path), so the
    model is asked again instead."""
    return text.replace("\\\\", "").replace('\\"', "").count('"') % 2 == 1


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _feedback(problem: str | None, generation: str, message: str, names: list[str]) -> str:
    """One short note the model can act on: what was wrong, the rule, the tools it may call."""
    parts: list[str] = []
    missing = _NOT_IN_TOOLS.search(message)
    lowered = message.lower()
    if missing:
        parts.append(f"You tried to call the tool `{missing.group(1)}`, which is not available.")
    if problem:
        parts.append(f"Your tool call could not be used: {problem}.")
    elif _ARGS_NOT_JSON in lowered:
        shown = f": {_quote(generation)}" if generation.strip() else " as JSON"
        parts.append(f"Your tool call arguments could not be parsed{shown}.")
    elif _VALIDATION_FAILED in lowered and not missing:
        parts.append(f"Your tool call was rejected: {_quote(message)}.")
    elif generation.strip():
        parts.append(f"Your tool call could not be read: {_quote(generation)}.")
    elif not missing:
        parts.append("Your last reply was an empty tool call.")
    parts.append(
        "Call a tool through the tool-calling interface with arguments that are a JSON object "
        "matching the tool's schema, or answer in plain text without calling a tool."
    )
    if names:
        listed = ", ".join(names[:MAX_LISTED_TOOLS])
        more = " …" if len(names) > MAX_LISTED_TOOLS else ""
        parts.append(f"Available tools: {listed}{more}.")
    else:
        parts.append("No tools are available right now.")
    return " ".join(parts)


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > QUOTE_CHARS:
        flat = flat[: QUOTE_CHARS - 1] + "…"
    return f'"{flat}"'


def _describe(value: object) -> str:
    if isinstance(value, _Unparsed):
        return "not valid JSON"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "not an object"


def _safe_names(tool_names: Collection[str]) -> list[str]:
    try:
        return sorted({name for name in tool_names if isinstance(name, str)})
    except TypeError:
        return []
