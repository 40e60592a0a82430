"""A fake Groq (as of November 2026) speaking `/openai/v1/chat/completions` and
`/openai/v1/models`, for the real `groq` client.

It is as unkind as the real service, because Rumi must survive the real service:

- **Catalogue** (`catalogue`, on): only served models answer; retired or unknown ids get 404
  `model_not_found` (400 `model_decommissioned` for older retirements), audio models refuse
  chat. `retire(id)`, `add_model(spec)`, `remove_model(id)` change it at run time. "fake" is a
  test-only plain chat model.
- **Auth** (`valid_keys`, None = any non-empty bearer): 401 `invalid_api_key` otherwise.
- **Reasoning** (gpt-oss): `message.reasoning` unless `include_reasoning: false` or
  `reasoning_format: "hidden"`; `reasoning_effort` picks tokens from `reasoning_tokens_by_effort`;
  those tokens come out of the output budget, so a small `max_tokens` yields `content: ""` and
  `finish_reason: "length"`. On every model an answer longer than the budget is cut.
- **Request checks**: `reasoning_content` on an assistant message is refused (always);
  malformed tool-call arguments and orphan tool results are refused (`validate_history`, on).
- **Prompt caching** (gpt-oss): `usage.prompt_tokens_details.cached_tokens` is the prefix shared
  with an earlier request, in `cache_block_tokens` blocks; `usage_log` records every answer.
- **Rate limits** (off): `free_tier()` or `set_limits(model, Limits(...))` (per model; ITPM/OTPM
  rows optional); `window_seconds` and `day_seconds` shrink the windows, `clock` is injectable,
  `limit_counters` counts and `limiter.refusals` lists every 429; `limiter.spend(model, scope)`
  empties a bucket. Each limit is a bucket refilled continuously (tests/fakes/groq_limits.py);
  a request is admitted when its whole prompt (cached too) plus its budget
  (`max_completion_tokens`, or the older `max_tokens`) is there, and the uncached prompt plus
  the completion are taken out. Only a limited model's answers carry `x-ratelimit-*` headers
  (reset = time until full); every answer has `x-request-id`.
- **Context window**: a model's own, or the `context_window` override; prompt plus the budget
  the request sent must fit (a request without one is budgeted whatever is left, as servers do).

Tests script answers with `enqueue_text`, `enqueue_tool_call(s)`, the fault helpers
(`enqueue_error`, `enqueue_status`, `enqueue_rate_limit`, `enqueue_request_too_large`,
`enqueue_tool_use_failed`), or a `responder(body)`; the server's own refusals come first and
leave the queue untouched. Every authenticated request body is kept in `requests`, and its
computed `prompt_tokens` in `reported` (messages and tools, chars × `prompt_token_factor`, or
`prompt_counter(body)`); `ScriptedReply.prompt_tokens` changes only what the answer reports.
Requests with images go to `vision` (tests/fakes/groq_vision.py) instead.

**Streaming** (`stream: true`, tests/fakes/groq_stream.py): the same answer as Server-Sent
Events in `stream_chunk_chars` pieces, `stream_delay` seconds apart (the slow mode), usage in
the last chunk's `x_groq.usage`; a reply's `stream_fault` ends it with an error event or a
dropped connection. A slow model is as slow unstreamed: the whole answer comes after the time
its chunks would have taken. Errors found before generation (429, 413, 400 …) stay HTTP errors.
`streams` records every streamed answer (chunks sent, `[DONE]`, the client closing first).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.groq_audio import FakeTranscriptions
from tests.fakes.groq_catalogue import (
    MODEL,
    Catalogue,
    GroqError,
    ModelSpec,
    error_body,
    invalid_request,
    model_not_found,
    status_body,
)
from tests.fakes.groq_limits import (
    FREE_TIER,
    FREE_TIER_ROW,
    LimitCounters,
    Limits,
    PromptCache,
    RateLimiter,
    canonical_prompt,
    rate_limit_error,
    request_too_large_error,
)
from tests.fakes.groq_stream import (
    StreamFault,
    StreamRecord,
    chunk_deltas,
    stream_completion,
)
from tests.fakes.groq_vision import FakeVision, image_urls

TOOL_USE_FAILED = ("Failed to call a function. Please adjust your prompt. "
                   "See 'failed_generation' for more details.")
CONTEXT_LENGTH_ERROR = {"error": {
    "message": "Please reduce the length of the messages or completion.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
}}
SCRIPTED_429 = {"TPM": (8_000, 7_012, 2_456), "RPM": (30, 30, 1),
                "TPD": (200_000, 199_412, 2_456), "RPD": (1_000, 1_000, 1)}


@dataclass
class ScriptedReply:
    message: dict[str, Any] | None = None
    status: int = 200
    error_body: dict[str, Any] | None = None
    delay: float = 0.0
    prompt_tokens: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    reasoning: str | None = None  # reasoning models only: the thinking text to return
    reasoning_tokens: int | None = None  # reasoning models only: overrides the effort table
    finish_reason: str | None = None  # forced, whatever the budget says
    stream_fault: StreamFault | None = None  # streamed answers only: fails after N chunks


Responder = Callable[[dict[str, Any]], dict[str, Any] | ScriptedReply]


class FakeGroqServer:
    def __init__(self, *, valid_keys: set[str] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 catalogue: Catalogue | None = None) -> None:
        self.queue: deque[ScriptedReply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.responder: Responder | None = None
        self.default_text = "ok"
        self.prompt_token_factor: float | None = None
        self.prompt_counter: Callable[[dict[str, Any]], int] | None = None
        self.context_window: int | None = None
        self.reported: list[int] = []  # prompt_tokens of every request, refused ones too
        self.valid_keys = valid_keys
        self.clock = clock
        self.catalogue = catalogue or Catalogue()
        self.validate_history = True
        self.reasoning_tokens_by_effort: dict[str, int] = {"low": 40, "medium": 120, "high": 400}
        self.cache = PromptCache(clock)
        self.cache_block_tokens = 128
        self.usage_log: list[dict[str, Any]] = []  # one entry per answered request
        self.limiter = RateLimiter(clock)
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        self.audio = FakeTranscriptions(self._auth_error)
        self.vision = FakeVision()
        self.stream_chunk_chars = 16
        self.stream_delay = 0.0
        self.streams: list[StreamRecord] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeGroqServer:
        app = web.Application()
        app.router.add_post("/openai/v1/chat/completions", self._completions)
        app.router.add_get("/openai/v1/models", self._models)
        app.router.add_get("/openai/v1/models/{model:.+}", self._model)
        self.audio.register(app)
        # a server going away cuts what it has not answered after 0.1 s, as a server that is
        # stopped does (aiohttp's default waits 60 s: a test whose model is 30 s slow waited
        # for that answer at its teardown; 0 would mean "wait for ever")
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- catalogue and limits -------------------------------------------------------------

    def retire(self, model_id: str, *, decommissioned: bool = False) -> None:
        self.catalogue.retire(model_id, decommissioned=decommissioned)

    def add_model(self, spec: ModelSpec) -> None:
        self.catalogue.add(spec)

    def remove_model(self, model_id: str) -> None:
        self.catalogue.remove(model_id)

    def free_tier(self) -> None:
        """Groq's free-tier limits on every chat model ("fake" gets the gpt-oss row)."""
        for spec in self.catalogue.chat_models():
            self.limiter.limits[spec.id] = FREE_TIER.get(spec.id, FREE_TIER_ROW)

    def set_limits(self, model_id: str, limits: Limits | None) -> None:
        if limits is None:
            self.limiter.limits.pop(model_id, None)
        else:
            self.limiter.limits[model_id] = limits

    @property
    def window_seconds(self) -> float:
        return self.limiter.window_seconds

    @window_seconds.setter
    def window_seconds(self, value: float) -> None:
        self.limiter.window_seconds = value

    @property
    def day_seconds(self) -> float:
        return self.limiter.day_seconds

    @day_seconds.setter
    def day_seconds(self, value: float) -> None:
        self.limiter.day_seconds = value

    @property
    def limit_counters(self) -> LimitCounters:
        return self.limiter.counters

    # --- scripting --------------------------------------------------------------------------

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

    def enqueue_status(self, status: int, code: str | None = None, message: str | None = None,
                       **kwargs: Any) -> None:
        """One answer with `status` and Groq's body for it (401, 403, 404, 400
        `model_decommissioned`, 498, 500, 502, 503 …)."""
        body = status_body(status, code, message)
        self.queue.append(ScriptedReply(status=status, error_body=body, **kwargs))

    def enqueue_rate_limit(self, retry_after: float, scope: str = "TPM", limit: int | None = None,
                           used: int | None = None, requested: int | None = None,
                           **kwargs: Any) -> None:
        """One 429 exactly like the limiter's, whatever the limiter thinks."""
        default_limit, default_used, default_requested = SCRIPTED_429[scope]
        error = rate_limit_error(MODEL, scope, default_limit if limit is None else limit,
                                 default_used if used is None else used,
                                 default_requested if requested is None else requested,
                                 retry_after)
        self._enqueue_groq_error(error, **kwargs)

    def enqueue_request_too_large(self, limit: int = 8_000, requested: int = 9_413,
                                  **kwargs: Any) -> None:
        self._enqueue_groq_error(request_too_large_error(MODEL, limit, requested), **kwargs)

    def enqueue_tool_use_failed(self, failed_generation: str, message: str = TOOL_USE_FAILED,
                                *, mid_stream: bool = False, **kwargs: Any) -> None:
        """One 400 `tool_use_failed`: the model produced a call Groq could not accept.

        `mid_stream`: to a streamed request the 200 is already out when the generation turns
        out bad, so the error comes as an event in the stream (after any text)."""
        body = error_body(message, code="tool_use_failed", failed_generation=failed_generation)
        if mid_stream:
            self.queue.append(ScriptedReply({"role": "assistant", "content": ""},
                                            stream_fault=StreamFault(0, body), **kwargs))
            return
        self.queue.append(ScriptedReply(status=400, error_body=body, **kwargs))

    def _enqueue_groq_error(self, error: GroqError, headers: dict[str, str] | None = None,
                            **kwargs: Any) -> None:
        self.queue.append(ScriptedReply(status=error.status, error_body=error.body,
                                        headers={**error.headers, **(headers or {})}, **kwargs))

    def last_messages(self) -> list[dict[str, Any]]:
        return self.requests[-1]["messages"] if self.requests else []

    # --- HTTP -------------------------------------------------------------------------------

    def _auth_error(self, request: web.Request) -> web.Response | None:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        key = key.strip()
        if scheme == "Bearer" and key and (self.valid_keys is None or key in self.valid_keys):
            return None
        body = error_body("Invalid API Key", code="invalid_api_key")
        return web.json_response(body, status=401)

    async def _models(self, request: web.Request) -> web.Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        return web.json_response({"object": "list", "data": self.catalogue.listing()})

    async def _model(self, request: web.Request) -> web.Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        model_id = request.match_info["model"]
        spec = self.catalogue.get(model_id)
        if spec is None:
            return web.json_response(model_not_found(model_id).body, status=404)
        return web.json_response(spec.listing())

    async def _completions(self, request: web.Request) -> web.Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        request_id = f"req_{uuid.uuid4().hex[:26]}"
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            error = invalid_request("request body must be a JSON object")
            return web.json_response(error.body, status=400, headers={"x-request-id": request_id})
        if image_urls(body):
            return self._describe(body, request_id)
        self.requests.append(body)
        prompt_tokens = self._prompt_tokens(body)
        self.reported.append(prompt_tokens)
        model = str(body.get("model", ""))
        try:
            payload, headers, reply = await self._answer(body, model, prompt_tokens, request_id)
        except GroqError as error:
            headers = {**self.limiter.headers(model), "x-request-id": request_id, **error.headers}
            return web.json_response(error.body, status=error.status, headers=headers)
        if body.get("stream"):
            record = StreamRecord(model)
            self.streams.append(record)
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await stream_completion(request, payload, headers,
                                           chunk_chars=self.stream_chunk_chars,
                                           delay=self.stream_delay, fault=reply.stream_fault,
                                           include_usage=include_usage, record=record)
        if self.stream_delay:   # the same model, writing at the same pace, unseen
            message = payload["choices"][0]["message"]
            await asyncio.sleep(self.stream_delay
                                * len(chunk_deltas(message, self.stream_chunk_chars)))
        return web.json_response(payload, headers=headers)

    def _describe(self, body: dict[str, Any], request_id: str) -> web.Response:
        """A request with images: see tests/fakes/groq_vision.py."""
        model = str(body.get("model", ""))
        try:
            spec = self.catalogue.chat_model(model)
            text, prompt = self.vision.answer(body, spec)
        except GroqError as error:
            return web.json_response(error.body, status=error.status,
                                     headers={"x-request-id": request_id, **error.headers})
        completion = len(text) // 4 + 1
        payload = _completion(request_id, model, {"role": "assistant", "content": text}, "stop",
                              prompt, 0, 0, completion)
        return web.json_response(payload, headers={"x-request-id": request_id})

    # --- one completion -----------------------------------------------------------------------

    async def _answer(self, body: dict[str, Any], model: str, prompt_tokens: int,
                      request_id: str
                      ) -> tuple[dict[str, Any], dict[str, str], ScriptedReply]:
        spec = self.catalogue.chat_model(model)
        check_messages(body.get("messages") or [], self.validate_history)
        effort = self._check_reasoning(body, spec)
        explicit = body.get("max_completion_tokens") or body.get("max_tokens")
        window = self.context_window or spec.context_window
        if prompt_tokens + int(explicit or 0) > window:
            raise GroqError(400, CONTEXT_LENGTH_ERROR)
        budget = int(explicit or spec.max_completion_tokens)
        prompt = canonical_prompt(body)
        cached_chars = self.cache.hit_chars(model, prompt) if spec.caching else 0
        # Like Groq: admission counts the whole prompt, cached tokens too, plus the budget.
        self.limiter.check(model, prompt_tokens, budget)
        reply = self._next_reply(body)
        if reply.status != 200:
            await asyncio.sleep(reply.delay)
            raise GroqError(reply.status, _fill_model(reply.error_body or {}, model),
                            reply.headers)
        if spec.caching:
            self.cache.store(model, prompt)
        counted = prompt_tokens - self._cached(cached_chars, len(prompt), prompt_tokens)
        if reply.prompt_tokens is not None:
            prompt_tokens = reply.prompt_tokens
        cached = self._cached(cached_chars, len(prompt), prompt_tokens)
        message, finish, reasoning, completion = self._compose(body, spec, reply, effort, budget)
        # Like Groq: what is taken out is the uncached prompt and the completion produced.
        self.limiter.record(model, counted, completion)
        self.usage_log.append({"request": body, "model": model, "prompt": prompt_tokens,
                               "cached": cached,
                               "reasoning": reasoning, "completion": completion,
                               "budget": budget, "finish_reason": finish})
        headers = {**self.limiter.headers(model), "x-request-id": request_id, **reply.headers}
        await asyncio.sleep(reply.delay)
        return _completion(request_id, model, message, finish, prompt_tokens, cached, reasoning,
                           completion), headers, reply

    def _next_reply(self, body: dict[str, Any]) -> ScriptedReply:
        if self.queue:
            return self.queue.popleft()
        if self.responder is not None:
            produced = self.responder(body)
            return produced if isinstance(produced, ScriptedReply) else ScriptedReply(produced)
        return ScriptedReply({"role": "assistant", "content": self.default_text})

    def _prompt_tokens(self, body: dict[str, Any]) -> int:
        if self.prompt_counter is not None:
            return self.prompt_counter(body)
        chars = len(json.dumps(body.get("messages", [])))
        if body.get("tools"):
            chars += len(json.dumps(body["tools"]))
        return max(1, int(chars * (self.prompt_token_factor or 0.25)))

    def _cached(self, chars: int, total_chars: int, prompt_tokens: int) -> int:
        """The cached share in tokens: by the character factor, or, with a `prompt_counter`
        (a real tokenizer), the prefix's share of the prompt's characters."""
        if self.prompt_counter is not None:
            tokens = prompt_tokens * chars // max(1, total_chars)
        else:
            tokens = int(chars * (self.prompt_token_factor or 0.25))
        tokens = min(tokens, prompt_tokens)
        return tokens - tokens % self.cache_block_tokens

    def _check_reasoning(self, body: dict[str, Any], spec: ModelSpec) -> str:
        """The effort to think with, after refusing the combinations Groq refuses."""
        fmt = body.get("reasoning_format")
        if fmt is not None and fmt not in ("parsed", "raw", "hidden"):
            raise invalid_request("`reasoning_format` must be one of `parsed`, `raw`, `hidden`")
        if fmt is not None and body.get("include_reasoning") is not None:
            raise invalid_request("`include_reasoning` and `reasoning_format` are mutually "
                                  "exclusive")
        json_mode = (body.get("response_format") or {}).get("type") == "json_object"
        if fmt == "raw" and (body.get("tools") or json_mode):
            raise invalid_request("reasoning_format raw is not supported with tool use or "
                                  "JSON mode")
        effort = body.get("reasoning_effort")
        if not spec.reasoning:
            return ""
        if effort is None:
            return "medium"
        if effort not in self.reasoning_tokens_by_effort:
            choices = ", ".join(f"`{name}`" for name in self.reasoning_tokens_by_effort)
            raise invalid_request(f"`reasoning_effort` must be one of {choices}")
        return str(effort)

    def _compose(self, body: dict[str, Any], spec: ModelSpec, reply: ScriptedReply,
                 effort: str, budget: int) -> tuple[dict[str, Any], str, int, int]:
        """(message, finish_reason, reasoning tokens, completion tokens): thinking is paid
        first from the budget, the answer gets what is left or is cut."""
        message = {"role": "assistant", **(reply.message or {})}
        calls = message.get("tool_calls")
        finish = "tool_calls" if calls else "stop"
        reasoning = 0
        if spec.reasoning:
            reasoning = (reply.reasoning_tokens if reply.reasoning_tokens is not None
                         else self.reasoning_tokens_by_effort[effort])
        if reasoning >= budget:
            reasoning, answer, finish = budget, 0, "length"
            message["content"] = ""
            message.pop("tool_calls", None)
        else:
            left = budget - reasoning
            text = str(message.get("content") or "")
            answer = _call_tokens(calls) if calls else len(text) // 4 + 1
            if answer > left:
                answer, finish = left, "length"
                message["content"] = "" if calls else text[: left * 4]
                message.pop("tool_calls", None)
        if spec.reasoning:
            _show_reasoning(body, message, reply.reasoning or _thinking(body, message))
        return message, reply.finish_reason or finish, reasoning, reasoning + answer


