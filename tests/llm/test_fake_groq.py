"""The fake Groq behaves like the real one, as seen through the real `groq` SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import groq
import pytest

from tests.fakes.groq_catalogue import ModelSpec
from tests.fakes.groq_limits import Limits, format_duration
from tests.fakes.groq_server import CONTEXT_LENGTH_ERROR, FakeGroqServer, ScriptedReply

GPT = "openai/gpt-oss-120b"
KEY = "gsk_test_key"
UPGRADE = "Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing"
USER = [{"role": "user", "content": "hola"}]
TOOLS = [{"type": "function", "function": {
    "name": "bash", "description": "run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}]


class Clock:
    """A clock the test moves by hand, so windows and TTLs are exact."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def server(clock: Clock) -> AsyncIterator[FakeGroqServer]:
    fake = await FakeGroqServer(clock=clock).start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def client(server: FakeGroqServer) -> AsyncIterator[groq.AsyncGroq]:
    sdk = groq.AsyncGroq(api_key=KEY, base_url=server.base_url, max_retries=0)
    try:
        yield sdk
    finally:
        await sdk.close()


async def chat(client: groq.AsyncGroq, model: str = GPT, messages: list[dict[str, Any]] = USER,
               **kwargs: Any) -> Any:
    return await client.chat.completions.create(model=model, messages=messages, **kwargs)


async def refused(client: groq.AsyncGroq, status: int, **kwargs: Any
                  ) -> tuple[dict[str, Any], groq.APIStatusError]:
    with pytest.raises(groq.APIStatusError) as caught:
        await chat(client, **kwargs)
    assert caught.value.status_code == status
    return caught.value.response.json()["error"], caught.value


# --- response shape ---------------------------------------------------------------------------


async def test_reasoning_model_answer_parses_in_the_sdk(server, client) -> None:
    server.enqueue_text("¡Hola!")
    completion = await chat(client)
    message, usage = completion.choices[0].message, completion.usage
    assert message.content == "¡Hola!" and '"hola"' in message.reasoning
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].logprobs is None
    assert usage.completion_tokens_details.reasoning_tokens == 120
    assert usage.completion_tokens == 120 + len("¡Hola!") // 4 + 1
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.total_time == pytest.approx(usage.prompt_time + usage.completion_time)
    assert completion.model == GPT and completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-") and completion.x_groq.id.startswith("req_")
    raw = await client.chat.completions.with_raw_response.create(model=GPT, messages=USER)
    assert raw.headers["x-request-id"] == (await raw.parse()).x_groq.id


async def test_fake_model_is_plain(server, client) -> None:
    completion = await chat(client, model="fake")
    assert completion.choices[0].message.content == "ok"
    assert completion.choices[0].message.reasoning is None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 0
    assert completion.usage.completion_tokens == 1


# --- catalogue ----------------------------------------------------------------------------------


async def test_catalogue_lists_served_models_only(server, client) -> None:
    page = await client.models.list()
    ids = {model.id for model in page.data}
    assert ids == {GPT, "openai/gpt-oss-20b", "qwen/qwen3.6-27b", "whisper-large-v3",
                   "whisper-large-v3-turbo", "fake"}
    gpt = next(model for model in page.data if model.id == GPT)
    assert (gpt.owned_by, gpt.active, gpt.context_window) == ("OpenAI", True, 131072)
    assert gpt.model_dump()["max_completion_tokens"] == 65536
    assert gpt.public_apps is None and isinstance(gpt.created, int) and gpt.object == "model"


@pytest.mark.parametrize("model", ["llama-3.3-70b-versatile", "llama-3.1-8b-instant",
                                   "meta-llama/llama-4-scout-17b-16e-instruct", "no-such-model"])
async def test_retired_and_unknown_models_are_not_found(server, client, model) -> None:
    error, exc = await refused(client, 404, model=model)
    assert isinstance(exc, groq.NotFoundError)
    assert error == {"message": f"The model `{model}` does not exist or you do not have access "
                                "to it.", "type": "invalid_request_error",
                     "code": "model_not_found"}


