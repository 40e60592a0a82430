"""The dashboard's figures and block: memory pressure, alerts, failing tools and the hint
of what to prune, drawn once per turn and again only when something actionable changed."""

from __future__ import annotations

from rumi.config import ContextSettings
from rumi.context import dashboard as dash
from rumi.context import model_text
from rumi.context.compaction import plan_middle
from rumi.context.host import EngineView
from rumi.context.runtime import ChatRuntime, TurnDashboard
from rumi.context.tokens import TokenCounter
from rumi.llm.client import LLMClient
from rumi.sessions.state import ContextItem, SessionState

FAILING_TOOL_THRESHOLD = 3
MIN_WINDOW = 2_048  # below this no conversation fits; the request is refused instead
# sections 7–8 as `section_tokens` names them: what P_m measures (the rest is the fixed part)
CONVERSATION_SECTIONS = ("action_log", "workspace", "recalled_memories")


def safe_limit(window: int, llm: LLMClient | None) -> int:
    """The largest prompt a request may carry (100 % on the dashboard's prompt line).

    On the model's window: 80 % of it, the seed's margin for the answer and for counting
    error. Once Groq has told the account's tokens-per-minute cap, the cap less the
    answer's budget when that is smaller (a free account's 8,000 tokens a minute count
    the prompt and `max_tokens` together, so the prompt must stay under it, not under
    131k). That figure already has the answer taken out exactly and the limiter's own
    margin for counting error, so it gets no second 20 %: on a free account the 20 % would
    be ~1,300 tokens, a third of what the conversation has."""
    safe = dash.safe_limit(window)
    room = llm.prompt_room() if llm is not None else None
    if room is not None:
        safe = min(safe, max(dash.safe_limit(MIN_WINDOW), room))
    return safe


def binding_cap(window: int, llm: LLMClient | None) -> int | None:
    """The account's tokens-per-minute cap when it, not the model's `window`, sets the safe
    limit; None while Groq has not told it, or when it is larger."""
    if llm is None:
        return None
    tpm, room = llm.tokens_per_minute(), llm.prompt_room()
    if tpm is None or room is None:
        return None
    return tpm if room < dash.safe_limit(window) else None


def dashboard_block(data: dash.DashboardData, cfg: ContextSettings,
                    tokens: TokenCounter) -> tuple[str, int]:
    """Section 2 with its header, and its tokens (it ends its message: no separator follows),
    kept within the dashboard budget by dropping whole lines, least important first
    (section sizes before pins before failing tools before alerts; the five fixed
    lines always stay), so the warning that matters most is the last to go."""
    lines = dash.render_lines(data, cfg)
    t = model_text.for_language()
    block = t.dashboard_header + "\n".join(text for _, text in lines)
    counted = tokens.count(block)
    budget = cfg.section_budgets.get("dashboard", 300)
    more = t.more_notes
    while counted > budget:
        droppable = [k for k, (priority, _) in enumerate(lines) if priority < dash.FIXED]
        if not droppable:
            break
        del lines[min(droppable, key=lambda k: (lines[k][0], -k))]
        block = t.dashboard_header + "\n".join([*(text for _, text in lines), more])
        counted = tokens.count(block)
    return block, counted


def dashboard_data(engine: EngineView, session: SessionState, rt: ChatRuntime, used: int, *,
                   conversation: int | None = None) -> dash.DashboardData:
    """The dashboard's numbers for a prompt of `used` tokens whose sections 7–8 take
    `conversation` (default: as the last build counted them)."""
    cfg, tokens = engine.cfg, engine.tokens
    loaded, total = rt.files.loaded_count()
    cal = tokens.calibration(engine.model)
    if conversation is None:
        conversation = tokens.calibrated(engine.model, sum(
            rt.section_tokens.get(name, 0) for name in CONVERSATION_SECTIONS))
    p = dash.pressure(conversation, dash.conversation_room(engine.safe_limit,
                                                           used - conversation))
    return dash.DashboardData(
        used=used, safe_limit=engine.safe_limit, disk_loaded=loaded, disk_total=total,
        section_tokens=dict(rt.section_tokens),
        items=len(session.items),
        first_id=session.items[0].id if session.items else None,
        last_id=session.items[-1].id if session.items else None,
        pinned=[i.id for i in session.items if i.pinned],
        failing_tools=_failing_tools(session.items),
        truncated_sections=[(s.spec.name, s.raw_tokens, s.limit)
                            for s in rt.files.sections.values() if s.truncated],
        over_budget=_over_budget(rt, cfg), alerts=_alerts(rt),
        warnings=[text for key, text in rt.notices.items() if key != "compaction"],
        optimize_hint=hint(session.items, cfg) if p >= cfg.optimize_threshold else "",
        fallback_tokenizer=tokens.is_fallback,
        calibration_factor=cal.factor if cal else 1.0,
        calibration_samples=cal.samples if cal else 0,
        conversation=conversation,
    )