def check_messages(messages: list[dict[str, Any]], validate_history: bool) -> None:
    """Refuse what Groq refuses in the conversation it is sent."""
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and "reasoning_content" in message:
            where = f"'messages.{index}'"
            raise invalid_request(f"{where} : for 'role:assistant' the following must be "
                                  f"satisfied[({where} : property 'reasoning_content' is "
                                  "unsupported)]")
    if not validate_history:
        return
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            open_calls = set()
            for number, call in enumerate(message.get("tool_calls") or []):
                arguments = (call.get("function") or {}).get("arguments")
                if not _is_json_object(arguments):
                    raise invalid_request(
                        f"'messages.{index}.tool_calls.{number}.function.arguments' : must be a "
                        f"JSON object encoded as a string, got {str(arguments)[:60]!r}")
                open_calls.add(call.get("id"))
        elif message.get("role") == "tool" and message.get("tool_call_id") not in open_calls:
            raise invalid_request(
                f"'messages.{index}' : tool_call_id {message.get('tool_call_id')!r} does not "
                "answer a tool call of the preceding assistant message")


def _is_json_object(arguments: Any) -> bool:
    if not isinstance(arguments, str):
        return False
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


def _call_tokens(calls: list[dict[str, Any]]) -> int:
    text = "".join(call["function"]["name"] + call["function"]["arguments"] for call in calls)
    return len(text) // 4 + 1


