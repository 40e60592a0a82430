"""Streamed completions through the real `groq` client and the fake Groq's SSE stream."""

import asyncio

import pytest

from rumi.config import LLMSettings
from rumi.llm.client import LLMClient
from rumi.llm.errors import ProviderDown, StreamBroken, ToolUseFailed
from tests.fakes.groq_catalogue import error_body
from tests.fakes.groq_server import ScriptedReply
from tests.fakes.groq_stream import StreamFault

BASH = [{"type": "function", "function": {"name": "bash", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}}]


def client_for(server, **overrides) -> LLMClient:
    settings = LLMSettings(api_key="gsk_test", base_url=server.base_url, retry_base_delay=0.01,
                           **overrides)
    return LLMClient(settings)


class Seen:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, text: str) -> None:
        self.pieces.append(text)


async def test_text_arrives_in_pieces_and_the_whole_answer_is_assembled(fake_groq) -> None:
    text = "Una respuesta bastante larga que llega en trozos de dieciséis caracteres."
    fake_groq.enqueue_text(text, prompt_tokens=42)
    llm, seen = client_for(fake_groq, model="fake"), Seen()
    reply = await llm.complete([{"role": "user", "content": "hi"}], on_text=seen)
    await llm.close()
    assert fake_groq.requests[0]["stream"] is True
    assert len(seen.pieces) == -(-len(text) // 16)
    assert "".join(seen.pieces) == text == reply.content
    assert reply.finish_reason == "stop"
    assert reply.usage.prompt_tokens == 42   # from the last chunk's x_groq.usage
    assert reply.usage.completion_tokens == len(text) // 4 + 1
    assert fake_groq.streams[0].done and not fake_groq.streams[0].client_closed


async def test_reasoning_is_kept_but_never_shown_and_cached_tokens_counted(fake_groq) -> None:
    fake_groq.enqueue_text("hola", reasoning="thinking about the greeting " * 3)
    llm, seen = client_for(fake_groq), Seen()   # gpt-oss-120b: a reasoning model
    messages = [{"role": "system", "content": "s" * 4_000}, {"role": "user", "content": "hi"}]
    await llm.complete(messages, on_text=seen)
    fake_groq.enqueue_text("otra vez")
    reply = await llm.complete(messages, on_text=seen)
    await llm.close()
    assert reply.reasoning is None or "greeting" not in reply.reasoning
    first_reasoning = fake_groq.usage_log[0]["reasoning"]
    assert first_reasoning > 0
    assert "".join(seen.pieces) == "holaotra vez"   # reasoning never reaches the sink
    assert reply.usage.cached_tokens == fake_groq.usage_log[1]["cached"] > 0
    assert reply.usage.reasoning_tokens == fake_groq.usage_log[1]["reasoning"]
    by_model = llm.stats.usage_by_model["openai/gpt-oss-120b"]
    assert by_model.cached_tokens == reply.usage.cached_tokens


async def test_reasoning_text_is_assembled_from_its_deltas(fake_groq) -> None:
    fake_groq.enqueue_text("hola", reasoning="I should greet back in Spanish.")
    llm = client_for(fake_groq)
    reply = await llm.complete([{"role": "user", "content": "hi"}], on_text=Seen())
    await llm.close()
    assert reply.reasoning == "I should greet back in Spanish."


async def test_tool_calls_are_assembled_from_their_fragments(fake_groq) -> None:
    fake_groq.enqueue_tool_calls([("bash", {"command": "ls -la /workspace/projects"}, "c1"),
                                  ("bash", {"command": "df -h"}, "c2")])
    llm, seen = client_for(fake_groq), Seen()
    reply = await llm.complete([{"role": "user", "content": "x"}], tools=BASH, on_text=seen)
    await llm.close()
    assert seen.pieces == []
    assert [c["id"] for c in reply.tool_calls] == ["c1", "c2"]
    assert reply.tool_calls[0]["function"] == {
        "name": "bash", "arguments": '{"command": "ls -la /workspace/projects"}'}
    assert reply.tool_calls[1]["function"]["arguments"] == '{"command": "df -h"}'
    assert reply.finish_reason == "tool_calls"


async def test_errors_before_the_stream_are_retried_as_today(fake_groq) -> None:
    fake_groq.enqueue_rate_limit(0.05)
    fake_groq.enqueue_status(503)
    fake_groq.enqueue_text("por fin")
    llm, seen = client_for(fake_groq, model="fake"), Seen()
    reply = await llm.complete([{"role": "user", "content": "x"}], on_text=seen)
    await llm.close()
    assert reply.content == "por fin" == "".join(seen.pieces)
    assert llm.stats.retries == 2


async def test_a_stream_cut_before_any_text_is_retried(fake_groq) -> None:
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": "perdido"},
                                         stream_fault=StreamFault(0)))
    fake_groq.enqueue_text("entero")
    llm, seen = client_for(fake_groq, model="fake"), Seen()
    reply = await llm.complete([{"role": "user", "content": "x"}], on_text=seen)
    await llm.close()
    assert reply.content == "entero" == "".join(seen.pieces)
    assert len(fake_groq.requests) == 2


