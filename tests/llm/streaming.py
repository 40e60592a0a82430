"""Run a client test twice: once as today (whole completions) and once streamed, the way a
chat with someone watching asks (`on_text`). The client is the real one; only the call gains
a sink, so every recovery is checked on both paths."""

from __future__ import annotations

from typing import Any

from rumi.llm.client import LLMClient
from rumi.llm.response import LLMResponse


class StreamingClient(LLMClient):
    """`LLMClient` whose every call streams (the text pieces are kept in `shown`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shown: list[str] = []

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResponse:
        kwargs.setdefault("on_text", self._show)
        return await super().complete(messages, **kwargs)

    async def _show(self, text: str) -> None:
        self.shown.append(text)


