"""`/status`: the live dashboard plus every section's size against its budget."""

from __future__ import annotations

from rumi import messages as msg
from rumi.context import dashboard as dash
from rumi.context.host import EngineView
from rumi.context.sections import SECTIONS
from rumi.sessions.state import SessionState


def render_status(engine: EngineView, session: SessionState) -> str:
    rt = engine.runtime(session)
    used = engine.measure(session)
    data = engine.dashboard_data(session, rt, used)
    lines = [msg.CONTEXT_STATUS_HEADER, _dashboard(data, engine), "",
             msg.CONTEXT_STATUS_SECTIONS]
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
                extra += msg.CONTEXT_SECTION_NOT_LOADED
            elif section.truncated:
                extra += msg.CONTEXT_SECTION_TRUNCATED.format(tokens=section.raw_tokens)
        elif spec.name in counts:
            extra = msg.CONTEXT_SECTION_ITEMS.format(count=counts[spec.name])
        title = msg.SECTION_TITLES.get(spec.name, spec.title)
        lines.append(f"{spec.number}. {title}: {size}{extra}")
    recalled = tokens.get("recalled_memories", 0)
    budget = budgets.get("recalled_memories", 0)
    lines.append(msg.CONTEXT_RECALLED.format(tokens=recalled, budget=budget))
    cal = engine.tokens.calibration(engine.model)
    if cal and cal.samples:
        lines.append(msg.CONTEXT_CALIBRATION.format(model=engine.model, factor=cal.factor,
                                                    samples=cal.samples))
    else:
        lines.append(msg.CONTEXT_CALIBRATION_NONE.format(model=engine.model))
    if rt.last_reported:
        lines.append(msg.CONTEXT_LAST_PROMPT.format(tokens=rt.last_reported))
    if engine.tokens.is_fallback:
        lines.append(msg.CONTEXT_TOKENIZER_FALLBACK)
    lines.append(msg.CONTEXT_TAPE)
    return "\n".join(lines)


def _dashboard(data: dash.DashboardData, engine: EngineView) -> str:
    """The dashboard as the model reads it (its instructions are Spanish); in another
    language the same numbers, in the person's words (the model's free-text alerts counted)."""
    if msg.current_language() == "es":
        return dash.render(data, engine.cfg)
    p = data.pressure
    lines = [msg.CONTEXT_PRESSURE.format(
        used=data.used, safe=data.safe_limit, pressure=p,
        level=msg.CONTEXT_LEVELS.get(dash.level(p, engine.cfg), "?"),
        optimize=engine.cfg.optimize_threshold, hard=engine.cfg.hard_limit)]
    lines.append(msg.CONTEXT_DISK_LOADED.format(loaded=data.disk_loaded, total=data.disk_total))
    if data.items:
        lines.append(msg.CONTEXT_ITEMS.format(count=data.items, first=data.first_id,
                                              last=data.last_id))
    if data.pinned:
        lines.append(msg.CONTEXT_PINNED.format(ids=", ".join(f"#{i}" for i in data.pinned)))
    for tool, ids in sorted(data.failing_tools.items()):
        lines.append(msg.CONTEXT_FAILING_TOOL.format(tool=tool, count=len(ids)))
    notes = len(data.alerts) + len(data.warnings)
    if notes:
        lines.append(msg.CONTEXT_MODEL_NOTES.format(count=notes))
    return "\n".join(lines)