@pytest.mark.parametrize("model", ["mixtral-8x7b-32768", "gemma2-9b-it", "llama3-70b-8192"])
async def test_old_retirements_are_decommissioned(server, client, model) -> None:
    error, _ = await refused(client, 400, model=model)
    assert error["code"] == "model_decommissioned"
    assert error["message"].startswith(f"The model `{model}` has been decommissioned")
    assert "https://console.groq.com/docs/deprecations" in error["message"]


async def test_audio_models_refuse_chat(server, client) -> None:
    error, _ = await refused(client, 400, model="whisper-large-v3")
    assert error["message"] == "model `whisper-large-v3` does not support chat completions"
    assert error["type"] == "invalid_request_error"


async def test_catalogue_changes_at_run_time(server, client) -> None:
    await chat(client)
    server.retire(GPT)
    await refused(client, 404)
    assert GPT not in {model.id for model in (await client.models.list()).data}
    server.retire("openai/gpt-oss-20b", decommissioned=True)
    error, _ = await refused(client, 400, model="openai/gpt-oss-20b")
    assert error["code"] == "model_decommissioned"
    server.add_model(ModelSpec("new/model", "Someone", 4096, 1024))
    assert (await chat(client, model="new/model")).choices[0].message.content == "ok"
    server.remove_model("fake")
    await refused(client, 404, model="fake")


async def test_server_refusals_leave_the_queue_alone(server, client) -> None:
    server.enqueue_text("para después")
    await refused(client, 404, model="llama-3.3-70b-versatile")
    assert (await chat(client)).choices[0].message.content == "para después"
    assert len(server.requests) == 2


# --- auth ---------------------------------------------------------------------------------------


async def test_missing_bearer_is_401_on_both_endpoints(server) -> None:
    async with aiohttp.ClientSession() as session:
        for method, path in (("POST", "chat/completions"), ("GET", "models")):
            async with session.request(method, f"{server.base_url}/openai/v1/{path}",
                                       json={"model": GPT, "messages": USER}) as response:
                assert response.status == 401
                assert await response.json() == {"error": {
                    "message": "Invalid API Key", "type": "invalid_request_error",
                    "code": "invalid_api_key"}}
    assert server.requests == []


async def test_valid_keys_are_enforced(clock) -> None:
    fake = await FakeGroqServer(valid_keys={"gsk_good"}, clock=clock).start()
    good = groq.AsyncGroq(api_key="gsk_good", base_url=fake.base_url, max_retries=0)
    bad = groq.AsyncGroq(api_key="gsk_revoked", base_url=fake.base_url, max_retries=0)
    try:
        assert (await chat(good)).choices[0].message.content == "ok"
        with pytest.raises(groq.AuthenticationError) as caught:
            await chat(bad)
        assert caught.value.response.json()["error"]["code"] == "invalid_api_key"
        with pytest.raises(groq.AuthenticationError):
            await bad.models.list()
    finally:
        await good.close()
        await bad.close()
        await fake.stop()


# --- reasoning ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("effort", "tokens"), [("low", 40), ("medium", 120), ("high", 400)])
async def test_reasoning_effort_sets_reasoning_tokens(server, client, effort, tokens) -> None:
    completion = await chat(client, reasoning_effort=effort)
    assert completion.usage.completion_tokens_details.reasoning_tokens == tokens
    assert server.usage_log[-1]["reasoning"] == tokens


async def test_reasoning_effort_table_is_settable(server, client) -> None:
    server.reasoning_tokens_by_effort["low"] = 7
    completion = await chat(client, reasoning_effort="low")
    assert completion.usage.completion_tokens_details.reasoning_tokens == 7


async def test_bad_reasoning_effort_is_refused(server, client) -> None:
    error, _ = await refused(client, 400, reasoning_effort="none")
    assert error["type"] == "invalid_request_error" and "reasoning_effort" in error["message"]


