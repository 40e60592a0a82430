import pytest

from rumi.agent.llm import LLMClient, LLMUnavailable
from rumi.config import LLMSettings


def client_for(server, **overrides) -> LLMClient:
    settings = LLMSettings(api_key="gsk_test", base_url=server.base_url, retry_base_delay=0.01,
                           **overrides)
    return LLMClient(settings)


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
