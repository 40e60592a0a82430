"""Tool calls as the model sent them, made storable (history a strict server still accepts)
and comparable (the same call, whatever the key order), for the loop's circuit breakers."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rumi.config import AgentSettings
from rumi.llm.tool_names import resolve
from rumi.llm.wire import json_object_text

log = logging.getLogger(__name__)


@dataclass
class Breakers:
    """The counts behind two of the loop's honest stops: the model repeating one call, and
    tools failing one after another."""

    settings: AgentSettings
    calls_seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    consecutive_errors: int = 0

    def repeated(self, name: str, arguments: str) -> bool:
        """Count this call; True once it was made `max_repeated_calls` times this turn."""
        key = (name, canonical(arguments))
        self.calls_seen[key] += 1
        return self.calls_seen[key] >= self.settings.max_repeated_calls

    def failing(self, is_error: bool) -> bool:
        """Count a result; True once `max_consecutive_tool_errors` failed in a row."""
        self.consecutive_errors = self.consecutive_errors + 1 if is_error else 0
        return self.consecutive_errors >= self.settings.max_consecutive_tool_errors


def storable_calls(calls: list[dict[str, Any]], declared: list[str]
                   ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Calls as they may be stored and replayed: arguments that are not a JSON object become
    `{}` (a server that validates history would refuse every later request otherwise);
    the raw text is returned by call id, for the error the model sees. A name gpt-oss leaked
    its format into (`bash<|channel|>commentary`) is stored as the one tool it means, so the
    call runs now and the replayed history names a real tool."""
    stored, bad = [], {}
    for call in calls:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        fixed = json_object_text(raw)
        if fixed != raw and raw.strip() != "":
            bad[call["id"]] = raw
        raw_name = function.get("name") or ""
        name = resolve(raw_name, declared) or raw_name
        if name != raw_name:
            log.info("tool name %r read as %r", raw_name[:80], name)
        stored.append({"id": call["id"], "type": "function",
                       "function": {"name": name, "arguments": fixed}})
    return stored, bad


def bad_arguments_text(raw: str) -> str:
    shown = raw if len(raw) <= 300 else raw[:300] + "…"
    return ("Invalid arguments: not a JSON object, so the tool did not run. Received: "
            f"{shown!r}. Call the tool again with a JSON object that matches its schema.")


def canonical(arguments: str) -> str:
    """Same call = same name and same arguments, whatever the key order or spacing."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return arguments.strip()
