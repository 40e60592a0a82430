"""Extraction: JSON mode, third-person memories, transient states dropped, one retry."""

from __future__ import annotations

import json

import pytest

from rumi.llm.client import LLMClient
from rumi.memory.learning.extraction import (
    ExtractionFailed,
    Extractor,
    parse_payload,
    render_transcript,
    split_windows,
)
from rumi.memory.store.models import MemorySource, MemoryType
from rumi.sessions.state import ContextItem

GOOD = {
    "memories": [
        {"type": "fact", "content": "Trabaja en Google", "key": "Lugar de trabajo",
         "importance": 0.8, "confidence": 0.9},
        {"type": "preference", "content": "Prefiere respuestas cortas", "importance": 0.6},
        {"type": "fact", "content": "Está cansado", "transient": True},
        {"type": "nonsense-type", "content": "ignored"},
    ],
    "events": ["Habló de su nuevo trabajo"],
}


@pytest.fixture
async def llm(fake_groq, make_settings):
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             'max_retries = 0\n')
    client = LLMClient(settings.llm)
    yield client
    await client.close()


def convo() -> list[ContextItem]:
    return [
        ContextItem(id=1, role="user", content="Hoy empecé a trabajar en Google, estoy cansado"),
        ContextItem(id=2, role="assistant", content="¡Enhorabuena!"),
        ContextItem(id=3, role="tool", content="salida de herramienta", tool_call_id="c1"),
    ]


async def test_extracts_typed_memories_and_events_in_json_mode(llm, fake_groq):
    fake_groq.enqueue_text(json.dumps(GOOD))
    result = await Extractor(llm).extract(convo())
    request = fake_groq.requests[0]
    assert request["response_format"] == {"type": "json_object"}
    prompt = request["messages"][1]["content"]
    assert "[#1] user: Hoy empecé" in prompt and "salida de herramienta" not in prompt
    assert "THIRD PERSON" in request["messages"][0]["content"]
    assert [(m.type, m.content, m.key) for m in result.memories] == [
        (MemoryType.FACT, "Trabaja en Google", "lugar_de_trabajo"),
        (MemoryType.PREFERENCE, "Prefiere respuestas cortas", None),
    ]
    assert all(m.source is MemorySource.AUTO for m in result.memories)
    assert result.memories[0].importance == 0.8
    assert result.events == ["Habló de su nuevo trabajo"]
    assert (result.first_id, result.last_id) == (1, 3)


async def test_invalid_json_is_retried_once_with_the_error(llm, fake_groq):
    fake_groq.enqueue_text("Claro, aquí tienes: {memories: ...")
    fake_groq.enqueue_text(json.dumps({"memories": [], "events": ["Algo pasó"]}))
    result = await Extractor(llm).extract(convo())
    assert result.events == ["Algo pasó"]
    assert len(fake_groq.requests) == 2
    assert "not valid JSON" in fake_groq.requests[1]["messages"][-1]["content"]


async def test_invalid_json_twice_fails_so_the_caller_keeps_the_range(llm, fake_groq):
    fake_groq.enqueue_text("nope")
    fake_groq.enqueue_text("[1, 2")
    with pytest.raises(ExtractionFailed, match="invalid JSON twice"):
        await Extractor(llm).extract(convo())


async def test_unavailable_model_is_an_extraction_failure(llm, fake_groq):
    fake_groq.enqueue_error(500)
    with pytest.raises(ExtractionFailed, match="unavailable"):
        await Extractor(llm).extract(convo())


async def test_nothing_to_extract_makes_no_call(llm, fake_groq):
    result = await Extractor(llm).extract([ContextItem(id=1, role="tool", content="x")])
    assert result.empty and fake_groq.requests == []


def test_parse_payload_rejects_wrong_shapes():
    with pytest.raises(ValueError):
        parse_payload('"just a string"')
    with pytest.raises(ValueError):
        parse_payload('{"memories": {"a": 1}}')
    assert parse_payload('{"memories": []}').events == []


def test_long_ranges_split_into_windows_that_cover_every_item():
    """A long range is cut on item boundaries into windows that fit: nothing is dropped."""
    many = [ContextItem(id=i, role="user", content="x" * 1000) for i in range(1, 61)]
    many.insert(5, ContextItem(id=1000, role="tool", content="y" * 5000, tool_call_id="t"))
    windows = split_windows(many, limit=5000)
    assert len(windows) > 1
    assert [i.id for w in windows for i in w] == [i.id for i in many]
    for window in windows:
        text = render_transcript(window, limit=5000)
        assert len(text) <= 5000 and not text.startswith("…")
        assert all(f"[#{i.id}]" in text for i in window if i.role == "user")
    assert split_windows([ContextItem(id=1, role="tool", content="x")]) == []
