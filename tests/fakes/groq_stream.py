"""Streaming for the fake Groq: a chat completion sent as Server-Sent Events, the way Groq and
OpenAI document `stream: true`.

- Each event is one line `data: {chat.completion.chunk}` and a blank line; the stream ends with
  `data: [DONE]`. Every chunk carries the same `id`, `created` and `model`.
- The first chunk has `delta.role = "assistant"` and `x_groq.id`; reasoning models send their
  thinking as `delta.reasoning` fragments first; then `delta.content` fragments; tool calls
  come as `delta.tool_calls` items with an `index` — the first fragment of a call has its
  `id`, `type` and `function.name` with empty `arguments`, later ones only argument pieces.
- The last chunk has an empty delta, the `finish_reason`, and `x_groq.usage` (Groq's place for
  usage in a stream); with `stream_options.include_usage` the top-level `usage` is filled too.
- A failure once the 200 is out cannot change the status: Groq writes
  `data: {"error": {...}}` and ends the stream (e.g. `tool_use_failed` found mid-generation).
- A connection cut leaves the stream without `[DONE]`.

`StreamFault` scripts the last two; `StreamRecord` notes what was sent and whether the client
went away before the end (the way a test sees `/stop` close the HTTP response).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class StreamFault:
    """After `after` content/tool chunks: an `error` event (its body) or, with `error` None,
    the connection is dropped."""

    after: int
    error: dict[str, Any] | None = None


@dataclass
class StreamRecord:
    """One streamed answer: chunks written, whether it ended with [DONE], whether the client
    closed the connection first."""

    model: str
    chunks: int = 0
    done: bool = False
    client_closed: bool = False
    texts: list[str] = field(default_factory=list)


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] if text else []


def chunk_deltas(message: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """The deltas of `message` after its role chunk: reasoning, content, tool calls."""
    deltas: list[dict[str, Any]] = []
    deltas += [{"reasoning": part} for part in pieces(str(message.get("reasoning") or ""), size)]
    deltas += [{"content": part} for part in pieces(str(message.get("content") or ""), size)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        deltas.append({"tool_calls": [{"index": index, "id": call.get("id"), "type": "function",
                                       "function": {"name": function.get("name"),
                                                    "arguments": ""}}]})
        for part in pieces(str(function.get("arguments") or ""), size):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    return deltas


async def stream_completion(request: web.Request, payload: dict[str, Any],
                            headers: dict[str, str], *, chunk_chars: int, delay: float,
                            fault: StreamFault | None, include_usage: bool,
                            record: StreamRecord) -> web.StreamResponse:
    """Write `payload` (a whole chat.completion) as a stream of chunks."""
    response = web.StreamResponse(status=200, headers={
        **headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    choice = payload["choices"][0]
    base = {"id": payload["id"], "object": "chat.completion.chunk",
            "created": payload["created"], "model": payload["model"],
            "system_fingerprint": payload.get("system_fingerprint")}
    request_id = payload["x_groq"]["id"]

    async def send(data: dict[str, Any] | str) -> bool:
        line = data if isinstance(data, str) else json.dumps(data)
        try:
            await response.write(f"data: {line}\n\n".encode())
        except (ConnectionResetError, ConnectionError):
            record.client_closed = True
            return False
        if request.transport is None or request.transport.is_closing():
            record.client_closed = True
            return False
        record.chunks += 1
        return True

    def chunk(delta: dict[str, Any], finish: str | None = None,
              **extra: Any) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}], **extra}

    if not await send(chunk({"role": "assistant", "content": ""}, x_groq={"id": request_id})):
        return response
    for number, delta in enumerate(chunk_deltas(choice["message"], chunk_chars)):
        if fault is not None and number >= fault.after:
            return await _fail(request, response, send, fault)
        if delay:
            await asyncio.sleep(delay)
        if not await send(chunk(delta)):
            return response
        if "content" in delta:
            record.texts.append(delta["content"])
    if fault is not None:
        return await _fail(request, response, send, fault)
    usage = payload["usage"]
    last = chunk({}, choice["finish_reason"], x_groq={"id": request_id, "usage": usage})
    if include_usage:
        last["usage"] = usage
    if await send(last) and await send("[DONE]"):
        record.done = True
        await response.write_eof()
    return response


async def _fail(request: web.Request, response: web.StreamResponse, send: Any,
                fault: StreamFault) -> web.StreamResponse:
    if fault.error is not None:
        await send(fault.error)
        await response.write_eof()
        return response
    transport = request.transport
    if transport is not None:
        transport.abort()   # like a dropped connection: no [DONE], no clean end
    return response
