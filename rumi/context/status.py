"""`/status`: the live dashboard plus every section's size against its budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rumi import messages as msg
from rumi.context import dashboard as dash
from rumi.context.host import EngineView
from rumi.context.sections import SECTIONS
from rumi.sessions.state import SessionState


def cap_room_line(engine: EngineView, session: SessionState) -> str | None:
    """`/status`'s one line on what the account's per-minute cap does to the working memory
    (the conversation's room under it, beside the model's window); None while Groq has not
    told the cap, or when the window, not the cap, is what limits the prompt."""
    tpm = engine.binding_cap()
    if tpm is None:
        return None
    used, conversation = engine.measure_parts(session)
    room = dash.conversation_room(engine.safe_limit, used - conversation)
    return msg.CONTEXT_CAP_ROOM.format(
        tpm=_number(tpm), room=_number(room),
        window=round(engine.settings.llm.context_window / 1000))


def cap_room_provider(engine: EngineView) -> Callable[[str, SessionState],
                                                         Awaitable[str | None]]:
    """`cap_room_line` as a `/status` provider (after the account's limits line)."""
    async def provider(chat_id: str, session: SessionState) -> str | None:
        return cap_room_line(engine, session)

    return provider


def _number(value: int) -> str:
    return msg.format_number(value)


def render_status(engine: EngineView, session: SessionState) -> str:
    rt = engine.runtime(session)
    used, conversation = engine.measure_parts(session)
    data = engine.dashboard_data(session, rt, used, conversation=conversation)
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
        size = (f"{_number(used_tokens)} / {_number(budget)} tokens" if budget
                else msg.count_of(used_tokens, "TOKENS"))
        extra = ""
        if spec.file_name:
            section = rt.files.sections[spec.name]
            extra = f" · .smma/{spec.file_name}"
            if not section.loaded:
                extra += msg.CONTEXT_SECTION_NOT_LOADED
            elif section.truncated:
                extra += msg.CONTEXT_SECTION_TRUNCATED.format(
                    tokens=_number(section.raw_tokens))
        elif spec.name in counts:
            extra = msg.CONTEXT_SECTION_ITEMS.format(count=msg.count_of(counts[spec.name], "ITEMS"))
        title = msg.SECTION_TITLES.get(spec.name, spec.title)
        lines.append(f"{spec.number}. {title}: {size}{extra}")
    recalled = tokens.get("recalled_memories", 0)
    budget = budgets.get("recalled_memories", 0)
    lines.append(msg.CONTEXT_RECALLED.format(tokens=_number(recalled), budget=_number(budget)))
    cal = engine.tokens.calibration(engine.model)
    if cal and cal.samples:
        lines.append(msg.CONTEXT_CALIBRATION.format(model=engine.model, factor=cal.factor,
                                                    samples=cal.samples))
    else:
        lines.append(msg.CONTEXT_CALIBRATION_NONE.format(model=engine.model))
    if rt.last_reported:
        lines.append(msg.CONTEXT_LAST_PROMPT.format(tokens=_number(rt.last_reported)))
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
        conversation=_number(data.conversation), room=_number(data.room),
        used=_number(data.used), safe=_number(data.safe_limit),
        pressure=msg.format_number(p, decimals=1),
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
