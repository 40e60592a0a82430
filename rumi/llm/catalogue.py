"""What Rumi knows of Groq's models: which reason (and so need room to think), and which to
suggest when a configured one is gone.

Groq retires models on short notice (the Llama models Rumi used to default to were
decommissioned on 2026-08-16) and serves its current list at `GET /openai/v1/models`. Rumi
never assumes a model exists; this table only names the replacement Groq recommends for the
models it retired, so the person is told what to write in `llm.model`.
"""

from __future__ import annotations

from collections.abc import Collection

DEFAULT_MODEL = "openai/gpt-oss-120b"
SMALL_MODEL = "openai/gpt-oss-20b"
# Reasoning tokens come out of the answer's budget: a background call that asks for a short
# JSON answer gets this much more room to think first.
REASONING_ALLOWANCE = {"low": 512, "medium": 1_536, "high": 4_096}
REASONING_PREFIXES = ("openai/gpt-oss",)


def is_reasoning_model(model: str) -> bool:
    return model.startswith(REASONING_PREFIXES)

RETIRED_REPLACEMENTS: dict[str, str] = {
    "llama-3.3-70b-versatile": DEFAULT_MODEL,
    "llama-3.1-8b-instant": SMALL_MODEL,
    "meta-llama/llama-4-scout-17b-16e-instruct": DEFAULT_MODEL,
    "meta-llama/llama-4-maverick-17b-128e-instruct": DEFAULT_MODEL,
    "llama3-70b-8192": DEFAULT_MODEL,
    "llama3-8b-8192": SMALL_MODEL,
    "mixtral-8x7b-32768": DEFAULT_MODEL,
    "gemma2-9b-it": SMALL_MODEL,
}

NOT_FOR_CHAT = ("whisper", "tts", "guard", "prompt-guard", "safeguard", "orpheus")


def is_chat_model(model: str) -> bool:
    return not any(part in model for part in NOT_FOR_CHAT)


def replacement_for(model: str, served: Collection[str]) -> str | None:
    """The model to use instead of `model`, among those Groq serves now (None: none fits)."""
    for candidate in (RETIRED_REPLACEMENTS.get(model), DEFAULT_MODEL, SMALL_MODEL):
        if candidate and candidate in served:
            return candidate
    chat = sorted(m for m in served if is_chat_model(m))
    return chat[0] if chat else None
