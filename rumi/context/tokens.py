"""Token counting with tiktoken, cached per item and calibrated against the provider.

o200k_base is gpt-oss's own vocabulary for ordinary text (its tokenizer, o200k_harmony, only
adds the format's special tokens), so texts count as the model counts them; the
provider's `usage.prompt_tokens` after each call tells us how far off the whole request is
(message framing, tool definitions rendered the harmony way), and a
per-model correction factor (an exponential moving average of reported/local) makes the
dashboard track the real model. When no encoding can be loaded (offline without a cache) a
chars/4 estimate keeps Rumi running and the dashboard says so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rumi.encoding import ENCODING
from rumi.sessions.state import ContextItem

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Tokens every chat message costs beyond its text (role and separators; OpenAI's formula)."""

REPLY_PRIMING = 3
"""Tokens the API adds once per request to prime the assistant's reply."""

CALIBRATION_ALPHA = 0.5
MIN_FACTOR = 0.5
MAX_FACTOR = 3.0


@dataclass
class Calibration:
    """Reported/local ratio for one model: `factor` multiplies local counts."""

    factor: float = 1.0
    samples: int = 0

    def to_dict(self) -> dict[str, float | int]:
        return {"factor": self.factor, "samples": self.samples}


class TokenCounter:
    """Counts tokens for texts and API messages; holds the per-model calibration."""

    def __init__(self, encoding_name: str = ENCODING) -> None:
        self.encoding_name = encoding_name
        self.fallback_reason: str | None = None
        self._encoding: Any = None
        try:
            import tiktoken

            self._encoding = tiktoken.get_encoding(encoding_name)
        except Exception as exc:  # no cache and no network, unknown name, broken install
            self.fallback_reason = f"{type(exc).__name__}: {exc}"[:200]
            log.warning("tiktoken encoding %s unavailable (%s), estimating tokens as chars/4",
                        encoding_name, type(exc).__name__)
            log.info("tiktoken: %s", self.fallback_reason)
        self._calibration: dict[str, Calibration] = {}

    @property
    def is_fallback(self) -> bool:
        return self._encoding is None

    def count(self, text: str) -> int:
        """Tokens in a plain text (uncalibrated)."""
        if not text:
            return 0
        if self._encoding is None:
            return (len(text) + 3) // 4
        return len(self._encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` (cut on a token boundary)."""
        if max_tokens <= 0:
            return ""
        if self._encoding is None:
            return text[: max_tokens * 4]
        ids = self._encoding.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        return self._encoding.decode(ids[:max_tokens], errors="ignore")

    def count_message(self, message: dict[str, Any]) -> int:
        """Tokens of one API message dict, including its per-message overhead."""
        total = MESSAGE_OVERHEAD + self.count(str(message.get("content") or ""))
        if message.get("tool_calls"):
            total += self.count(json.dumps(message["tool_calls"], ensure_ascii=False))
        if message.get("tool_call_id"):
            total += self.count(str(message["tool_call_id"]))
        if message.get("name"):
            total += 1 + self.count(str(message["name"]))
        return total

    def count_messages(self, messages: Iterable[dict[str, Any]]) -> int:
        return REPLY_PRIMING + sum(self.count_message(m) for m in messages)

    def count_tools(self, specs: list[dict[str, Any]] | None) -> int:
        """Tool definitions also occupy the prompt; counted as their JSON text."""
        if not specs:
            return 0
        return self.count(json.dumps(specs, ensure_ascii=False))

    def item_tokens(self, item: ContextItem, rendered: dict[str, Any]) -> int:
        """Cached per item: content never changes once an item exists."""
        if item.token_count is None:
            item.token_count = self.count_message(rendered)
        return item.token_count

    # --- calibration -------------------------------------------------------------------

    def factor(self, model: str) -> float:
        cal = self._calibration.get(model)
        return cal.factor if cal else 1.0

    def calibration(self, model: str) -> Calibration | None:
        return self._calibration.get(model)

    def seed_calibration(self, model: str, data: dict[str, Any] | None) -> None:
        """Restore a persisted factor unless this process already learnt a fresher one."""
        if not data or model in self._calibration:
            return
        try:
            factor = float(data.get("factor", 1.0))
            samples = int(data.get("samples", 0))
        except (TypeError, ValueError):
            return
        if MIN_FACTOR <= factor <= MAX_FACTOR:
            self._calibration[model] = Calibration(factor, samples)

    def observe(self, model: str, local_tokens: int, reported_tokens: int) -> Calibration:
        """Fold one (local, reported) pair into the model's factor and return it."""
        cal = self._calibration.setdefault(model, Calibration())
        if local_tokens <= 0 or reported_tokens <= 0:
            return cal
        ratio = min(MAX_FACTOR, max(MIN_FACTOR, reported_tokens / local_tokens))
        if cal.samples == 0:
            cal.factor = ratio
        else:
            cal.factor = CALIBRATION_ALPHA * ratio + (1 - CALIBRATION_ALPHA) * cal.factor
        cal.samples += 1
        return cal

    def calibrated(self, model: str, local_tokens: int) -> int:
        return round(local_tokens * self.factor(model))
