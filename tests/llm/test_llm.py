import socket

import pytest

from rumi.config import LLMSettings
from rumi.llm.client import LLMClient
from rumi.llm.errors import LLMUnavailable
from tests.llm.streaming import StreamingClient

CLIENT: list[type[LLMClient]] = [LLMClient]


@pytest.fixture(autouse=True, params=["whole", "stream"])
def _both_paths(request: pytest.FixtureRequest) -> None:
    """Every test here runs on whole completions and on streamed ones."""
    CLIENT[0] = StreamingClient if request.param == "stream" else LLMClient


def client_for(server, **overrides) -> LLMClient:
    settings = LLMSettings(api_key="gsk_test", base_url=server.base_url, retry_base_delay=0.01,
                           **overrides)
    return CLIENT[0](settings)


async def test_text_reply_and_usage(fake_groq) -> None:
    fake_groq.enqueue_text("hola", prompt_tokens=42)
    llm = client_for(fake_groq)
    reply = await llm.complete([{"role": "user", "content": "hi"}])
    await llm.close()
    assert reply.content == "hola"
    assert reply.usage.prompt_tokens == 42
    assert fake_groq.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_tool_call_is_returned_as_api_dict(fake_groq) -> None:
    fake_groq.enqueue_tool_call("bash", {"command": "ls"}, call_id="c1")
    llm = client_for(fake_groq)
    reply = await llm.complete([{"role": "user", "content": "x"}], tools=[{"type": "function",
        "function": {"name": "bash", "parameters": {"type": "object", "properties": {}}}}])
    await llm.close()
    assert reply.tool_calls[0]["id"] == "c1"
    assert reply.tool_calls[0]["function"]["name"] == "bash"
    assert fake_groq.requests[0]["tool_choice"] == "auto"


async def test_429_then_success_is_retried(fake_groq) -> None:
    fake_groq.enqueue_error(429, "slow down")
    fake_groq.enqueue_error(503, "busy")
    fake_groq.enqueue_text("finally")
    llm = client_for(fake_groq)
    reply = await llm.complete([{"role": "user", "content": "x"}])
    await llm.close()
    assert reply.content == "finally"
    assert llm.stats.retries == 2


async def test_outage_raises_unavailable(fake_groq) -> None:
    for _ in range(4):
        fake_groq.enqueue_error(500)
    llm = client_for(fake_groq, max_retries=2)
    with pytest.raises(LLMUnavailable):
        await llm.complete([{"role": "user", "content": "x"}])
    await llm.close()
    assert len(fake_groq.requests) == 3


async def test_client_error_is_not_retried(fake_groq) -> None:
    fake_groq.enqueue_error(400, "bad request")
    llm = client_for(fake_groq)
    with pytest.raises(LLMUnavailable, match="400"):
        await llm.complete([{"role": "user", "content": "x"}])
    await llm.close()
    assert len(fake_groq.requests) == 1


async def test_timeout_then_success_is_retried(fake_groq) -> None:
    """A reply slower than `llm.timeout` is abandoned and the request retried (issue 2)."""
    fake_groq.enqueue_text("lento", delay=6)
    fake_groq.enqueue_text("ok")
    llm = client_for(fake_groq, timeout=2, max_retries=1)  # room for a loaded 2-core CI
    reply = await llm.complete([{"role": "user", "content": "x"}])
    await llm.close()
    assert reply.content == "ok"
    assert llm.stats.retries == 1 and llm.stats.failures == 0
    assert len(fake_groq.requests) == 2


async def test_every_attempt_timing_out_is_unavailable(fake_groq) -> None:
    fake_groq.enqueue_text("lento", delay=3)
    fake_groq.enqueue_text("lento otra vez", delay=3)
    llm = client_for(fake_groq, timeout=0.5, max_retries=1)
    with pytest.raises(LLMUnavailable, match="APITimeoutError"):
        await llm.complete([{"role": "user", "content": "x"}])
    await llm.close()
    assert llm.stats.retries == 1 and llm.stats.failures == 1


async def test_refused_connection_is_retried_then_unavailable() -> None:
    """Nothing listens on the port: a connection error, retried like a timeout."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = CLIENT[0](LLMSettings(api_key="gsk_test", base_url=f"http://127.0.0.1:{port}",
                                retry_base_delay=0.01, max_retries=2))
    with pytest.raises(LLMUnavailable, match="APIConnectionError"):
        await llm.complete([{"role": "user", "content": "x"}])
    await llm.close()
    assert llm.stats.calls == 3 and llm.stats.retries == 2
