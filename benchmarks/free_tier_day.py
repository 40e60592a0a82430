"""Benchmark: turns a day on a free Groq account, the fallback models' own quotas included.

Groq's limits are per model (gpt-oss-120b and gpt-oss-20b each have 1,000 requests and 200,000
tokens a day on the free tier), and Rumi answers with `llm.fallback_models` while the
configured model's daily quota is spent. So a day holds, for every model of the chain, as many
turns as its own quota allows. The cost of a turn (requests and counted tokens: uncached
prompt plus completion, as Groq charges them) is measured by `prompt_economy.py`'s scripted
chat; this module only adds up the chain.

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/free_tier_day.py [--effort low]

`turns_a_day(free_tier_day)` takes the `free_tier_day` block prompt_economy prints, so the
figure can be added to that report without running the chat twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rumi.config import LLMSettings  # noqa: E402
from tests.fakes.groq_limits import FREE_TIER, FREE_TIER_ROW  # noqa: E402


def model_chain() -> list[str]:
    """The configured model and its fallbacks, as a default configuration has them."""
    settings = LLMSettings()
    return [settings.model, *settings.fallback_models]


def turns_a_day(free_tier_day: dict[str, Any], models: list[str] | None = None
                ) -> dict[str, Any]:
    """Turns a day per model of the chain and in total, from one turn's measured cost."""
    per_turn_requests = float(free_tier_day["requests_per_turn"])
    per_turn_tokens = float(free_tier_day["counted_tokens_per_turn"])
    per_model: dict[str, int] = {}
    for model in models or model_chain():
        row = FREE_TIER.get(model, FREE_TIER_ROW)
        by_requests = (row.rpd or 0) / per_turn_requests
        by_tokens = (row.tpd or 0) / per_turn_tokens
        per_model[model] = int(min(by_requests, by_tokens))
    return {"per_model": per_model, "turns_a_day_with_fallbacks": sum(per_model.values())}


def main() -> None:
    from prompt_economy import run

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--effort", choices=["low", "medium", "high"], default="low")
    args = parser.parse_args()
    measured = asyncio.run(run(args.effort, None))
    day = measured["chat"]["free_tier_day"]
    print(json.dumps(day, indent=2))


if __name__ == "__main__":
    main()