def _thinking(body: dict[str, Any], message: dict[str, Any]) -> str:
    """Plausible thinking text about the last user turn and what the answer does."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    said = users[-1].get("content") if users else None
    if isinstance(said, list):
        said = " ".join(str(part.get("text", "")) for part in said if isinstance(part, dict))
    topic = f'The user wrote: "{str(said)[:80]}".' if said else "No new user message."
    if message.get("tool_calls"):
        names = ", ".join(call["function"]["name"] for call in message["tool_calls"])
        return f"{topic} I need more information first, so I will call {names}."
    return f"{topic} I can answer directly; keep it short and in the user's language."


def _show_reasoning(body: dict[str, Any], message: dict[str, Any], text: str) -> None:
    fmt = body.get("reasoning_format")
    if body.get("include_reasoning") is False or fmt == "hidden":
        return
    if fmt == "raw":
        message["content"] = f"<think>{text}</think>{message.get('content') or ''}"
    else:
        message["reasoning"] = text


def _fill_model(body: dict[str, Any], model: str) -> dict[str, Any]:
    error = body.get("error")
    if not isinstance(error, dict) or MODEL not in str(error.get("message", "")):
        return body
    return {**body, "error": {**error, "message": error["message"].replace(MODEL, model)}}


def _completion(request_id: str, model: str, message: dict[str, Any], finish: str,
                prompt: int, cached: int, reasoning: int, completion: int) -> dict[str, Any]:
    prompt_time, completion_time = prompt / 40_000, completion / 500
    return {
        "id": f"chatcmpl-{uuid.uuid4()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
            "queue_time": 0.02,
            "prompt_time": prompt_time,
            "completion_time": completion_time,
            "total_time": prompt_time + completion_time,
        },
        "system_fingerprint": "fp_fake",
        "x_groq": {"id": request_id},
    }


__all__ = ["CONTEXT_LENGTH_ERROR", "Catalogue", "FakeGroqServer", "LimitCounters", "Limits",
           "ModelSpec", "ScriptedReply", "status_body"]
