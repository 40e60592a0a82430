"""A fake Groq server speaking `/openai/v1/chat/completions`, for the real `groq` client.

Tests script it: `enqueue_text`, `enqueue_tool_call`, `enqueue_error`, or a `responder`
function for replies computed from the request. Every request body is kept in `requests`.

Reported `usage.prompt_tokens` covers what a real provider counts: the messages *and* the
tool definitions (chars × `prompt_token_factor`, or `prompt_counter(body)` when a test wants
an exact reference). With `context_window` set, a prompt whose tokens plus `max_tokens` do not
fit is refused like Groq does (HTTP 400 `context_length_exceeded`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class ScriptedReply:
    message: dict[str, Any] | None = None
    status: int = 200
    error_body: dict[str, Any] | None = None
    delay: float = 0.0
    prompt_tokens: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[dict[str, Any]], dict[str, Any] | ScriptedReply]

CONTEXT_LENGTH_ERROR = {"error": {
    "message": "Please reduce the length of the messages or completion.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
}}


class FakeGroqServer:
    def __init__(self) -> None:
        self.queue: deque[ScriptedReply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.responder: Responder | None = None
        self.default_text = "ok"
        self.prompt_token_factor: float | None = None
        self.prompt_counter: Callable[[dict[str, Any]], int] | None = None
        self.context_window: int | None = None
        self.reported: list[int] = []  # prompt_tokens of every request, refused ones too
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeGroqServer:
        app = web.Application()
        app.router.add_post("/openai/v1/chat/completions", self._completions)
        app.router.add_get("/openai/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def enqueue_text(self, text: str, **kwargs: Any) -> None:
        self.queue.append(ScriptedReply({"role": "assistant", "content": text}, **kwargs))

    def enqueue_tool_call(
        self, name: str, arguments: dict[str, Any] | str, call_id: str | None = None, **kwargs: Any
    ) -> None:
        self.enqueue_tool_calls([(name, arguments, call_id)], **kwargs)

    def enqueue_tool_calls(
        self, calls: list[tuple[str, dict[str, Any] | str, str | None]], **kwargs: Any
    ) -> None:
        tool_calls = []
        for name, arguments, call_id in calls:
            args = arguments if isinstance(arguments, str) else json.dumps(arguments)
            tool_calls.append(
                {
                    "id": call_id or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            )
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        self.queue.append(ScriptedReply(message, **kwargs))

    def enqueue_error(self, status: int, message: str = "error", **kwargs: Any) -> None:
        body = {"error": {"message": message, "type": "api_error"}}
        self.queue.append(ScriptedReply(status=status, error_body=body, **kwargs))

    def last_messages(self) -> list[dict[str, Any]]:
        return self.requests[-1]["messages"] if self.requests else []

    def _prompt_tokens(self, body: dict[str, Any]) -> int:
        if self.prompt_counter is not None:
            return self.prompt_counter(body)
        chars = len(json.dumps(body.get("messages", [])))
        if body.get("tools"):
            chars += len(json.dumps(body["tools"]))
        return max(1, int(chars * (self.prompt_token_factor or 0.25)))

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    async def _completions(self, request: web.Request) -> web.Response:
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            return web.json_response({"error": {"message": "no key"}}, status=401)
        body = await request.json()
        self.requests.append(body)
        prompt_tokens = self._prompt_tokens(body)
        self.reported.append(prompt_tokens)
        window = self.context_window
        if window is not None and prompt_tokens + int(body.get("max_tokens") or 0) > window:
            return web.json_response(CONTEXT_LENGTH_ERROR, status=400)
        if self.queue:
            reply = self.queue.popleft()
        elif self.responder is not None:
            produced = self.responder(body)
            reply = produced if isinstance(produced, ScriptedReply) else ScriptedReply(produced)
        else:
            reply = ScriptedReply({"role": "assistant", "content": self.default_text})
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return web.json_response(reply.error_body or {}, status=reply.status,
                                     headers=reply.headers)
        if reply.prompt_tokens is not None:
            prompt_tokens = reply.prompt_tokens
        message = dict(reply.message or {})
        completion_tokens = len(str(message.get("content") or "")) // 4 + 1
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return web.json_response(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish,
                             "logprobs": None}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
                "system_fingerprint": "fake",
                "x_groq": {"id": "req_fake"},
            },
            headers=reply.headers,
        )
