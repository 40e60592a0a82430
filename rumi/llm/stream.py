"""A streamed chat completion put back together, and the person shown its text as it comes.

With `stream: true` Groq sends `chat.completion.chunk`s: `delta.content` pieces (what the
person may see as soon as it arrives), `delta.reasoning` pieces (kept, never shown),
`delta.tool_calls` fragments keyed by `index` (the first carries the call's id and name, the
rest pieces of its arguments), a `finish_reason` on the last choice, and usage only in the
final chunk (`x_groq.usage`; `usage` too when `stream_options.include_usage` was asked).
`Assembly` turns them into the same fields a whole completion has, so everything after the
call (repairs, usage, the loop) is the same for both.

Failures inside a stream are told apart by what the person already saw: nothing yet, and the
client may retry as for any failed request; text already shown, and a retry would show a
different answer after it, so the client raises `StreamBroken` with what was shown and the
agent says plainly that the answer was cut. A stream that ends without a `finish_reason`
(the connection closed cleanly mid-way) counts as broken, never as a whole answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rumi.llm.response import Usage

TextSink = Callable[[str], Awaitable[None]]

# What a failure reported inside a stream (`data: {"error": …}`, no HTTP status of its own)
# would have been as a plain HTTP answer, so the usual classification applies.
_STATUS_BY_CODE = {"tool_use_failed": 400, "context_length_exceeded": 400,
                   "rate_limit_exceeded": 429, "json_validate_failed": 400}
_STATUS_BY_TYPE = {"invalid_request_error": 400, "rate_limit_error": 429,
                   "authentication_error": 401}


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class Assembly:
    """The chunks of one streamed completion, gathered."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    model: str | None = None
    usage: Any = None

    @property
    def text(self) -> str:
        return "".join(self.content)

    def add(self, chunk: Any) -> str:
        """Take one chunk; the text it adds for the person ("" when none)."""
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        x_groq = getattr(chunk, "x_groq", None)
        usage = getattr(x_groq, "usage", None) or usage
        if usage is not None:
            self.usage = usage
        shown = ""
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            if getattr(delta, "reasoning", None):
                self.reasoning.append(delta.reasoning)
            if delta.content:
                self.content.append(delta.content)
                shown += delta.content
            for fragment in delta.tool_calls or []:
                self._call_fragment(fragment)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return shown

    def _call_fragment(self, fragment: Any) -> None:
        call = self.calls.setdefault(fragment.index, _Call())
        if fragment.id:
            call.id = fragment.id
        function = fragment.function
        if function is None:
            return
        if function.name:
            call.name = function.name
        if function.arguments:
            call.arguments.append(function.arguments)

    def message(self) -> dict[str, Any]:
        """The assistant message as a whole completion would have given it."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": "".join(call.arguments)}}
                for _, call in sorted(self.calls.items())]
        return message


@dataclass(frozen=True)
class Answer:
    """What a completion, whole or streamed, gave: the same fields either way."""

    message: dict[str, Any]
    usage: Usage
    model: str
    finish_reason: str | None
    reasoning: str | None

    @classmethod
    def of_completion(cls, completion: Any, model: str) -> Answer:
        choice = completion.choices[0]
        msg = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
        if msg.tool_calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.function.name,
                              "arguments": call.function.arguments or ""}}
                for call in msg.tool_calls]
        return cls(message, usage_of(completion.usage), completion.model or model,
                   choice.finish_reason, getattr(msg, "reasoning", None))

    @classmethod
    def of_stream(cls, assembly: Assembly, model: str) -> Answer:
        return cls(assembly.message(), usage_of(assembly.usage), assembly.model or model,
                   assembly.finish_reason, "".join(assembly.reasoning))


def usage_of(raw: Any) -> Usage:
    """Groq's usage object (a completion's, or a stream's last `x_groq.usage`) as `Usage`."""
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    output_details = getattr(raw, "completion_tokens_details", None)
    return Usage(prompt_tokens=getattr(raw, "prompt_tokens", 0) or 0,
                 completion_tokens=getattr(raw, "completion_tokens", 0) or 0,
                 cached_tokens=getattr(prompt_details, "cached_tokens", 0) or 0,
                 reasoning_tokens=getattr(output_details, "reasoning_tokens", 0) or 0)


async def read(stream: Any, sink: TextSink | None, assembly: Assembly) -> Assembly:
    """Consume `stream` into `assembly`, giving each piece of text to `sink` as it comes.

    The HTTP response is closed however this ends — the last chunk, an error, or the turn
    being cancelled (`/stop`): a closed response tells Groq to stop generating."""
    try:
        async for chunk in stream:
            shown = assembly.add(chunk)
            if shown and sink is not None:
                await sink(shown)
    finally:
        await stream.close()
    return assembly


def error_status(body: object) -> int:
    """The HTTP status a failure reported inside a stream stands for (503 when unknown:
    a server-side failure, worth a retry)."""
    error = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return 503
    code, kind = error.get("code"), error.get("type")
    return _STATUS_BY_CODE.get(str(code), _STATUS_BY_TYPE.get(str(kind), 503))
