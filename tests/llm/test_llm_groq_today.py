"""The real `groq` client in LLMClient against a fake that fails like Groq in November 2026:
retired models, reasoning fields, free-tier limits with their headers and error bodies."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from rumi.agent.status import llm_detail, llm_status
from rumi.config import LLMSettings
from rumi.llm.client import LLMClient
from rumi.llm.errors import (
    AuthFailed,
    ModelGone,
    ProviderDown,
    RateLimited,
    RequestTooLarge,
    ToolUseFailed,
)
from tests.fakes.groq_limits import Limits
from tests.llm.streaming import StreamingClient

CLIENT: list[type[LLMClient]] = [LLMClient]


@pytest.fixture(autouse=True, params=["whole", "stream"])
def _both_paths(request: pytest.FixtureRequest) -> None:
    """Every test here runs on whole completions and on streamed ones."""
    CLIENT[0] = StreamingClient if request.param == "stream" else LLMClient

USER = [{"role": "user", "content": "hola"}]


def client_for(server, **overrides) -> LLMClient:
    values = {"api_key": "gsk_test", "base_url": server.base_url, "retry_base_delay": 0.01}
    values.update(overrides)
    return CLIENT[0](LLMSettings(**values))


@pytest.fixture
async def llm(fake_groq):
    client = client_for(fake_groq)
    yield client
    await client.close()


async def test_default_model_is_a_served_reasoning_model(fake_groq, llm) -> None:
    fake_groq.enqueue_text("hola", reasoning="The user greets; answer briefly.")
    reply = await llm.complete(USER)
    body = fake_groq.requests[0]
    assert body["model"] == "openai/gpt-oss-120b" and body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] == 1024
    assert reply.content == "hola" and reply.model == "openai/gpt-oss-120b"
    assert reply.reasoning == "The user greets; answer briefly."
    assert "reasoning" not in reply.message  # never part of what gets stored
    assert reply.usage.reasoning_tokens == 40
    assert llm.stats.last_model == "openai/gpt-oss-120b"


async def test_reasoning_content_is_never_sent(fake_groq, llm) -> None:
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning_content": "old thoughts"},
        {"role": "user", "content": "c"},
    ]
    fake_groq.enqueue_text("ok")
    reply = await llm.complete(history)
    assert reply.content == "ok"  # Groq would have answered 400 to reasoning_content
    assert all("reasoning_content" not in m for m in fake_groq.requests[0]["messages"])


async def test_arguments_that_are_not_json_are_sent_as_an_empty_object(fake_groq, llm) -> None:
    history = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "bash", "arguments": "ls -la"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "error"},
    ]
    fake_groq.enqueue_text("ok")
    reply = await llm.complete(history)
    assert reply.content == "ok"  # the fake validates history like Groq: 400 otherwise
    sent = fake_groq.requests[0]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {}


async def test_a_retired_model_is_replaced_by_the_first_served_fallback(fake_groq) -> None:
    llm = client_for(fake_groq, model="llama-3.3-70b-versatile",
                     fallback_models=["llama-3.1-8b-instant", "openai/gpt-oss-20b"])
    try:
        fake_groq.default_text = "respondo"
        first = await llm.complete(USER)
        second = await llm.complete(USER)
    finally:
        await llm.close()
    assert first.content == second.content == "respondo"
    assert first.model == "openai/gpt-oss-20b"
    assert [r["model"] for r in fake_groq.requests] == [
        "llama-3.3-70b-versatile", "llama-3.1-8b-instant", "openai/gpt-oss-20b",
        "openai/gpt-oss-20b"]  # the gone ones are not asked again
    assert llm.switch is not None and llm.switch.configured == "llama-3.3-70b-versatile"


async def test_no_served_model_fails_at_once_naming_them(fake_groq) -> None:
    llm = client_for(fake_groq, model="llama-3.3-70b-versatile", fallback_models=["gemma2-9b-it"])
    try:
        with pytest.raises(ModelGone) as caught:
            await llm.complete(USER)
    finally:
        await llm.close()
    assert caught.value.models == ["llama-3.3-70b-versatile", "gemma2-9b-it"]
    assert len(fake_groq.requests) == 2  # one 404, one 400 decommissioned; no retries


async def test_a_refused_key_is_not_retried(fake_groq) -> None:
    fake_groq.valid_keys = {"gsk_good"}
    llm = client_for(fake_groq, api_key="gsk_revoked")
    try:
        with pytest.raises(AuthFailed):
            await llm.complete(USER)
    finally:
        await llm.close()
    assert llm.stats.calls == 1


async def test_a_short_retry_after_is_waited(fake_groq, llm) -> None:
    fake_groq.enqueue_rate_limit(0.3, scope="TPM", limit=8000, used=7900, requested=500)
    fake_groq.enqueue_text("ya")
    started = time.monotonic()
    reply = await llm.complete(USER)
    assert reply.content == "ya" and time.monotonic() - started >= 0.3
    assert llm.stats.rate_waits == 1


async def test_two_429s_in_a_row_are_waited_out(fake_groq, llm) -> None:
    """0.7.0 slept once and handed the second 429 (`retry-after: 0`) to the person."""
    fake_groq.enqueue_rate_limit(0, scope="TPM", limit=8000, used=8000, requested=500)
    fake_groq.enqueue_rate_limit(0, scope="TPM", limit=8000, used=8000, requested=500)
    fake_groq.enqueue_text("ya")
    reply = await llm.complete(USER)
    assert reply.content == "ya"
    assert llm.stats.rate_waits == 2 and llm.stats.failures == 0
    assert len(fake_groq.requests) == 3


async def test_429s_past_the_wait_budget_end_in_words_that_agree(fake_groq) -> None:
    from rumi import messages as msg
    from rumi.agent.recovery import failure_reply

    llm = client_for(fake_groq, max_rate_wait=2.5, retry_base_delay=0.2)
    for _ in range(10):
        fake_groq.enqueue_rate_limit(0, scope="TPM", limit=8000, used=8000, requested=500)
    try:
        with pytest.raises(RateLimited) as caught:
            await llm.complete(USER)
    finally:
        await llm.close()
    assert caught.value.again and not caught.value.daily
    assert 0 < caught.value.waited <= 2.5   # never past the budget
    assert 2 < len(fake_groq.requests) < 10   # backed off, not hammered
    _, text = failure_reply(caught.value)
    assert text.startswith("⏳") and "razonable" not in text
    assert msg.format_wait(caught.value.waited) in text


async def test_a_daily_limit_without_a_fallback_is_answered_at_once_with_the_wait(
        fake_groq) -> None:
    llm = client_for(fake_groq, fallback_models=[])
    fake_groq.enqueue_rate_limit(3600, scope="RPD", limit=1000, used=1000, requested=1)
    started = time.monotonic()
    try:
        with pytest.raises(RateLimited) as caught:
            await llm.complete(USER)
        assert time.monotonic() - started < 2
        assert caught.value.daily and caught.value.retry_after == 3600
        assert len(fake_groq.requests) == 1
        with pytest.raises(RateLimited):  # Groq's own figure: no second request for a day
            await llm.complete(USER)
        assert len(fake_groq.requests) == 1
    finally:
        await llm.close()


async def test_a_spent_daily_quota_is_answered_by_the_fallback_until_groqs_time(
        fake_groq) -> None:
    llm = client_for(fake_groq, max_rate_wait=0.2)
    fake_groq.enqueue_rate_limit(0.8, scope="TPD", limit=200_000, used=199_900,
                                 requested=1_100)
    try:
        first = await llm.complete(USER)
        assert first.model == "openai/gpt-oss-20b"
        assert first.quota_fallback is not None
        assert first.quota_fallback.configured == "openai/gpt-oss-120b"
        assert 0 < first.quota_fallback.seconds <= 1.0  # retry-after: whole seconds
        second = await llm.complete(USER)  # 120b is not asked again before Groq's time
        assert second.model == "openai/gpt-oss-20b"
        assert [r["model"] for r in fake_groq.requests] == [
            "openai/gpt-oss-120b", "openai/gpt-oss-20b", "openai/gpt-oss-20b"]
        await asyncio.sleep(1.0)
        third = await llm.complete(USER)  # refilled: the configured model answers again
        assert third.model == "openai/gpt-oss-120b" and third.quota_fallback is None
    finally:
        await llm.close()


async def test_a_long_minute_wait_is_not_slept(fake_groq) -> None:
    llm = client_for(fake_groq, max_rate_wait=5)
    try:
        fake_groq.enqueue_rate_limit(45, scope="TPM", limit=8000, used=8000, requested=3000)
        with pytest.raises(RateLimited) as caught:
            await llm.complete(USER)
    finally:
        await llm.close()
    assert not caught.value.daily and caught.value.retry_after == 45


async def test_413_teaches_the_cap_and_the_retry_fits(fake_groq, llm) -> None:
    fake_groq.set_limits("openai/gpt-oss-120b", Limits(rpm=30, rpd=1000, tpm=1000, tpd=200000))
    reply = await llm.complete(USER)  # 1,024 + the prompt: over 1,000 tokens a minute
    assert reply.content == "ok"
    assert fake_groq.limit_counters.too_large == 1
    assert [r["max_completion_tokens"] for r in fake_groq.requests][0] == 1024
    assert fake_groq.requests[-1]["max_completion_tokens"] < 1000


async def test_a_prompt_over_the_cap_asks_for_compaction(fake_groq, llm) -> None:
    fake_groq.free_tier()
    await llm.complete(USER)  # learns 8,000 tokens/min from the headers
    with pytest.raises(RequestTooLarge):
        await llm.complete([{"role": "user", "content": "palabra " * 12_000}])
    assert len(fake_groq.requests) == 1  # refused before sending


async def test_free_tier_pacing_sends_without_429s(fake_groq) -> None:
    fake_groq.free_tier()
    fake_groq.window_seconds = 1.5
    llm = client_for(fake_groq, rate_window_seconds=1.5, max_output_tokens=2_500)
    prompt = [{"role": "user", "content": "dato " * 2_000}]  # ~2,000 tokens + 2,500 asked
    try:
        for _ in range(4):
            assert (await llm.complete(prompt)).content == "ok"
    finally:
        await llm.close()
    assert fake_groq.limit_counters.rate_limited == 0
    assert llm.stats.rate_waits >= 1


@pytest.mark.parametrize("status", [498, 500, 502, 503])
async def test_provider_down_after_retries(fake_groq, status: int) -> None:
    llm = client_for(fake_groq, max_retries=1)
    try:
        for _ in range(2):
            fake_groq.enqueue_status(status)
        with pytest.raises(ProviderDown):
            await llm.complete(USER)
    finally:
        await llm.close()
    assert len(fake_groq.requests) == 2


async def test_tool_use_failed_carries_the_failed_generation(fake_groq, llm) -> None:
    fake_groq.enqueue_tool_use_failed('<function=bash>{"command": "ls"}</function>')
    with pytest.raises(ToolUseFailed) as caught:
        await llm.complete(USER)
    assert caught.value.error is not None
    assert caught.value.error.failed_generation == '<function=bash>{"command": "ls"}</function>'


async def test_background_calls_think_little_and_get_room_to_think(fake_groq, llm) -> None:
    fake_groq.enqueue_text('{"facts": []}')
    await llm.complete(USER, json_mode=True, max_tokens=24, background=True)
    body = fake_groq.requests[0]
    assert body["include_reasoning"] is False and body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] == 24 + 512


async def test_cached_tokens_are_counted(fake_groq, llm) -> None:
    long_system = [{"role": "system", "content": "Eres Rumi. " * 400}]
    for text in ("uno", "dos", "tres"):
        await llm.complete(long_system + [{"role": "user", "content": text}])
    usage = llm.stats.usage
    assert usage.cached_tokens > 0 and llm.stats.cached_share is not None
    assert llm.stats.cached_share > 0.5


async def test_status_tells_the_model_the_cache_and_the_limits(fake_groq, llm) -> None:
    assert "aún no ha respondido" in llm_status(llm)
    fake_groq.free_tier()
    long_system = [{"role": "system", "content": "Eres Rumi. " * 400}]
    for text in ("uno", "dos"):
        await llm.complete(long_system + [{"role": "user", "content": text}])
    status = llm_status(llm)
    assert "Modelo: openai/gpt-oss-120b (el que respondió por última vez)" in status
    assert "Clave de Groq: funciona" in status and "respuestas: 2" in status
    assert "de 8.000 tokens este minuto y 998 de 1.000 peticiones hoy" in status
    detail = llm_detail(llm)   # the cache is for /status detalle
    assert "Caché de prompt de Groq: " in detail and "razonamiento: 80 tokens" in detail
    assert "Caché de prompt" not in status
