"""Count a chat-completions request the way gpt-oss sees it: rendered by OpenAI's harmony
renderer (the `openai-harmony` package, a dev extra) into o200k_harmony tokens.

Groq turns the OpenAI-style request into harmony before the model reads it, so this is the
closest offline count of what Groq bills and caches: a system message carrying the reasoning
effort; the first system message as the developer message's instructions, with the tools as its
`functions` namespace; later system messages as developer messages; user messages; the
assistant's answers on the `final` channel, its tool calls on `commentary` addressed to
`functions.NAME` (with `<|constrain|>json`); tool results from `functions.NAME` back to the
assistant; a tool step's replayed reasoning on `analysis`. The renderer drops reasoning from
earlier turns itself, as the model's own template does.

openai-harmony reads the same o200k file as tiktoken, from its own cache directory
(`TIKTOKEN_RS_CACHE_DIR`, same file name); without network it must find it there, so the
helper points that at `TIKTOKEN_CACHE_DIR` unless it is already set.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

EFFORTS = ("low", "medium", "high")


class HarmonyUnavailable(RuntimeError):
    """openai-harmony is not installed, or cannot load o200k offline."""


@cache
def _encoding() -> Any:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        os.environ.setdefault("TIKTOKEN_RS_CACHE_DIR", os.environ["TIKTOKEN_CACHE_DIR"])
    try:
        from openai_harmony import HarmonyEncodingName, load_harmony_encoding

        return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    except Exception as exc:  # not installed, or no o200k file and no network
        raise HarmonyUnavailable(f"{type(exc).__name__}: {exc}") from exc


def available() -> str | None:
    """None when requests can be counted; else why not (for a skip or a report field)."""
    try:
        _encoding()
    except HarmonyUnavailable as exc:
        return str(exc)
    return None


def render(body: dict[str, Any]) -> list[int]:
    """The prompt tokens of one request body (`messages`, `tools`, `reasoning_effort`), up
    to the point where the assistant starts answering."""
    from openai_harmony import Conversation, Role

    conversation = Conversation.from_messages(_messages(body))
    return list(_encoding().render_conversation_for_completion(conversation, Role.ASSISTANT))


def count(body: dict[str, Any]) -> int:
    return len(render(body))


def common_prefix(a: list[int], b: list[int]) -> int:
    """Tokens at the start of `b` that `a` already had: what a prefix cache can serve."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _messages(body: dict[str, Any]) -> list[Any]:
    from openai_harmony import (
        Author,
        DeveloperContent,
        Message,
        ReasoningEffort,
        Role,
        SystemContent,
    )

    effort = str(body.get("reasoning_effort") or "medium")
    system = SystemContent.new().with_reasoning_effort(
        {"low": ReasoningEffort.LOW, "high": ReasoningEffort.HIGH}.get(effort,
                                                                       ReasoningEffort.MEDIUM))
    out: list[Any] = [Message.from_role_and_content(Role.SYSTEM, system)]
    messages = list(body.get("messages") or [])
    instructions = ""
    if messages and messages[0].get("role") in ("system", "developer"):
        instructions = _text(messages.pop(0))
    tools = [_tool(spec) for spec in body.get("tools") or []]
    developer = DeveloperContent.new()
    if instructions:
        developer = developer.with_instructions(instructions)
    if tools:
        developer = developer.with_function_tools(tools)
    if instructions or tools:
        out.append(Message.from_role_and_content(Role.DEVELOPER, developer))
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            out.append(Message.from_role_and_content(
                Role.DEVELOPER, DeveloperContent.new().with_instructions(_text(message))))
        elif role == "user":
            out.append(Message.from_role_and_content(Role.USER, _text(message)))
        elif role == "assistant":
            out.extend(_assistant(message, names))
        elif role == "tool":
            name = message.get("name") or names.get(str(message.get("tool_call_id")), "tool")
            out.append(Message.from_author_and_content(
                Author.new(Role.TOOL, f"functions.{name}"), _text(message))
                .with_channel("commentary").with_recipient("assistant"))
    return out


def _assistant(message: dict[str, Any], names: dict[str, str]) -> list[Any]:
    from openai_harmony import Message, Role

    out = []
    if message.get("reasoning"):
        out.append(Message.from_role_and_content(Role.ASSISTANT, str(message["reasoning"]))
                   .with_channel("analysis"))
    calls = message.get("tool_calls") or []
    text = _text(message)
    if text and not calls:
        out.append(Message.from_role_and_content(Role.ASSISTANT, text).with_channel("final"))
    elif text:
        out.append(Message.from_role_and_content(Role.ASSISTANT, text)
                   .with_channel("commentary"))
    for call in calls:
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        names[str(call.get("id"))] = name
        out.append(Message.from_role_and_content(Role.ASSISTANT,
                                                 str(function.get("arguments") or "{}"))
                   .with_channel("commentary").with_recipient(f"functions.{name}")
                   .with_content_type("<|constrain|>json"))
    return out


def _tool(spec: dict[str, Any]) -> Any:
    from openai_harmony import ToolDescription

    function = spec.get("function") or spec
    return ToolDescription.new(str(function.get("name") or ""),
                               str(function.get("description") or ""),
                               parameters=function.get("parameters"))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts: only the text ones are rendered as text
        return "".join(str(part.get("text") or "") for part in content
                       if isinstance(part, dict) and part.get("type") == "text")
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