async def test_hidden_reasoning_still_costs_tokens(server, client) -> None:
    for option in ({"include_reasoning": False}, {"reasoning_format": "hidden"}):
        completion = await chat(client, **option)
        assert completion.choices[0].message.reasoning is None
        assert "reasoning" not in completion.choices[0].message.model_dump(exclude_unset=True)
        assert completion.usage.completion_tokens_details.reasoning_tokens == 120


async def test_raw_reasoning_is_refused_with_tools_or_json(server, client) -> None:
    for option in ({"tools": TOOLS}, {"response_format": {"type": "json_object"}}):
        error, _ = await refused(client, 400, reasoning_format="raw", **option)
        assert error["message"] == ("reasoning_format raw is not supported with tool use or "
                                    "JSON mode")
    raw = await chat(client, reasoning_format="raw")
    assert raw.choices[0].message.content.startswith("<think>")


async def test_scripted_reasoning_and_tokens(server, client) -> None:
    server.enqueue_text("42", reasoning="Six times seven.", reasoning_tokens=9)
    completion = await chat(client)
    assert completion.choices[0].message.reasoning == "Six times seven."
    assert completion.usage.completion_tokens == 9 + 1
    server.enqueue_text("cut", finish_reason="content_filter")
    assert (await chat(client)).choices[0].finish_reason == "content_filter"


async def test_reasoning_eats_a_small_budget(server, client) -> None:
    server.enqueue_text("esta respuesta nunca llega")
    completion = await chat(client, max_tokens=100)
    choice = completion.choices[0]
    assert choice.message.content == "" and choice.finish_reason == "length"
    assert completion.usage.completion_tokens == 100
    assert completion.usage.completion_tokens_details.reasoning_tokens == 100


async def test_answer_is_cut_to_what_reasoning_leaves(server, client) -> None:
    server.enqueue_text("x" * 200)
    completion = await chat(client, max_completion_tokens=150)
    choice = completion.choices[0]
    assert choice.message.content == "x" * 120 and choice.finish_reason == "length"
    assert completion.usage.completion_tokens == 150


async def test_tool_call_that_does_not_fit_is_dropped(server, client) -> None:
    server.enqueue_tool_call("bash", {"command": "ls " + "a" * 100})
    completion = await chat(client, max_tokens=130, tools=TOOLS)
    choice = completion.choices[0]
    assert choice.message.tool_calls is None and choice.message.content == ""
    assert choice.finish_reason == "length"
    server.enqueue_tool_call("bash", {"command": "ls"}, call_id="c1")
    fits = (await chat(client, max_tokens=1000, tools=TOOLS)).choices[0]
    assert fits.finish_reason == "tool_calls" and fits.message.tool_calls[0].id == "c1"


# --- request checks -----------------------------------------------------------------------------


def with_call(arguments: str, answer_id: str = "c1", **extra: Any) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [{"role": "user", "content": "lista"},
            {"role": "assistant", "content": None, "tool_calls": [call], **extra},
            {"role": "tool", "tool_call_id": answer_id, "content": "a b"}]


async def test_reasoning_content_in_history_is_refused(server, client) -> None:
    error, _ = await refused(client, 400, messages=with_call('{"command": "ls"}',
                                                             reasoning_content="pensé"))
    assert error == {"message": "'messages.1' : for 'role:assistant' the following must be "
                                "satisfied[('messages.1' : property 'reasoning_content' is "
                                "unsupported)]", "type": "invalid_request_error"}
    accepted = await chat(client, messages=with_call('{"command": "ls"}', reasoning="pensé"))
    assert accepted.choices[0].message.content == "ok"


async def test_bad_tool_arguments_in_history_are_refused(server, client) -> None:
    for arguments in ("{not json", '["a"]', ""):
        error, _ = await refused(client, 400, messages=with_call(arguments))
        assert "messages.1" in error["message"] and error["type"] == "invalid_request_error"


async def test_orphan_tool_result_is_refused(server, client) -> None:
    error, _ = await refused(client, 400, messages=with_call("{}", answer_id="c9"))
    assert "messages.2" in error["message"] and "c9" in error["message"]
    orphan = [{"role": "tool", "tool_call_id": "c1", "content": "x"}, *USER]
    error, _ = await refused(client, 400, messages=orphan)
    assert "messages.0" in error["message"]


