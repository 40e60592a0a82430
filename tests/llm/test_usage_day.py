"""`/status`'s "Groq use today" is the day's, not the process's: it survives a restart (the real
`groq` client against the fake server), and a new day starts from zero."""

from __future__ import annotations

import json
import time

from rumi.agent.status import llm_status
from rumi.config import LLMSettings
from rumi.llm.client import LLMClient
from rumi.llm.usage_day import DayUsageFile
from rumi.messages_es import STATUS_USAGE_TODAY

USER = [{"role": "user", "content": "hola"}]


def client_for(server, path) -> LLMClient:
    settings = LLMSettings(api_key="gsk_test", base_url=server.base_url, retry_base_delay=0.01)
    return LLMClient(settings, day_file=DayUsageFile(path))


def usage_line(llm: LLMClient) -> str:
    return next(line for line in llm_status(llm).splitlines()
                if line.startswith(STATUS_USAGE_TODAY.split("{")[0]))


async def test_todays_use_survives_a_restart(fake_groq, tmp_path) -> None:
    path = tmp_path / "data" / "groq_usage_today.json"
    first = client_for(fake_groq, path)
    fake_groq.enqueue_text("uno")
    fake_groq.enqueue_text("dos")
    await first.complete(USER)
    await first.complete(USER)
    tokens = first.stats.tokens_today
    before = usage_line(first)
    await first.close()
    assert tokens > 0 and "respuestas: 2" in before

    second = client_for(fake_groq, path)
    await second.restore_day()
    try:
        assert usage_line(second) == before  # old code: "Uso de Groq hoy: 0 tokens"
        fake_groq.enqueue_text("tres")
        await second.complete(USER)
        assert second.stats.answers_today == 3 and second.stats.tokens_today > tokens
    finally:
        await second.close()
    assert json.loads(path.read_text())["answers"] == 3


async def test_a_new_day_starts_from_zero(fake_groq, tmp_path) -> None:
    path = tmp_path / "groq_usage_today.json"
    path.write_text(json.dumps({"day": "2020-01-01", "answers": 9, "tokens": 9000}))
    llm = client_for(fake_groq, path)
    await llm.restore_day()
    try:
        assert "respuestas: 0" in usage_line(llm)
        fake_groq.enqueue_text("hola")
        await llm.complete(USER)
        assert llm.stats.answers_today == 1
    finally:
        await llm.close()
    saved = json.loads(path.read_text())
    assert saved["day"] == time.strftime("%Y-%m-%d") and saved["answers"] == 1


async def test_a_damaged_file_counts_as_nothing_and_is_replaced(fake_groq, tmp_path) -> None:
    path = tmp_path / "groq_usage_today.json"
    path.write_text("{not json")
    llm = client_for(fake_groq, path)
    await llm.restore_day()
    try:
        assert "respuestas: 0" in usage_line(llm)
        fake_groq.enqueue_text("hola")
        await llm.complete(USER)
    finally:
        await llm.close()
    assert json.loads(path.read_text())["answers"] == 1
