"""Rendering sections 7–8 as API messages, and the call/result groups that must stay whole.

The Groq/OpenAI API rejects a `tool` message that does not follow the assistant message
carrying its `tool_call_id`, and an assistant `tool_calls` entry without its result. Every
operation that removes items therefore works on *groups* (an assistant message with tool
calls plus its results), and rendering repairs anything a crash may have left half-done.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from rumi.sessions.state import ContextItem

ID_PREFIX = re.compile(r"^\s*(\[#\d+\]\s*)+")


def strip_id_prefix(text: str) -> str:
    """Remove `[#12]` prefixes a model may imitate at the start of its reply."""
    return ID_PREFIX.sub("", text or "", count=1)


class Group(NamedTuple):
    """Items `start..end-1` of the list move together; `open` = calls still lacking results."""

    start: int
    end: int
    open: bool = False

    def indices(self) -> range:
        return range(self.start, self.end)


def call_ids(item: ContextItem) -> list[str]:
    return [str(c.get("id")) for c in item.tool_calls or [] if c.get("id")]


def groups(items: list[ContextItem]) -> list[Group]:
    """Split the list into groups: a tool-calling assistant message with the results that
    follow it; every other item is a group of one."""
    out: list[Group] = []
    i, n = 0, len(items)
    while i < n:
        item = items[i]
        if item.tool_calls and item.role == "assistant":
            wanted = set(call_ids(item))
            j = i + 1
            seen: set[str] = set()
            while j < n and items[j].role == "tool" and items[j].tool_call_id in wanted:
                seen.add(str(items[j].tool_call_id))
                j += 1
            out.append(Group(i, j, bool(wanted - seen)))
            i = j
        else:
            out.append(Group(i, i + 1, False))
            i += 1
    return out


def group_of(items: list[ContextItem], index: int, spans: list[Group] | None = None) -> Group:
    for g in spans or groups(items):
        if g.start <= index < g.end:
            return g
    raise IndexError(index)


def tool_name_for(items: list[ContextItem], tool_call_id: str | None) -> str | None:
    """The function name of the call a tool result answers (results may lack `name`)."""
    if not tool_call_id:
        return None
    for item in reversed(items):
        for call in item.tool_calls or []:
            if call.get("id") == tool_call_id:
                return (call.get("function") or {}).get("name")
    return None


def render_item(item: ContextItem) -> dict[str, Any]:
    """One item as an API message with its `[#id]` label in the content."""
    label = f"[#{item.id}]"
    if item.kind == "summary":
        covered = span_text(item.covers)
        return {"role": "assistant", "content": f"{label} (resumen de {covered}) {item.content}"}
    speaker = item.speaker
    if speaker is not None:   # a group: `[#3] Luis (id 222): …`, so members are told apart
        label = f"{label} {speaker.label()}:"
    content = f"{label} {item.content}" if item.content else label
    if item.role == "tool":
        return {"role": "tool", "tool_call_id": item.tool_call_id or "", "content": content}
    message: dict[str, Any] = {"role": item.role, "content": content}
    if item.role == "assistant" and item.tool_calls:
        message["tool_calls"] = item.tool_calls
    return message


def span_text(ids: list[int]) -> str:
    if not ids:
        return "mensajes anteriores"
    ordered = sorted(ids)
    if len(ordered) == ordered[-1] - ordered[0] + 1:
        return f"#{ordered[0]}–#{ordered[-1]}"
    if len(ordered) <= 6:
        return ", ".join(f"#{i}" for i in ordered)
    return f"#{ordered[0]}–#{ordered[-1]} ({len(ordered)} mensajes)"


def render_items(items: list[ContextItem], cache: dict[int, dict[str, Any]] | None = None,
                 spans: list[Group] | None = None
                 ) -> tuple[list[dict[str, Any]], list[ContextItem]]:
    """API-valid messages for the items (exactly one per item), plus the items themselves.

    Calls without results (a crash mid-tool) are dropped from `tool_calls`; orphan results
    become plain assistant notes, so nothing the model should see is hidden and the API
    never sees an invalid list. `cache` (id -> rendered message) makes repeated builds
    cheap: an item's content never changes once it has an id.
    """
    cache = {} if cache is None else cache
    messages: list[dict[str, Any]] = []
    for g in spans if spans is not None else groups(items):
        head = items[g.start]
        if head.role == "tool":
            name = head.name or "herramienta"
            messages.append({
                "role": "assistant",
                "content": f"[#{head.id}] (resultado de {name}) {head.content}",
            })
            continue
        first = len(messages)
        for k in range(g.start, g.end):
            item = items[k]
            msg = cache.get(item.id)
            if msg is None:
                msg = cache[item.id] = render_item(item)
            messages.append(msg)
        if g.open:
            answered = {items[k].tool_call_id for k in range(g.start + 1, g.end)}
            msg = messages[first].copy()
            kept = [c for c in head.tool_calls or [] if c.get("id") in answered]
            if kept:
                msg["tool_calls"] = kept
            else:
                msg.pop("tool_calls", None)
            messages[first] = msg
    return messages, list(items)


class IncrementalRenderer:
    """Re-renders only what changed since the last build.

    The common case is "items were appended": the messages of the unchanged prefix (up to
    the start of the previous last group, which may have been waiting for results) are
    reused. Any prune/summary/clear changes the prefix and triggers a full render. Callers
    get shallow copies, so nothing they do can corrupt the cache.
    """

    def __init__(self) -> None:
        self.cache: dict[int, dict[str, Any]] = {}
        self._ids: list[int] = []
        self._messages: list[dict[str, Any]] = []
        self._tail_start = 0

    def render(self, items: list[ContextItem]) -> list[dict[str, Any]]:
        ids = [i.id for i in items]
        known = len(self._ids)
        start = self._tail_start if known and ids[:known] == self._ids else 0
        if start == 0 and len(self.cache) > 2 * len(items) + 64:
            live = set(ids)
            self.cache = {k: v for k, v in self.cache.items() if k in live}
        tail = items[start:]
        spans = groups(tail)
        rendered, _ = render_items(tail, self.cache, spans)
        self._messages = self._messages[:start] + rendered
        self._ids = ids
        self._tail_start = start + spans[-1].start if spans else start
        return [m.copy() for m in self._messages]


def validate_messages(messages: list[dict[str, Any]]) -> list[str]:
    """Problems the OpenAI/Groq API would reject; empty when the list is valid."""
    problems: list[str] = []
    pending: set[str] = set()
    last_calls: set[str] = set()
    for index, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"{index}: unknown role {role!r}")
            continue
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not call_id or call_id not in last_calls:
                problems.append(f"{index}: tool message {call_id!r} without a preceding call")
            pending.discard(call_id or "")
            continue
        if pending:
            problems.append(f"{index}: calls {sorted(pending)} have no tool result")
            pending = set()
        last_calls = set()
        if role == "assistant" and msg.get("tool_calls"):
            for call in msg["tool_calls"]:
                fn = call.get("function") or {}
                if not call.get("id") or not fn.get("name"):
                    problems.append(f"{index}: malformed tool call {call!r}")
                    continue
                try:
                    json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    problems.append(f"{index}: arguments of {call['id']} are not JSON")
                last_calls.add(call["id"])
            pending = set(last_calls)
        elif msg.get("content") is None:
            problems.append(f"{index}: {role} message without content")
    if pending:
        problems.append(f"end: calls {sorted(pending)} have no tool result")
    return problems
