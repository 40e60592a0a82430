"""The six memory system calls as tools, and the RAM operations behind them.

`prune_messages`, `summarize_range` and `recall_original` work on sections 7–8;
`save_to_disk`, `load_from_disk` and `edit_section` (in `disk.py`) on `.smma/`. Every
effect is written to the tape *before* the session changes, and removals always take whole
call/result groups so the message list stays valid for the API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from rumi.base.chats import Speaker
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError
from rumi.context import disk
from rumi.context.builder import Group, groups, render_item, span_text
from rumi.context.host import EngineView
from rumi.context.tape import event, tape_record
from rumi.paths import parse_tape_ref, tape_ref
from rumi.sessions.state import ContextItem, SessionState

RECALL_MAX_CHARS = 60_000
SUMMARY_MIN_ROOM = 200


class PruneArgs(ToolArgs):
    message_ids: list[int] = Field(min_length=1, max_length=500, description="ids [#n]")


class SummarizeArgs(ToolArgs):
    start_id: int
    end_id: int
    summary_text: str = Field(min_length=1)


class RecallArgs(ToolArgs):
    message_id: int | str = Field(
        description="id [#n]; de una conversación importada, tal cual: \"imp…:n\"")


class SaveArgs(ToolArgs):
    file_name: str = Field(description="p. ej. decisiones.md")
    content: str


class LoadArgs(ToolArgs):
    file_name: str = Field(description="p. ej. decisiones.md")


class EditArgs(ToolArgs):
    section_name: str = Field(
        description="user_profile, project_context, current_task o agent_notes")
    new_content: str


@dataclass
class RemovalOutcome:
    """What a prune or summarise did; `message` is what the model reads."""

    removed: list[int] = field(default_factory=list)
    refused_pinned: list[int] = field(default_factory=list)
    refused_open: list[int] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)
    freed_tokens: int = 0
    summary: ContextItem | None = None
    message: str = ""


def _ids(ids: list[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def _group_map(items: list[ContextItem]) -> tuple[list[Group], dict[int, Group]]:
    spans = groups(items)
    by_index = {k: g for g in spans for k in g.indices()}
    return spans, by_index


async def prune(engine: EngineView, session: SessionState, ids: list[int]) -> RemovalOutcome:
    """Remove items (with their call/result companions); pinned and in-flight are refused."""
    items = session.items
    _, by_index = _group_map(items)
    index_of = {item.id: k for k, item in enumerate(items)}
    out = RemovalOutcome()
    chosen: set[int] = set()
    for wanted in dict.fromkeys(ids):
        k = index_of.get(wanted)
        if k is None:
            out.unknown.append(wanted)
            continue
        g = by_index[k]
        if any(items[j].pinned for j in g.indices()):
            out.refused_pinned.append(wanted)
        elif g.open:
            out.refused_open.append(wanted)
        else:
            chosen.update(g.indices())
    victims = [items[k] for k in sorted(chosen)]
    out.removed = [v.id for v in victims]
    out.freed_tokens = sum(v.token_count or 0 for v in victims)
    companions = [i for i in out.removed if i not in ids]
    parts = []
    if victims:
        note = (f" (incluye {_ids(companions)}: van con su llamada o resultado)"
                if companions else "")
        parts.append(f"Podados del contexto: {_ids(out.removed)}{note}. "
                     f"Liberados ≈{out.freed_tokens:,} tokens.")
    parts.extend(_refusals(out))
    if victims:
        parts.append("Siguen en el registro inmutable: recall_original los recupera.")
    out.message = " ".join(parts)
    if not victims:
        raise ToolError("No se podó nada. " + out.message)
    rt = engine.runtime(session)
    await rt.tape.append(event("prune", ids=out.removed, requested=list(ids),
                               refused_pinned=out.refused_pinned,
                               refused_in_progress=out.refused_open, unknown=out.unknown))
    gone = set(out.removed)
    session.items[:] = [i for i in items if i.id not in gone]
    return out


def _refusals(out: RemovalOutcome) -> list[str]:
    parts = []
    if out.refused_pinned:
        parts.append(f"Rechazados por estar fijados (pinned): {_ids(out.refused_pinned)}.")
    if out.refused_open:
        parts.append(f"Rechazados por ser una llamada en curso: {_ids(out.refused_open)}.")
    if out.unknown:
        parts.append(f"No están en el contexto activo (ya podados/resumidos o inexistentes): "
                     f"{_ids(out.unknown)}.")
    return parts


async def summarize(engine: EngineView, session: SessionState, start_id: int, end_id: int,
                    summary_text: str) -> RemovalOutcome:
    """Replace the block from `start_id` to `end_id` (list order) with one summary item."""
    items = session.items
    index_of = {item.id: k for k, item in enumerate(items)}
    out = RemovalOutcome(unknown=[i for i in (start_id, end_id) if i not in index_of])
    if out.unknown:
        raise ToolError(" ".join(_refusals(out)) + " Usa ids visibles en el contexto.")
    text = summary_text.strip()
    if not text:
        raise ToolError("El resumen está vacío.")
    a, b = sorted((index_of[start_id], index_of[end_id]))
    spans, by_index = _group_map(items)
    a, b = by_index[a].start, by_index[b].end - 1
    victims: list[ContextItem] = []
    for g in spans:
        if g.end <= a or g.start > b:
            continue
        members = [items[j] for j in g.indices()]
        if any(m.pinned for m in members):
            out.refused_pinned.extend(m.id for m in members if m.pinned)
        elif g.open:
            out.refused_open.extend(m.id for m in members)
        else:
            victims.extend(members)
    if not victims:
        raise ToolError("No hay nada que resumir en ese rango. " + " ".join(_refusals(out)))
    replaced = sum(v.token_count or 0 for v in victims)
    text_tokens = engine.tokens.count(text)
    if text_tokens > max(replaced, SUMMARY_MIN_ROOM):
        raise ToolError(f"El resumen ({text_tokens:,} tokens) es más largo que lo que sustituye "
                        f"({replaced:,} tokens). Escríbelo más corto.")
    summary = await replace_with_summary(
        engine, session, [v.id for v in victims], text, event_name="summarize",
        extra={"requested": [start_id, end_id], "refused_pinned": out.refused_pinned,
               "refused_in_progress": out.refused_open})
    out.removed = [v.id for v in victims]
    out.summary = summary
    out.freed_tokens = replaced - (summary.token_count or 0)
    parts = [f"Resumidos {len(victims)} mensajes (#{victims[0].id}…#{victims[-1].id}"
             f", ≈{replaced:,} tokens) en #{summary.id} "
             f"({summary.token_count or 0:,} tokens)."]
    parts.extend(_refusals(out))
    parts.append("Los originales siguen en el registro inmutable (recall_original).")
    out.message = " ".join(parts)
    return out


async def replace_with_summary(engine: EngineView, session: SessionState, ids: list[int],
                               text: str, *, event_name: str,
                               extra: dict[str, Any] | None = None) -> ContextItem:
    """Swap `ids` for one summary item placed where the first of them was.

    The caller guarantees `ids` are whole groups. The summary line and the event reach the
    tape (one fsync) before the session changes.
    """
    gone = set(ids)
    victims = [i for i in session.items if i.id in gone]
    covers: set[int] = set()
    for v in victims:
        covers.add(v.id)
        covers.update(v.covers)
    summary = ContextItem(id=session.allocate_id(), role="assistant", content=text,
                          kind="summary", covers=sorted(covers))
    engine.tokens.item_tokens(summary, render_item(summary))
    rt = engine.runtime(session)
    await rt.tape.append_many([
        tape_record(summary),
        event(event_name, summary_id=summary.id, ids=[v.id for v in victims], **(extra or {})),
    ])
    rt.max_id = max(rt.max_id, summary.id)
    out: list[ContextItem] = []
    placed = False
    for item in session.items:
        if item.id in gone:
            if not placed:
                out.append(summary)
                placed = True
            continue
        out.append(item)
    session.items[:] = out
    return summary


def format_original(record: dict[str, Any], in_context: bool, tag: str | None = None) -> str:
    """The tape record for the model; the content is reproduced exactly."""
    where = "sigue en el contexto" if in_context else "ya no está en el contexto activo"
    if tag:
        where = "conversación importada"
    kind = ""
    if record.get("kind") == "summary":
        kind = " · resumen de " + span_text(list(record.get("covers") or []))
    who = (" · " + Speaker(str(record["speaker_id"]), str(record.get("speaker_name") or "?")
                           ).label() if record.get("speaker_id") else "")
    head = (f"Original de #{tape_ref(tag, record.get('id'))} ({record.get('role')}{who}"
            f"{' · ' + record['name'] if record.get('name') else ''}, {record.get('timestamp')}"
            f"{kind}; {where}) — registro inmutable:")
    body = str(record.get("content") or "")
    if record.get("tool_calls"):
        body += "\n[llamadas] " + json.dumps(record["tool_calls"], ensure_ascii=False)
    return head + "\n" + body


def _session(ctx: ToolContext) -> SessionState:
    session = ctx.session
    if not isinstance(session, SessionState) or session.chat_id != ctx.chat_id:
        raise ToolError("No hay una sesión activa para este chat.")
    return session


def guard(engine: EngineView, session: SessionState) -> None:
    """Stop a loop of memory calls that never gets back to real work (§8, human reset)."""
    rt = engine.runtime(session)
    rt.syscalls += 1
    limit = engine.cfg.max_syscalls_without_progress
    if rt.syscalls > limit:
        rt.runaway = True
        raise ToolError(
            f"Has encadenado {rt.syscalls - 1} llamadas de memoria sin avanzar en la tarea. "
            "Detente: no gestiones más la memoria y responde ahora al usuario.")


def build_tools(engine: EngineView) -> list[Tool]:
    """The six SMMA system calls; each finds its session in `ToolContext.session`."""

    async def prune_h(args: PruneArgs, ctx: ToolContext) -> str:
        session = _session(ctx)
        guard(engine, session)
        return (await prune(engine, session, args.message_ids)).message

    async def summarize_h(args: SummarizeArgs, ctx: ToolContext) -> str:
        session = _session(ctx)
        guard(engine, session)
        return (await summarize(engine, session, args.start_id, args.end_id,
                                args.summary_text)).message

    async def recall_h(args: RecallArgs, ctx: ToolContext) -> str:
        session = _session(ctx)
        guard(engine, session)
        ref = parse_tape_ref(args.message_id)
        if ref is None:
            raise ToolError(f"«{args.message_id}» no es un id: usa n o imp…:n, tal como "
                            "aparece entre corchetes.")
        tag, message_id = ref
        if tag is None:
            record = await engine.original(session, message_id)
        else:
            record = await engine.imported_original(session, tag, message_id)
        if record is None:
            raise ToolError(f"#{tape_ref(tag, message_id)} no está en el registro inmutable "
                            "de este chat.")
        in_context = tag is None and engine.item(session, message_id) is not None
        extra = {"archive": tag} if tag else {}
        await engine.runtime(session).tape.append(event("recall", ids=[message_id], **extra))
        return format_original(record, in_context, tag)

    async def save_h(args: SaveArgs, ctx: ToolContext) -> str:
        session = _session(ctx)
        guard(engine, session)
        return await disk.save_file(engine, session, args.file_name, args.content)

    async def load_h(args: LoadArgs, ctx: ToolContext) -> str:
        session = _session(ctx)
        guard(engine, session)
        return await disk.load_file(engine, session, args.file_name)

    async def edit_h(args: EditArgs, ctx: ToolContext) -> str:
        session = _session(ctx)
        guard(engine, session)
        return await disk.edit_section(engine, session, args.section_name, args.new_content)

    file_limit = engine.cfg.disk_file_max_chars + 1_000
    return [
        Tool("prune_messages",
             "Quita mensajes del contexto (con su llamada o resultado; los fijados no).",
             PruneArgs, prune_h, changes_state=False),
        Tool("summarize_range",
             "Cambia los mensajes [#start_id]…[#end_id] por tu resumen (los fijados se "
             "quedan).", SummarizeArgs, summarize_h, changes_state=False),
        Tool("recall_original",
             "Original exacto de un mensaje, aunque esté podado o resumido.",
             RecallArgs, recall_h, max_result_chars=RECALL_MAX_CHARS,
             changes_state=False),
        Tool("save_to_disk",
             "Crea o reemplaza un .md en .smma/ (no identity.md).", SaveArgs, save_h),
        Tool("load_from_disk", "Trae un .md de .smma/ al espacio de trabajo.",
             LoadArgs, load_h, max_result_chars=file_limit),
        Tool("edit_section", "Reescribe entera una sección editable.",
             EditArgs, edit_h),
    ]