def _failing_tools(items: list[ContextItem]) -> dict[str, list[int]]:
    failing: dict[str, list[int]] = {}
    for item in items:
        if item.role == "tool" and item.is_error:
            failing.setdefault(item.name or "desconocida", []).append(item.id)
    return {k: v for k, v in failing.items() if len(v) >= FAILING_TOOL_THRESHOLD}


def _alerts(rt: ChatRuntime) -> list[str]:
    alerts = []
    if rt.runaway:
        alerts.append("Bucle de llamadas de memoria detenido: responde al usuario.")
    if "compaction" in rt.notices:
        alerts.append(rt.notices["compaction"])
    if not rt.tape.health.clean:
        alerts.append("Registro inmutable con líneas dañadas tras un corte (se ignoran; "
                      "el resto es legible).")
    return alerts


def _over_budget(rt: ChatRuntime, cfg: ContextSettings) -> list[tuple[str, int, int]]:
    budgets = cfg.section_budgets
    log_tokens = rt.section_tokens.get("action_log", 0)
    if log_tokens > budgets.get("action_log", 20_000):
        return [("action_log", log_tokens, budgets.get("action_log", 20_000))]
    return []


def hint(items: list[ContextItem], cfg: ContextSettings) -> str:
    """Concrete ids to act on: the oldest closed range and the biggest outputs."""
    parts = []
    middle = plan_middle(items, cfg.keep_first, cfg.keep_last)
    if middle:
        first, last = items[middle[0]].id, items[middle[-1]].id
        parts.append(f"summarize_range sobre #{first}–#{last}")
    big = sorted((i for i in items if i.role == "tool" and not i.pinned),
                 key=lambda i: i.token_count or 0, reverse=True)[:3]
    if big:
        parts.append("prune_messages de salidas obsoletas, p. ej. "
                     + ", ".join(f"#{i.id} ({i.token_count or 0:,} tok)" for i in big))
    return "; ".join(parts) or "resume o poda lo que ya no necesites"


def turn_dashboard(engine: EngineView, session: SessionState, rt: ChatRuntime, turn: int,
                   before_dash: int) -> tuple[str, int]:
    """The dashboard block and its tokens: this turn's frozen one while nothing the model
    must act on changed (its counters would otherwise break the provider's cache at
    every tool step), else drawn again with the current figures."""
    cfg, tokens, model = engine.cfg, engine.tokens, engine.model
    frozen = rt.turn_dashboard if rt.turn_dashboard and rt.turn_dashboard.turn == turn \
        else None
    dash_tokens = frozen.tokens if frozen else (rt.last_dash_tokens or 200)
    data = engine.dashboard_data(session, rt, tokens.calibrated(model, before_dash + dash_tokens))
    if frozen is not None and frozen.key == dash.actionable(data, cfg):
        return frozen.block, frozen.tokens
    for _ in range(4):  # the dashboard counts itself: iterate to the fixed point
        data.used = tokens.calibrated(model, before_dash + dash_tokens)
        block, counted = dashboard_block(data, cfg, tokens)
        if counted == dash_tokens:
            break
        dash_tokens = counted
    rt.turn_dashboard = TurnDashboard(turn, dash.actionable(data, cfg), block, dash_tokens)
    return block, dash_tokens
