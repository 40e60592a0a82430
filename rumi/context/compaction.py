"""The safety net: progressive compaction when the agent did not optimise in time.

Strategy (CTO seed, "progressive"): keep the first `keep_first` and the last `keep_last`
items, summarise the middle with the LLM; if pressure is still over the hard limit, repeat
with a shorter tail. Pinned items and in-flight tool calls are never touched, and whole
call/result groups move together. If the LLM is down, an extractive summary (first lines of
each item, with ids for `recall_original`) still brings pressure down.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from rumi.context.builder import groups
from rumi.context.host import EngineView
from rumi.context.syscalls import replace_with_summary
from rumi.context.tokens import TokenCounter
from rumi.llm.client import LLMClient
from rumi.llm.errors import LLMUnavailable
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)

ITEM_CHARS = 1_500
SUMMARY_MAX_TOKENS = 900
EXTRACT_LINE_CHARS = 160

SUMMARY_PROMPT = (
    "Eres el compactador de memoria de Rumi, un asistente. Resume el fragmento de conversación "
    "que te paso para que el asistente pueda seguir trabajando sin él. Escribe en español, en "
    "viñetas breves. Conserva todo dato concreto: nombres, cifras, fechas, rutas, comandos, "
    "decisiones y su motivo, errores y la conclusión a la que se llegó, y lo que quedó "
    "pendiente. Cita los [#id] de los mensajes clave. Sin preámbulos ni comentarios."
)


@dataclass
class CompactionResult:
    """What one compaction did (or why it did not)."""

    compacted: bool
    removed_ids: list[int] = field(default_factory=list)
    summary_ids: list[int] = field(default_factory=list)
    method: str = ""
    pressure_before: float = 0.0
    pressure_after: float = 0.0
    blocked_reason: str | None = None


def plan_middle(items: list[ContextItem], keep_first: int, keep_last: int) -> list[int]:
    """Indices of the items between the kept head and tail that may be summarised.

    Head and tail are widened to whole groups; pinned groups, groups with calls still
    waiting for results, and the person's newest message stay (every request is shaped
    around that message: the model answers it, the automatic block goes right before it).
    """
    spans = groups(items)
    person = max((k for k, item in enumerate(items) if item.role == "user"), default=-1)
    n = len(items)
    head_end = 0
    for g in spans:
        if g.start < keep_first:
            head_end = g.end
    tail_start = n
    boundary = max(0, n - keep_last)
    for g in spans:
        if g.end > boundary:
            tail_start = g.start
            break
    out: list[int] = []
    for g in spans:
        if g.start < head_end or g.start >= tail_start or g.open:
            continue
        if person in g.indices() or any(items[k].pinned for k in g.indices()):
            continue
        out.extend(g.indices())
    return out


SUMMARY_MIN_INPUT = 500
SUMMARY_OVERHEAD = 32  # message framing around the prompt and the transcript


class Summarizer:
    """Turns a run of items into summary text: LLM first, extractive fallback."""

    def __init__(self, llm: LLMClient | None, tokens: TokenCounter, context_window: int) -> None:
        self.llm = llm
        self.tokens = tokens
        self.input_budget = max(2_000, context_window // 2)

    async def summarize(self, items: list[ContextItem]) -> tuple[str, str]:
        """(summary text, method) where method is "llm" or "extractive"."""
        if self.llm is not None:
            try:
                text = await self._llm_summary(items)
            except LLMUnavailable as exc:
                log.warning("compaction summary: LLM unavailable (%s); extractive fallback", exc)
            else:
                if text.strip():
                    return text.strip(), "llm"
                log.warning("compaction summary: empty LLM reply; extractive fallback")
        return self.extractive(items), "extractive"

    async def _llm_summary(self, items: list[ContextItem]) -> str:
        assert self.llm is not None
        budget = self.input_budget
        room = self.llm.prompt_room(SUMMARY_MAX_TOKENS, background=True)
        if room is not None:  # a free account's per-minute cap is smaller than the window
            budget = max(SUMMARY_MIN_INPUT, min(budget, room - self.tokens.count(SUMMARY_PROMPT)
                                                - SUMMARY_OVERHEAD))
        transcript = self.tokens.truncate(transcript_of(items, ITEM_CHARS), budget)
        response = await self.llm.complete(
            [
                {"role": "system", "content": SUMMARY_PROMPT},
                {"role": "user", "content": transcript},
            ],
            max_tokens=SUMMARY_MAX_TOKENS,
            temperature=0.1,
            background=True,
        )
        return self.tokens.truncate(response.content, SUMMARY_MAX_TOKENS)

    def extractive(self, items: list[ContextItem]) -> str:
        """Deterministic: one line per item, capped, so pressure always drops."""
        lines = [
            "Resumen automático (extractivo: el modelo no estaba disponible). "
            "Usa recall_original con los ids para ver los originales."
        ]
        used = self.tokens.count(lines[0])
        for index, item in enumerate(items):
            line = f"- {_who(item)} #{item.id}: {_first_line(item)}"
            cost = self.tokens.count(line) + 1
            if used + cost > SUMMARY_MAX_TOKENS:
                lines.append(f"- … y {len(items) - index} mensajes más (#{item.id}…#"
                             f"{items[-1].id}).")
                break
            lines.append(line)
            used += cost
        return "\n".join(lines)


def transcript_of(items: list[ContextItem], item_chars: int) -> str:
    parts = []
    for item in items:
        body = item.content or ""
        if item.tool_calls:
            fns = [c.get("function") or {} for c in item.tool_calls]
            calls = ", ".join(f"{fn.get('name')}({fn.get('arguments')})" for fn in fns)
            body = (body + "\n" if body else "") + f"llama a: {calls}"
        if len(body) > item_chars:
            body = body[: item_chars // 2] + " … " + body[-item_chars // 2 :]
        parts.append(f"[#{item.id}] {_who(item)}: {body}")
    return "\n\n".join(parts)


def _who(item: ContextItem) -> str:
    if item.kind == "summary":
        return "resumen"
    if item.role == "tool":
        return f"resultado de {item.name or 'herramienta'}" + (" (error)" if item.is_error else "")
    if item.speaker is not None:
        return item.speaker.label()
    return {"user": "usuario", "assistant": "asistente"}.get(item.role, item.role)


def _first_line(item: ContextItem) -> str:
    text = (item.content or "").strip()
    if not text and item.tool_calls:
        names = [(c.get("function") or {}).get("name") or "?" for c in item.tool_calls]
        text = "llama a " + ", ".join(names)
    text = " ".join(text.split())
    return text[:EXTRACT_LINE_CHARS] + ("…" if len(text) > EXTRACT_LINE_CHARS else "")


class CompactionHost(EngineView, Protocol):
    """The engine as compaction sees it: its summariser and the hooks that run first."""

    summarizer: Summarizer
    before_compaction: list[Callable[[SessionState, list[ContextItem]], Awaitable[None]]]


async def compact(engine: CompactionHost, session: SessionState) -> CompactionResult:
    """Keep the head and tail, summarise the middle; shorten the tail while still too full.

    Every `before_compaction` hook is awaited with the items about to go before anything is
    dropped; if one raises, nothing is compacted and the dashboard says why.
    """
    rt = engine.runtime(session)
    before = engine.pressure(session)
    result = CompactionResult(compacted=False, pressure_before=before)
    keep_last = engine.cfg.keep_last
    while True:
        middle = plan_middle(session.items, engine.cfg.keep_first, keep_last)
        if middle:
            victims = [session.items[k] for k in middle]
            try:
                for hook in engine.before_compaction:
                    await hook(session, list(victims))
            except Exception as exc:
                log.exception("before_compaction hook failed; compaction cancelled")
                reason = f"{type(exc).__name__}: {exc}"[:160]
                rt.notices["compaction"] = (
                    "Compactación automática cancelada (falló el guardado previo de "
                    f"memorias: {reason}). Optimiza tú con summarize_range/prune_messages.")
                result.blocked_reason = reason
                rt.compaction_blocked = True
                break
            text, method = await engine.summarizer.summarize(victims)
            summary = await replace_with_summary(
                engine, session, [v.id for v in victims], text, event_name="compact",
                extra={"method": method, "keep_first": engine.cfg.keep_first,
                       "keep_last": keep_last})
            result.compacted = True
            result.removed_ids.extend(v.id for v in victims)
            result.summary_ids.append(summary.id)
            result.method = method
            if engine.pressure(session) < engine.cfg.hard_limit:
                break
        if keep_last <= 1:
            break
        keep_last = max(1, keep_last // 2)
    result.pressure_after = engine.pressure(session)
    if result.compacted:
        rt.notices["compaction"] = (
            f"Compactación automática hecha: {len(result.removed_ids)} mensajes resumidos "
            f"({result.method}). Los originales siguen en el registro (recall_original).")
    elif result.blocked_reason is None:
        rt.notices["compaction"] = ("Presión crítica y nada más que compactar (todo está "
                                    "fijado o es reciente): poda salidas grandes.")
    return result