async def test_history_validation_can_be_switched_off(server, client) -> None:
    server.validate_history = False
    completion = await chat(client, messages=with_call("{not json", answer_id="c9"))
    assert completion.choices[0].message.content == "ok"


# --- prompt caching -----------------------------------------------------------------------------


SYSTEM = {"role": "system", "content": "Eres Rumi. " + "Reglas largas. " * 300}


async def test_shared_prefix_is_cached_in_blocks(server, client) -> None:
    first = await chat(client, messages=[SYSTEM, {"role": "user", "content": "uno"}], tools=TOOLS)
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    second = await chat(client, messages=[SYSTEM, {"role": "user", "content": "dos"}],
                        tools=TOOLS)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached > 0 and cached % 128 == 0 and cached <= second.usage.prompt_tokens
    assert second.usage.prompt_tokens - cached < 128 + 20
    assert server.usage_log[-1]["cached"] == cached
    assert server.usage_log[-1]["prompt"] == second.usage.prompt_tokens


async def test_tools_sit_between_system_and_messages(server, client) -> None:
    await chat(client, messages=[SYSTEM, *USER], tools=TOOLS)
    other_tools = [{"type": "function", "function": {"name": "ls", "parameters": {}}}]
    changed = await chat(client, messages=[SYSTEM, *USER], tools=other_tools)
    system_only = int(len(json.dumps(SYSTEM, sort_keys=True)) * 0.25) // 128 * 128
    assert changed.usage.prompt_tokens_details.cached_tokens == system_only


async def test_cache_expires_after_two_hours(server, client, clock) -> None:
    messages = [SYSTEM, *USER]
    await chat(client, messages=messages)
    clock.now += 7_199
    assert (await chat(client, messages=messages)).usage.prompt_tokens_details.cached_tokens
    clock.now += 7_201
    again = await chat(client, messages=messages)
    assert again.usage.prompt_tokens_details.cached_tokens == 0


async def test_only_gpt_oss_caches(server, client) -> None:
    for _ in range(2):
        completion = await chat(client, model="fake", messages=[SYSTEM, *USER])
    assert completion.usage.prompt_tokens_details.cached_tokens == 0


async def test_cached_never_exceeds_reported_prompt(server, client) -> None:
    await chat(client, messages=[SYSTEM, *USER])
    server.enqueue_text("hola", prompt_tokens=300)
    completion = await chat(client, messages=[SYSTEM, *USER])
    assert completion.usage.prompt_tokens == 300
    assert completion.usage.prompt_tokens_details.cached_tokens == 256


# --- rate limits ----------------------------------------------------------------------------


def small_prompt(server: FakeGroqServer) -> None:
    """Every prompt counts 1,000 tokens and none is cached, so the arithmetic stays exact."""
    server.prompt_counter = lambda body: 1_000
    server.cache_block_tokens = 10**9


async def test_limits_are_off_by_default(server, client) -> None:
    raw = await client.chat.completions.with_raw_response.create(model=GPT, messages=USER,
                                                                 max_tokens=60_000)
    assert "x-ratelimit-limit-tokens" not in raw.headers
    assert server.limit_counters.accepted == 1