async def test_a_stream_cut_after_text_was_shown_is_never_a_whole_answer(fake_groq) -> None:
    text = "Primera parte de la respuesta, y luego se corta la conexión."
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": text},
                                         stream_fault=StreamFault(2)))
    fake_groq.enqueue_text("no debe llegar")
    llm, seen = client_for(fake_groq, model="fake"), Seen()
    with pytest.raises(StreamBroken) as caught:
        await llm.complete([{"role": "user", "content": "x"}], on_text=seen)
    await llm.close()
    assert caught.value.shown == text[:32] == "".join(seen.pieces)
    assert len(fake_groq.requests) == 1


async def test_an_error_event_mid_stream_after_text_is_broken(fake_groq) -> None:
    body = error_body("Internal server error", "internal_server_error")
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": "a" * 40},
                                         stream_fault=StreamFault(1, body)))
    llm = client_for(fake_groq, model="fake")
    with pytest.raises(StreamBroken) as caught:
        await llm.complete([{"role": "user", "content": "x"}], on_text=Seen())
    await llm.close()
    assert caught.value.shown == "a" * 16


async def test_an_error_event_before_text_is_retried(fake_groq) -> None:
    body = error_body("Service unavailable", "internal_server_error")
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": "x"},
                                         stream_fault=StreamFault(0, body)))
    fake_groq.enqueue_text("bien")
    llm = client_for(fake_groq, model="fake")
    reply = await llm.complete([{"role": "user", "content": "x"}], on_text=Seen())
    await llm.close()
    assert reply.content == "bien"


async def test_tool_use_failed_mid_stream_is_the_same_typed_failure(fake_groq) -> None:
    fake_groq.enqueue_tool_use_failed('<|call|>bash {"command": "ls"}', mid_stream=True)
    llm = client_for(fake_groq)
    with pytest.raises(ToolUseFailed) as caught:
        await llm.complete([{"role": "user", "content": "x"}], tools=BASH, on_text=Seen())
    await llm.close()
    assert caught.value.error is not None
    assert caught.value.error.failed_generation == '<|call|>bash {"command": "ls"}'


async def test_a_connection_that_keeps_breaking_ends_as_provider_down(fake_groq) -> None:
    for _ in range(3):
        fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": "x"},
                                             stream_fault=StreamFault(0)))
    llm = client_for(fake_groq, model="fake", max_retries=2)
    with pytest.raises(ProviderDown):
        await llm.complete([{"role": "user", "content": "x"}], on_text=Seen())
    await llm.close()
    assert len(fake_groq.requests) == 3


async def test_cancelling_mid_stream_closes_the_response(fake_groq) -> None:
    fake_groq.stream_delay = 0.05
    fake_groq.enqueue_text("z" * 16 * 40)
    llm = client_for(fake_groq, model="fake")
    first = asyncio.Event()

    async def sink(text: str) -> None:
        first.set()

    task = asyncio.create_task(llm.complete([{"role": "user", "content": "x"}], on_text=sink))
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = fake_groq.streams[0]
    for _ in range(100):   # the server notices at its next write
        if record.client_closed:
            break
        await asyncio.sleep(0.02)
    await llm.close()
    assert record.client_closed and not record.done
    assert record.chunks < 10
