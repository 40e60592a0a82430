"""The messages as Groq will accept them, and what a request costs before it is sent: only the
fields Groq takes, tool-call arguments that are JSON objects, a cheap token estimate and the
key of the prompt's cacheable prefix."""

from __future__ import annotations

import hashlib
import json
from typing import Any

ASSISTANT_FIELDS = ("role", "content", "tool_calls", "name", "reasoning")
OTHER_FIELDS = ("role", "content", "tool_call_id", "name")
CHARS_PER_TOKEN = 3.2


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    chars = len(json.dumps(messages, ensure_ascii=False))
    if tools:
        chars += len(json.dumps(tools, ensure_ascii=False))
    return int(chars / CHARS_PER_TOKEN) + 1


def prefix_key(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """What a prompt begins with (its first message and its tools' names): requests that share
    it share Groq's cache, others do not."""
    head = json.dumps(messages[:1], sort_keys=True, ensure_ascii=False)
    names = ",".join(t.get("function", {}).get("name", "") for t in tools or [])
    return hashlib.sha256(f"{head}|{names}".encode()).hexdigest()[:16]


def sanitize_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the fields Groq accepts, and tool-call arguments that are JSON objects.

    Groq answers 400 to an assistant message with `reasoning_content`, and a server that
    validates history refuses arguments that are not JSON, which would fail every later
    request of the chat. Such arguments are sent as `{}`; the stored call keeps its error.
    """
    clean: list[dict[str, Any]] = []
    for message in messages:
        allowed = ASSISTANT_FIELDS if message.get("role") == "assistant" else OTHER_FIELDS
        out = {k: v for k, v in message.items() if k in allowed and v is not None}
        if message.get("role") == "assistant":
            out.setdefault("content", message.get("content") or "")
            if not out.get("reasoning"):
                out.pop("reasoning", None)
        if out.get("tool_calls"):
            out["tool_calls"] = [_clean_call(call) for call in out["tool_calls"]]
        clean.append(out)
    return clean


def _clean_call(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    function["arguments"] = json_object_text(function.get("arguments"))
    return {"id": call.get("id"), "type": "function", "function": function}


def json_object_text(arguments: Any) -> str:
    """`arguments` if it is the text of a JSON object, else "{}"."""
    if isinstance(arguments, str):
        try:
            if isinstance(json.loads(arguments), dict):
                return arguments
        except ValueError:
            pass
    return "{}"
