"""How a chat model reads a chat-completions request, for the fake Groq's `responder`.

A chat model answers the LATEST user-role message. gpt-oss's published chat template (the
Hugging Face `chat_template.jinja`, also llama.cpp's `models/templates/openai-gpt-oss-120b.jinja`)
renders every user message as a new `<|start|>user` turn, and the model writes the turn after
the last one. OpenAI's function-calling guide describes the other half: the tool's result is
sent back and the model forms its answer from it. So after tool results that follow the
latest user message, the model answers with what the tools returned; a user message after
them starts a new turn, and the model answers that message instead.

Nothing here knows the client under test: `StandInModel` reads roles and text the way any
server receives them, and decides tool calls from the latest user message by the rules a
test gives it (e.g. "run `X`" → the shell tool).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def text_of(message: dict[str, Any]) -> str:
    """A message's text: its content string, or the text parts of a multi-part content."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def messages_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("messages") or [])


def latest_user_index(body: dict[str, Any]) -> int | None:
    """Index of the last user-role message (the turn the model answers), None if none."""
    messages = messages_of(body)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def latest_user(body: dict[str, Any]) -> dict[str, Any]:
    """The last user-role message ({} when the request has none)."""
    index = latest_user_index(body)
    return messages_of(body)[index] if index is not None else {}


def latest_user_text(body: dict[str, Any]) -> str:
    return text_of(latest_user(body))


def last_message(body: dict[str, Any]) -> dict[str, Any]:
    """The message the request ends with ({} when it has none)."""
    messages = messages_of(body)
    return messages[-1] if messages else {}


def pending_tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results the request ends with (after the latest user message): the model
    continues its turn from them. Empty when the request ends with anything else."""
    messages = messages_of(body)
    start = latest_user_index(body)
    after = messages[start + 1:] if start is not None else messages
    results: list[dict[str, Any]] = []
    for message in reversed(after):
        if message.get("role") != "tool":
            break
        results.insert(0, message)
    return results


@dataclass(frozen=True)
class ToolRule:
    """A request the model meets with a tool call: `pattern` (a regex, case-insensitive) is
    searched in the latest user message; `arguments` builds the call's arguments from it."""

    pattern: str
    tool: str
    arguments: Callable[[re.Match[str]], dict[str, Any]]


@dataclass
class StandInModel:
    """A chat model's behaviour without a script: it answers the latest user message.

    - Ending with tool results (after the latest user message): an answer quoting them
      (`after_tool`, `{output}`), never the same call again.
    - Otherwise the latest user message: the first `rules` match becomes a tool call (if the
      request offers that tool); no match, an answer quoting it (`reply`, `{said}`).
    - JSON mode: `json_reply` (a valid, empty object by default).

    `said` and `calls` record what it answered and which calls it made, for assertions.
    """

    rules: list[ToolRule] = field(default_factory=list)
    reply: str = "Re: {said}"
    after_tool: str = "{output}"
    json_reply: str = "{}"
    said: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if (body.get("response_format") or {}).get("type") == "json_object":
            return {"role": "assistant", "content": self.json_reply}
        results = pending_tool_results(body)
        if results:
            output = "\n".join(text_of(m) for m in results)
            return self._answer(self.after_tool.format(output=output))
        said = latest_user_text(body)
        offered = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        for rule in self.rules:
            found = re.search(rule.pattern, said, re.IGNORECASE | re.DOTALL)
            if found and rule.tool in offered:
                return self._call(rule.tool, rule.arguments(found))
        return self._answer(self.reply.format(said=said))

    def _answer(self, text: str) -> dict[str, Any]:
        self.said.append(text)
        return {"role": "assistant", "content": text}

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((name, arguments))
        call = {"id": f"call_standin_{next(self._ids)}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
