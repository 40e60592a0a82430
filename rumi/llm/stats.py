"""What the client counts for /status and the logs: calls, retries, waits, tokens by model,
and today's use."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rumi.llm.response import Usage


@dataclass
class LLMStats:
    calls: int = 0
    retries: int = 0
    failures: int = 0
    rate_waits: int = 0
    rate_wait_seconds: float = 0.0
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    last_model: str | None = None
    last_failure: str | None = None
    # for /status: when Groq last answered (wall clock), whether it last refused the key,
    # and today's use (the day in local time; counters restart when it changes)
    last_ok_at: float | None = None
    key_refused: bool = False
    day: str = ""
    answers_today: int = 0
    tokens_today: int = 0

    def answered(self, usage: Usage, now: float | None = None) -> None:
        now = time.time() if now is None else now
        today = time.strftime("%Y-%m-%d", time.localtime(now))
        if today != self.day:
            self.day, self.answers_today, self.tokens_today = today, 0, 0
        self.answers_today += 1
        self.tokens_today += usage.total_tokens
        self.last_ok_at = now
        self.key_refused = False

    @property
    def usage(self) -> Usage:
        total = Usage()
        for usage in self.usage_by_model.values():
            total = total + usage
        return total

    @property
    def cached_share(self) -> float | None:
        usage = self.usage
        return usage.cached_tokens / usage.prompt_tokens if usage.prompt_tokens else None
