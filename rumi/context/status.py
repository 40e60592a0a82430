"""`/status`: the live dashboard plus every section's size against its budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rumi.context import dashboard as dash
from rumi.context.sections import SECTIONS
from rumi.sessions.state import SessionState

if TYPE_CHECKING:
    from rumi.context.engine import ContextEngine


def render_status(engine: ContextEngine, session: SessionState) -> str:
    rt = engine.runtime(session)
    used = engine.measure(session)
    data = engine.dashboard_data(session, rt, used)
    lines = ["Contexto (memoria de trabajo SMMA):", dash.render(data, engine.cfg), "",
             "Secciones:"]
    budgets = engine.cfg.section_budgets
    tokens = dict(rt.section_tokens)  # live values below, even before the first build
    counts = {"action_log": 0, "workspace": 0}
    tokens["action_log"] = tokens["workspace"] = 0
    for item in session.items:
        where = "workspace" if item.role == "tool" else "action_log"
        counts[where] += 1
        tokens[where] += item.token_count or 0
    for name, section in rt.files.sections.items():
        tokens[name] = section.tokens
    for spec in SECTIONS:
        used_tokens = tokens.get(spec.name, 0)
        budget = budgets.get(spec.name)
        size = f"{used_tokens:,} / {budget:,} tokens" if budget else f"{used_tokens:,} tokens"
        extra = ""
        if spec.file_name:
            section = rt.files.sections[spec.name]
            extra = f" · .smma/{spec.file_name}"
            if not section.loaded:
                extra += " (no cargada)"
            elif section.truncated:
                extra += f" (truncada: {section.raw_tokens:,} tokens en disco)"
        elif spec.name in counts:
            extra = f" · {counts[spec.name]} elementos"
        lines.append(f"{spec.number}. {spec.title}: {size}{extra}")
    recalled = tokens.get("recalled_memories", 0)
    budget = budgets.get("recalled_memories", 0)
    lines.append(f"   Memorias recuperadas: {recalled:,} / {budget:,} tokens")
    cal = engine.tokens.calibration(engine.model)
    if cal and cal.samples:
        lines.append(f"Calibración ({engine.model}): ×{cal.factor:.3f} con {cal.samples} "
                     "muestras del proveedor")
    else:
        lines.append(f"Calibración ({engine.model}): sin datos todavía (×1.000)")
    if rt.last_reported:
        lines.append(f"Último prompt según el proveedor: {rt.last_reported:,} tokens")
    if engine.tokens.is_fallback:
        lines.append("Tokenizador: estimación chars/4 (tiktoken no disponible)")
    lines.append("Registro inmutable: .smma/session_log.jsonl")
    return "\n".join(lines)
