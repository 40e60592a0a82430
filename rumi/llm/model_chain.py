"""Which model answers now: the configured one, else the first fallback that Groq still
serves and that has quota left today (limits are per model)."""

from __future__ import annotations

import time

from rumi.config import LLMSettings
from rumi.llm.ratelimit import RateLimiter

GONE_RECHECK_SECONDS = 600.0


class ModelChain:
    def __init__(self, settings: LLMSettings, limiter: RateLimiter) -> None:
        self.settings = settings
        self.limiter = limiter
        self.gone_since: dict[str, float] = {}  # model -> when Groq said it is not served

    def models(self) -> tuple[str, ...]:
        return (self.settings.model, *self.settings.fallback_models)

    def mark_gone(self, model: str) -> None:
        self.gone_since[model] = time.monotonic()

    def is_gone(self, model: str) -> bool:
        """A gone model is asked again after a while: Groq may bring a model back, or a 404
        may have been a hiccup."""
        since = self.gone_since.get(model)
        return since is not None and time.monotonic() - since <= GONE_RECHECK_SECONDS

    def spent(self, model: str) -> bool:
        """Groq's own daily 429 said this model answers nothing yet: while another model has
        quota, it answers; a day's limit is not something to sleep through in a turn."""
        return self.limiter.quota_wait(model) > 0

    def next_model(self) -> str | None:
        """The first configured model that is served and has quota left today."""
        for candidate in self.models():
            if not self.is_gone(candidate) and not self.spent(candidate):
                return candidate
        return None

    def quota_refill(self, said: tuple[str, float] | None = None) -> float | None:
        """Seconds until the first served model has quota again (Groq's figures, `said` the
        one just received); None when some served model is not spent at all."""
        waits = [said[1] if said and said[0] == m else self.limiter.quota_wait(m)
                 for m in self.models() if not self.is_gone(m)]
        if not waits or not all(w > 0 for w in waits):
            return None
        return min(waits)