async def test_free_tier_headers(server, client, clock) -> None:
    """Groq's docs: limit-requests per day, limit-tokens per minute, and each reset is the
    time until that bucket is full again (refilled at limit / window)."""
    server.free_tier()
    server.window_seconds = 2.0  # 8,000 tokens refilled over 2 s: 4,000 a second
    small_prompt(server)
    raw = await client.chat.completions.with_raw_response.create(
        model=GPT, messages=USER, max_completion_tokens=2_000)
    headers = raw.headers
    assert headers["x-ratelimit-limit-requests"] == "1000"
    assert headers["x-ratelimit-limit-tokens"] == "8000"
    assert headers["x-ratelimit-remaining-requests"] == "999"
    used = 1_000 + server.usage_log[0]["completion"]  # what was used, not the 2,000 asked
    assert headers["x-ratelimit-remaining-tokens"] == str(8_000 - used)
    assert headers["x-ratelimit-reset-tokens"] == format_duration(used / 4_000)
    assert headers["x-ratelimit-reset-requests"] == "1m26.4s"  # one request: 86,400 s / 1,000
    clock.now += 0.25  # 1,000 tokens drip back
    later = await client.chat.completions.with_raw_response.create(model=GPT, messages=USER,
                                                                   max_tokens=10)
    level = 8_000 - used + 1_000 - (1_000 + server.usage_log[1]["completion"])
    assert later.headers["x-ratelimit-remaining-tokens"] == str(level)
    assert later.headers["x-ratelimit-reset-tokens"] == format_duration((8_000 - level) / 4_000)


async def test_tpm_429_says_when_the_missing_tokens_drip_back(server, client, clock) -> None:
    server.free_tier()
    server.window_seconds = 2.0  # 4,000 tokens a second
    small_prompt(server)
    server.enqueue_text("x" * 40_000)  # an answer that uses its whole budget
    await chat(client, max_tokens=5_000)  # 6,000 used: 2,000 left
    clock.now += 0.25  # 3,000 in the bucket
    error, exc = await refused(client, 429, max_tokens=4_000)  # 5,000 needed: 2,000 missing
    assert isinstance(exc, groq.RateLimitError)
    assert exc.response.headers["retry-after"] == "1"  # 0.5 s, rounded up
    assert error == {"message": f"Rate limit reached for model `{GPT}` in organization "
                                "`org_01fake` service tier `on_demand` on tokens per minute "
                                "(TPM): Limit 8000, Used 5000, Requested 5000. Please try again "
                                f"in 0.5s. {UPGRADE}", "type": "tokens",
                     "code": "rate_limit_exceeded"}
    assert exc.response.headers["x-ratelimit-remaining-tokens"] == "3000"
    assert server.limiter.refusals[-1].scope == "TPM"
    assert server.limiter.refusals[-1].wait == pytest.approx(0.5)
    clock.now += 0.5
    assert (await chat(client, max_tokens=4_000)).choices[0].message.content == "ok"
    counters = server.limit_counters
    assert (counters.accepted, counters.rate_limited, counters.too_large) == (2, 1, 0)


async def test_itpm_and_otpm_rows(server, client, clock) -> None:
    """Groq's docs: some organisations have separate input/output tokens-per-minute limits."""
    server.set_limits(GPT, Limits(itpm=1_500, otpm=600))
    server.window_seconds = 2.0
    small_prompt(server)
    error, _ = await refused(client, 413, max_tokens=700)
    assert "output tokens per minute (OTPM): Limit 600, Requested 700" in error["message"]
    server.enqueue_text("x" * 10_000)
    await chat(client, max_tokens=500)  # 1,000 input and 500 output tokens used
    error, _ = await refused(client, 429, max_tokens=10)
    assert "input tokens per minute (ITPM): Limit 1500, Used 1000, Requested 1000" in \
        error["message"] and "try again in 0.667s" in error["message"]  # 500 at 750/s
    clock.now += 0.67  # input refilled; output: 100 + 201 in the bucket
    error, _ = await refused(client, 429, max_tokens=400)
    assert "output tokens per minute (OTPM)" in error["message"]


async def test_request_too_large_is_413(server, client) -> None:
    server.free_tier()
    small_prompt(server)
    error, exc = await refused(client, 413, max_tokens=8_413)
    assert "retry-after" not in exc.response.headers
    assert error == {"message": f"Request too large for model `{GPT}` in organization "
                                "`org_01fake` service tier `on_demand` on tokens per minute "
                                "(TPM): Limit 8000, Requested 9413, please reduce your message "
                                f"size and try again. {UPGRADE}", "type": "tokens",
                     "code": "rate_limit_exceeded"}
    assert server.limit_counters.too_large == 1


