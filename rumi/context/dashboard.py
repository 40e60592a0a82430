"""Section 2: the metacognition dashboard, regenerated for every prompt.

It is the agent's resource monitor: how full the conversation's room is (memory pressure
P_m, below), what to do about it, and what needs attention (repeatedly failing tools,
oversized sections, pins, an approximate tokenizer, a blocked compaction). Pure formatting:
the engine gathers the numbers.

P_m = conversation / (safe limit − fixed part) × 100, where

- the safe limit is the largest prompt a request may carry: 80 % of the model's window (the
  seed's margin for the answer and for counting error) or, once Groq has told the account's
  tokens-per-minute cap and it is smaller, that cap less the answer's budget (already exact,
  so no second margin; see `ContextEngine.safe_limit`);
- the fixed part is what every request pays before any conversation: identity, sections 3–6,
  headers, tool definitions and the dashboard itself;
- the conversation is sections 7–8: the action log, the workspace and recalled memories —
  the only part the agent's memory calls (and compaction) can shrink.

The seed measured used / (0.8 × window): on a 131k window the fixed part is a rounding error,
but under a free account's 8,000 tokens a minute it fills half the safe limit before the first
word, so the thresholds fired after a handful of short messages and measured nothing the agent
could act on. On the new P_m the thresholds keep their meaning (`optimize_threshold`: start
optimising; `hard_limit`: the system compacts) and still guarantee the request fits: at the
hard limit the prompt is fixed + hard_limit × (safe − fixed) ≤ safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rumi import messages as msg
from rumi.config import ContextSettings
from rumi.context import model_text

SAFE_FRACTION = 0.8

# Line priorities: when the dashboard is over its budget the engine drops the lowest first,
# so an alert (a stopped memory loop, a cancelled compaction) is the last thing to go.
FIXED = 100
ALERT = 90
FAILING_TOOL = 80
SECTION_PROBLEM = 60
PINNED = 50
WARNING = 40
ITEMS = 30
SECTION_TOKENS = 20

@dataclass
class DashboardData:
    used: int  # the whole prompt (calibrated tokens)
    safe_limit: int
    disk_loaded: int
    disk_total: int
    section_tokens: dict[str, int] = field(default_factory=dict)
    items: int = 0
    first_id: int | None = None
    last_id: int | None = None
    pinned: list[int] = field(default_factory=list)
    failing_tools: dict[str, list[int]] = field(default_factory=dict)
    truncated_sections: list[tuple[str, int, int]] = field(default_factory=list)
    over_budget: list[tuple[str, int, int]] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)  # urgent: kept when trimming
    warnings: list[str] = field(default_factory=list)
    optimize_hint: str = ""
    fallback_tokenizer: bool = False
    calibration_factor: float = 1.0
    calibration_samples: int = 0
    conversation: int = 0  # sections 7–8 (calibrated), part of `used`

    @property
    def fixed(self) -> int:
        return max(0, self.used - self.conversation)

    @property
    def room(self) -> int:
        """What the safe limit leaves for the conversation once the fixed part is paid."""
        return conversation_room(self.safe_limit, self.fixed)

    @property
    def pressure(self) -> float:
        return pressure(self.conversation, self.room)


def safe_limit(context_window: int) -> int:
    return int(context_window * SAFE_FRACTION)


def conversation_room(safe: int, fixed: int) -> int:
    return max(0, safe - fixed)


def pressure(conversation: int, room: int) -> float:
    """P_m in percent: the conversation against its room (100 when there is no room)."""
    return conversation / room * 100 if room > 0 else 100.0


def level(p: float, settings: ContextSettings) -> str:
    if p >= settings.hard_limit:
        return "CRÍTICA"
    if p >= settings.optimize_threshold:
        return "ALTA"
    if p >= settings.optimize_threshold * 0.75:
        return "MEDIA"
    return "BAJA"


# The sections the agent can shrink (identity and the dashboard are fixed: /status shows them)
SHRINKABLE = ("user_profile", "project_context", "current_task", "agent_notes", "action_log",
              "workspace", "recalled_memories")


def render(data: DashboardData, settings: ContextSettings) -> str:
    return "\n".join(text for _, text in render_lines(data, settings))


def render_lines(data: DashboardData, settings: ContextSettings) -> list[tuple[int, str]]:
    """(priority, line) in display order, in the chat's language; see the priority constants
    above. Numbers as that language writes them (`msg.format_number`)."""
    t = model_text.for_language()
    n = msg.format_number
    lvl = level(data.pressure, settings)
    hint = data.optimize_hint or t.default_hint
    lines = [(FIXED, text) for text in (
        t.memory_state,
        t.conversation.format(conversation=n(data.conversation), room=n(data.room),
                              pressure=n(data.pressure, decimals=1), used=n(data.used),
                              safe=n(data.safe_limit)),
        t.pressure.format(level=t.levels[lvl], optimize=settings.optimize_threshold,
                          hard=settings.hard_limit),
        t.disk_loaded.format(loaded=data.disk_loaded, total=data.disk_total),
        t.action + t.level_actions[lvl].format(hint=hint),
    )]
    lines.extend((ALERT, f"- ⚠ {a}") for a in data.alerts)
    parts = [f"{t.section_labels[key]} {n(data.section_tokens[key])}"
             for key in SHRINKABLE if data.section_tokens.get(key)]
    if parts:
        lines.append((SECTION_TOKENS, t.section_tokens + " · ".join(parts)))
    if data.items:
        lines.append((ITEMS, t.items.format(count=n(data.items), first=data.first_id,
                                            last=data.last_id)))
    if data.pinned:
        lines.append((PINNED, t.pinned + _ids(data.pinned)))
    for tool, ids in sorted(data.failing_tools.items()):
        lines.append((FAILING_TOOL, t.failing_tool.format(tool=tool, count=len(ids),
                                                          ids=_ids(ids))))
    for name, tokens, limit in data.truncated_sections:
        lines.append((SECTION_PROBLEM, t.truncated.format(name=name, tokens=n(tokens),
                                                          limit=n(limit))))
    for name, tokens, limit in data.over_budget:
        lines.append((SECTION_PROBLEM, t.over_budget.format(name=name, tokens=n(tokens),
                                                            limit=n(limit))))
    if data.fallback_tokenizer:
        lines.append((WARNING, t.fallback_tokenizer))
    lines.extend((WARNING, f"- ⚠ {w}") for w in data.warnings)
    return lines


def _ids(ids: list[int], limit: int = 12) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:limit])
    return shown + (f" (+{len(ids) - limit})" if len(ids) > limit else "")


def actionable(data: DashboardData, settings: ContextSettings) -> tuple[object, ...]:
    """What on the dashboard asks the model to do something: while it stays the same within a
    turn, the engine keeps the turn's dashboard as first drawn (counters such as tokens used
    or the message count change at every step and are left out; `/status` has them live)."""
    return (
        level(data.pressure, settings), tuple(data.alerts), tuple(data.warnings),
        tuple((tool, len(ids)) for tool, ids in sorted(data.failing_tools.items())),
        tuple(data.pinned), tuple(name for name, _, _ in data.truncated_sections),
        tuple(name for name, _, _ in data.over_budget),
        (data.disk_loaded, data.disk_total), data.fallback_tokenizer,
    )
