"""Today's Groq use on disk, so `/status`'s "today" is the day's and not the process's.

One small JSON file in the data dir, replaced atomically after each answer; a restart reads it
back, and a file from another day (or one that does not parse) counts as nothing used today.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rumi.fileio import atomic_write_text

log = logging.getLogger(__name__)

FILE_NAME = "groq_usage_today.json"


class DayCounters(Protocol):
    day: str
    answers_today: int
    tokens_today: int


@dataclass(frozen=True)
class DayUsage:
    day: str
    answers: int
    tokens: int


def read_day(path: Path) -> DayUsage | None:
    """The counters kept in `path`, or None when there are none worth trusting."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        usage = DayUsage(str(data["day"]), int(data["answers"]), int(data["tokens"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring %s (%s): today's Groq use starts from 0", path, type(exc).__name__)
        return None
    return usage if usage.answers >= 0 and usage.tokens >= 0 else None


class DayUsageFile:
    """Loads and saves the day's counters; saves run one at a time, off the event loop, so a
    slower older save can never overwrite a newer one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def restore(self, stats: DayCounters) -> None:
        usage = await asyncio.to_thread(read_day, self.path)
        if usage is not None and usage.day >= stats.day:
            stats.day, stats.answers_today, stats.tokens_today = (
                usage.day, usage.answers, usage.tokens)

    async def save(self, stats: DayCounters) -> None:
        text = json.dumps({"day": stats.day, "answers": stats.answers_today,
                           "tokens": stats.tokens_today})
        async with self._lock:
            try:
                await asyncio.to_thread(atomic_write_text, self.path, text)
            except OSError as exc:  # a full disk must not cost the answer
                log.warning("could not save today's Groq use to %s: %s", self.path, exc)