async def test_absent_budget_requests_the_models_maximum(server, client) -> None:
    server.free_tier()
    await refused(client, 413, model="qwen/qwen3.6-27b")  # 8192 + prompt > 8000
    assert (await chat(client, model="qwen/qwen3.6-27b", max_tokens=100)).choices


async def test_rpm_and_refusals_not_counted(server, client, clock) -> None:
    server.set_limits("fake", Limits(rpm=2))
    server.window_seconds = 2.0  # one request back every second
    await chat(client, model="fake")
    clock.now += 0.5
    await chat(client, model="fake")  # 0.5 left
    for _ in range(3):
        error, exc = await refused(client, 429, model="fake")
    assert error["type"] == "requests"
    assert "on requests per minute (RPM): Limit 2, Used 2, Requested 1. Please try again in " \
           "0.5s." in error["message"]
    clock.now += 0.5
    await chat(client, model="fake")  # refilled; refused ones never counted
    assert server.limit_counters.rate_limited == 3


async def test_daily_limits_use_the_day_window(server, client, clock) -> None:
    server.set_limits("fake", Limits(rpd=1))
    server.day_seconds = 10.0
    await chat(client, model="fake")
    clock.now += 2.5
    error, exc = await refused(client, 429, model="fake")
    assert "requests per day (RPD): Limit 1, Used 1, Requested 1. Please try again in 7.5s." \
        in error["message"]
    assert exc.response.headers["retry-after"] == "8"
    assert exc.response.headers["x-ratelimit-reset-requests"] == "7.5s"
    server.set_limits("fake", Limits(tpd=3_000))
    small_prompt(server)
    clock.now += 7.5
    server.enqueue_text("x" * 10_000)  # uses its whole 1,000-token budget
    await chat(client, model="fake", max_tokens=1_000)
    error, _ = await refused(client, 429, model="fake", max_tokens=1_500)
    assert "tokens per day (TPD): Limit 3000, Used 2000, Requested 2500" in error["message"]


async def test_cached_tokens_count_at_admission_but_are_not_charged(server, client) -> None:
    server.set_limits(GPT, Limits(tpm=6_000))
    messages = [SYSTEM, *USER]
    first = await chat(client, messages=messages, max_tokens=100)
    second = await chat(client, messages=messages, max_tokens=100)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached > 0
    used = (first.usage.prompt_tokens + first.usage.completion_tokens
            + second.usage.prompt_tokens - cached + second.usage.completion_tokens)
    left = 6_000 - used
    assert server.limiter.headers(GPT)["x-ratelimit-remaining-tokens"] == str(left)
    # Its uncached part would fit, but admission counts the whole prompt plus the budget.
    budget = left - second.usage.prompt_tokens + 1
    assert second.usage.prompt_tokens - cached + budget <= left
    error, _ = await refused(client, 429, messages=messages, max_tokens=budget)
    assert f"Requested {left + 1}." in error["message"]


def test_durations_read_like_groq() -> None:
    assert [format_duration(s) for s in (0, 0.45, 7.66, 45.2, 179.56, 3723, 432.5)] == [
        "0s", "0.45s", "7.66s", "45.2s", "2m59.56s", "1h2m3s", "7m12.5s"]
    assert format_duration(10.8537, 3) == "10.854s"


# --- context window -------------------------------------------------------------------------


async def test_context_window_of_the_model_and_override(server, client) -> None:
    server.add_model(ModelSpec("tiny", "x", context_window=1_100, max_completion_tokens=512))
    small_prompt(server)
    await chat(client, model="tiny", max_tokens=100)
    error, _ = await refused(client, 400, model="tiny", max_tokens=101)
    assert {"error": error} == CONTEXT_LENGTH_ERROR
    server.context_window = 1_050
    await refused(client, 400, model="fake", max_completion_tokens=51)


