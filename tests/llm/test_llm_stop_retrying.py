"""Once Rumi stops, a failing model gets one attempt per call: no backoff holds the exit
(issue 20: "after /salir the terminal prints ~10 s more of retry warnings")."""

from __future__ import annotations

import pytest

from rumi.config import LLMSettings
from rumi.llm.client import LLMClient
from rumi.llm.errors import ProviderDown


def client_for(server) -> LLMClient:
    # a backoff long enough that a retry would be noticed as a hang
    return LLMClient(LLMSettings(api_key="gsk_test", base_url=server.base_url,
                                 retry_base_delay=600, max_retries=3))


async def test_no_retry_once_stopping(fake_groq) -> None:
    fake_groq.enqueue_status(503)
    fake_groq.enqueue_text("never asked")
    llm = client_for(fake_groq)
    llm.stop_retrying()
    try:
        with pytest.raises(ProviderDown):
            await llm.complete([{"role": "user", "content": "hola"}])
    finally:
        await llm.close()
    assert len(fake_groq.requests) == 1 and llm.stats.retries == 0


async def test_a_rate_limit_wait_is_not_taken_either(fake_groq) -> None:
    fake_groq.enqueue_rate_limit(5.0)
    fake_groq.enqueue_text("never asked")
    llm = client_for(fake_groq)
    llm.stop_retrying()
    try:
        with pytest.raises(ProviderDown):
            await llm.complete([{"role": "user", "content": "hola"}])
    finally:
        await llm.close()
    assert len(fake_groq.requests) == 1


async def test_before_stopping_the_retry_still_happens(fake_groq) -> None:
    fake_groq.enqueue_status(503)
    fake_groq.enqueue_text("second try")
    llm = LLMClient(LLMSettings(api_key="gsk_test", base_url=fake_groq.base_url,
                                retry_base_delay=0.01, max_retries=3))
    try:
        response = await llm.complete([{"role": "user", "content": "hola"}])
    finally:
        await llm.close()
    assert response.content == "second try" and llm.stats.retries == 1
