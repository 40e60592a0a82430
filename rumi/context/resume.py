"""A turn cut by a crash, read back from the tape so it continues instead of starting over.

The tape gets every step of a turn durably before the turn goes on: the person's message
(with its channel message id), each assistant message with its tool calls, a `tool_start`
event just before a call runs, and each result. session.json is only saved when the turn
ends, so after a crash the tape is the one record of what already ran. When the same message
is handed back (the channel's at-least-once journal), `recorded_turn` finds its steps, so the
agent loop puts them back in the context and asks the model to go on; a call with a result
never runs again, and one that started without a result is reported as possibly run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rumi.sessions.state import ContextItem

TOOL_START = "tool_start"


@dataclass
class UnfinishedCall:
    """A recorded tool call without a result: `started` means it may have run."""

    call_id: str
    name: str
    started: bool


@dataclass
class RecordedTurn:
    """What the tape holds of one message's turn."""

    user: ContextItem
    steps: list[ContextItem] = field(default_factory=list)   # assistant/tool items after it
    unfinished: list[UnfinishedCall] = field(default_factory=list)

    @property
    def answer(self) -> ContextItem | None:
        """The final answer, when the turn had reached it (an assistant message, no calls)."""
        last = self.steps[-1] if self.steps else None
        if last is not None and last.role == "assistant" and not last.tool_calls:
            return last
        return None


def recorded_turn(records: list[dict[str, Any]], channel_message_id: int
                  ) -> RecordedTurn | None:
    """The turn of the person's message `channel_message_id` as the tape holds it, or None
    when that message never reached the tape (nothing of it ran)."""
    start = _last_user_index(records, channel_message_id)
    if start is None:
        return None
    turn = RecordedTurn(user=_item(records[start]))
    started: set[str] = set()
    for record in records[start + 1:]:
        if record.get("event") == TOOL_START:
            started.add(str(record.get("call_id")))
            continue
        if "event" in record or record.get("kind", "message") != "message":
            continue
        if record.get("role") == "user":
            break   # the next message's turn
        if record.get("role") in ("assistant", "tool") and isinstance(record.get("id"), int):
            turn.steps.append(_item(record))
    turn.unfinished = _unfinished(turn.steps, started)
    return turn


def _last_user_index(records: list[dict[str, Any]], channel_message_id: int) -> int | None:
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if (record.get("role") == "user" and "event" not in record
                and record.get("channel_message_id") == channel_message_id):
            return index
    return None


def _unfinished(steps: list[ContextItem], started: set[str]) -> list[UnfinishedCall]:
    answered = {s.tool_call_id for s in steps if s.role == "tool"}
    out = []
    for step in steps:
        for call in step.tool_calls or []:
            call_id = str(call.get("id"))
            if call_id not in answered:
                name = str((call.get("function") or {}).get("name") or "?")
                out.append(UnfinishedCall(call_id, name, call_id in started))
    return out


def _item(record: dict[str, Any]) -> ContextItem:
    item = ContextItem.from_dict(record)
    if record.get("timestamp"):
        item.created_at = str(record["timestamp"])
    return item