# --- fault injection ------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    "Failed to parse tool call arguments as JSON",
    "tool call validation failed: parameters for tool bash did not match schema: errors: "
    "[missing properties: 'command']",
    "tool call validation failed: attempted to call tool 'web_search' which was not in "
    "request.tools",
])
async def test_tool_use_failed(server, client, message) -> None:
    server.enqueue_tool_use_failed('{"name": "bash"', message=message)
    error, _ = await refused(client, 400, tools=TOOLS)
    assert error == {"message": message, "type": "invalid_request_error",
                     "code": "tool_use_failed", "failed_generation": '{"name": "bash"'}
    server.enqueue_tool_use_failed("<function=bash>")
    error, _ = await refused(client, 400, tools=TOOLS)
    assert error["message"].startswith("Failed to call a function. Please adjust your prompt.")


async def test_scripted_rate_limit_and_too_large(server, client) -> None:
    server.enqueue_rate_limit(10.854)
    error, exc = await refused(client, 429)
    assert exc.response.headers["retry-after"] == "11"
    assert error["message"] == (f"Rate limit reached for model `{GPT}` in organization "
                                "`org_01fake` service tier `on_demand` on tokens per minute "
                                "(TPM): Limit 8000, Used 7012, Requested 2456. Please try again "
                                f"in 10.854s. {UPGRADE}")
    server.enqueue_rate_limit(2, scope="RPM", headers={"x-extra": "1"})
    error, exc = await refused(client, 429)
    assert error["type"] == "requests" and "Please try again in 2s." in error["message"]
    assert exc.response.headers["x-extra"] == "1" and "x-request-id" in exc.response.headers
    server.enqueue_rate_limit(432.5, scope="TPD")
    error, _ = await refused(client, 429)
    assert "tokens per day (TPD)" in error["message"] and "7m12.5s" in error["message"]
    server.enqueue_request_too_large()
    error, exc = await refused(client, 413)
    assert "Limit 8000, Requested 9413" in error["message"] and error["type"] == "tokens"
    assert server.limit_counters.rate_limited == 0  # scripted, not the limiter's


@pytest.mark.parametrize(("status", "code", "expected"), [
    (401, None, ("Invalid API Key", "invalid_request_error", "invalid_api_key")),
    (404, None, (f"The model `{GPT}` does not exist or you do not have access to it.",
                 "invalid_request_error", "model_not_found")),
    (400, "model_decommissioned", (None, "invalid_request_error", "model_decommissioned")),
    (498, None, (None, "invalid_request_error", "capacity_exceeded")),
    (500, None, ("Internal Server Error", "internal_server_error", None)),
    (503, None, ("Service Unavailable", "internal_server_error", None)),
])
async def test_enqueue_status_bodies(server, client, status, code, expected) -> None:
    server.enqueue_status(status, code=code)
    error, _ = await refused(client, status)
    message, type_, error_code = expected
    if message is not None:
        assert error["message"] == message
    assert error["type"] == type_ and error.get("code") == error_code
    if status == 498:
        assert error["message"].startswith("Flex tier capacity exceeded. This is a known issue")
    if code == "model_decommissioned":
        assert error["message"].startswith(f"The model `{GPT}` has been decommissioned")


async def test_enqueue_status_overrides_and_other_statuses(server, client) -> None:
    server.enqueue_status(403, message="nope", headers={"x-why": "policy"})
    error, exc = await refused(client, 403)
    assert isinstance(exc, groq.PermissionDeniedError) and error["message"] == "nope"
    assert exc.response.headers["x-why"] == "policy"
    server.enqueue_status(502)
    error, _ = await refused(client, 502)
    assert error["message"] == "Bad Gateway"


async def test_enqueue_error_is_unchanged(server, client) -> None:
    server.enqueue_error(503, "down", headers={"retry-after": "0"})
    error, exc = await refused(client, 503)
    assert error == {"message": "down", "type": "api_error"}
    assert exc.response.headers["retry-after"] == "0"


async def test_responder_still_answers(server, client) -> None:
    server.responder = lambda body: {"role": "assistant", "content": body["model"]}
    assert (await chat(client, model="fake")).choices[0].message.content == "fake"
    server.responder = lambda body: ScriptedReply(status=500, error_body={"error": {
        "message": "boom", "type": "internal_server_error"}})
    await refused(client, 500)
