"""The six memory system calls as tools, and the RAM operations behind them.

`prune_messages`, `summarize_range` and `recall_original` work on sections 7–8;
`save_to_disk`, `load_from_disk` and `edit_section` (in `disk.py`) on `.smma/`. Every
effect is written to the tape *before* the session changes, and removals always take whole
call/result groups so the message list stays valid for the API.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from rumi.base.chats import Speaker
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, localized_tool
from rumi.context import disk
from rumi.context.builder import Group, groups, render_item, span_text
from rumi.context.host import EngineView
from rumi.context.syscall_text import TOOL_TEXTS, say
from rumi.context.tape import event, tape_record
from rumi.paths import parse_tape_ref, tape_ref
from rumi.sessions.state import ContextItem, SessionState

RECALL_MAX_CHARS = 60_000
SUMMARY_MIN_ROOM = 200


class PruneArgs(ToolArgs):
    message_ids: list[int] = Field(min_length=1, max_length=500)


class SummarizeArgs(ToolArgs):
    start_id: int
    end_id: int
    summary_text: str = Field(min_length=1)


class RecallArgs(ToolArgs):
    message_id: int | str


class SaveArgs(ToolArgs):
    file_name: str
    content: str


class LoadArgs(ToolArgs):
    file_name: str


class EditArgs(ToolArgs):
    section_name: str
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
        note = say("companions", ids=_ids(companions)) if companions else ""
        parts.append(say("pruned", ids=_ids(out.removed), note=note, tokens=out.freed_tokens))
    parts.extend(_refusals(out))
    if victims:
        parts.append(say("still_on_tape"))
    out.message = " ".join(parts)
    if not victims:
        raise ToolError(say("nothing_pruned") + out.message)
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
        parts.append(say("refused_pinned", ids=_ids(out.refused_pinned)))
    if out.refused_open:
        parts.append(say("refused_open", ids=_ids(out.refused_open)))
    if out.unknown:
        parts.append(say("unknown", ids=_ids(out.unknown)))
    return parts


async def summarize(engine: EngineView, session: SessionState, start_id: int, end_id: int,
                    summary_text: str) -> RemovalOutcome:
    """Replace the block from `start_id` to `end_id` (list order) with one summary item."""
    items = session.items
    index_of = {item.id: k for k, item in enumerate(items)}
    out = RemovalOutcome(unknown=[i for i in (start_id, end_id) if i not in index_of])
    if out.unknown:
        raise ToolError(" ".join(_refusals(out)) + say("use_visible_ids"))
    text = summary_text.strip()
    if not text:
        raise ToolError(say("empty_summary"))
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
        raise ToolError(say("nothing_to_summarize") + " ".join(_refusals(out)))
    replaced = sum(v.token_count or 0 for v in victims)
    text_tokens = engine.tokens.count(text)
    if text_tokens > max(replaced, SUMMARY_MIN_ROOM):
        raise ToolError(say("summary_too_long", tokens=text_tokens, replaced=replaced))
    summary = await replace_with_summary(
        engine, session, [v.id for v in victims], text, event_name="summarize",
        extra={"requested": [start_id, end_id], "refused_pinned": out.refused_pinned,
               "refused_in_progress": out.refused_open})
    out.removed = [v.id for v in victims]
    out.summary = summary
    out.freed_tokens = replaced - (summary.token_count or 0)
    parts = [say("summarized", count=len(victims), first=str(victims[0].id),
                 last=str(victims[-1].id), replaced=replaced, id=str(summary.id),
                 tokens=summary.token_count or 0)]
    parts.extend(_refusals(out))
    parts.append(say("originals_on_tape"))
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
    where = say("in_context") if in_context else say("not_in_context")
    if tag:
        where = say("imported")
    kind = ""
    if record.get("kind") == "summary":
        kind = say("summary_of") + span_text(list(record.get("covers") or []))
    who = (" · " + Speaker(str(record["speaker_id"]), str(record.get("speaker_name") or "?")
                           ).label() if record.get("speaker_id") else "")
    details = (f"{record.get('role')}{who}"
               f"{' · ' + record['name'] if record.get('name') else ''}, "
               f"{record.get('timestamp')}{kind}")
    head = say("original", ref=tape_ref(tag, record.get("id")), details=details, where=where)
    body = str(record.get("content") or "")
    if record.get("tool_calls"):
        body += "\n" + say("calls") + json.dumps(record["tool_calls"], ensure_ascii=False)
    return head + "\n" + body


def _session(ctx: ToolContext) -> SessionState:
    session = ctx.session
    if not isinstance(session, SessionState) or session.chat_id != ctx.chat_id:
        raise ToolError(say("no_session"))
    return session


def guard(engine: EngineView, session: SessionState) -> None:
    """Stop a loop of memory calls that never gets back to real work (§8, human reset)."""
    rt = engine.runtime(session)
    rt.syscalls += 1
    limit = engine.cfg.max_syscalls_without_progress
    if rt.syscalls > limit:
        rt.runaway = True
        raise ToolError(say("runaway", count=rt.syscalls - 1))


async def _prune(engine: EngineView, session: SessionState, args: PruneArgs) -> str:
    return (await prune(engine, session, args.message_ids)).message


async def _summarize(engine: EngineView, session: SessionState, args: SummarizeArgs) -> str:
    return (await summarize(engine, session, args.start_id, args.end_id,
                            args.summary_text)).message


async def _recall(engine: EngineView, session: SessionState, args: RecallArgs) -> str:
    ref = parse_tape_ref(args.message_id)
    if ref is None:
        raise ToolError(say("not_an_id", value=args.message_id))
    tag, message_id = ref
    if tag is None:
        record = await engine.original(session, message_id)
    else:
        record = await engine.imported_original(session, tag, message_id)
    if record is None:
        raise ToolError(say("not_on_tape", ref=tape_ref(tag, message_id)))
    in_context = tag is None and engine.item(session, message_id) is not None
    extra = {"archive": tag} if tag else {}
    await engine.runtime(session).tape.append(event("recall", ids=[message_id], **extra))
    return format_original(record, in_context, tag)


async def _save(engine: EngineView, session: SessionState, args: SaveArgs) -> str:
    return await disk.save_file(engine, session, args.file_name, args.content)


async def _load(engine: EngineView, session: SessionState, args: LoadArgs) -> str:
    return await disk.load_file(engine, session, args.file_name)


async def _edit(engine: EngineView, session: SessionState, args: EditArgs) -> str:
    return await disk.edit_section(engine, session, args.section_name, args.new_content)


SyscallRun = Callable[[EngineView, SessionState, Any], Awaitable[str]]
_SYSCALLS: dict[str, tuple[type[ToolArgs], SyscallRun]] = {
    "prune_messages": (PruneArgs, _prune),
    "summarize_range": (SummarizeArgs, _summarize),
    "recall_original": (RecallArgs, _recall),
    "save_to_disk": (SaveArgs, _save),
    "load_from_disk": (LoadArgs, _load),
    "edit_section": (EditArgs, _edit),
}


# Calls that only rearrange the context: one cut by a crash is not worth telling the person.
CONTEXT_ONLY = frozenset({"prune_messages", "summarize_range", "recall_original"})


def build_tools(engine: EngineView) -> list[Tool]:
    """The six SMMA system calls, described in each language; each finds its session in
    `ToolContext.session` and counts against the runaway guard before it runs."""
    limits = {"recall_original": RECALL_MAX_CHARS,   # larger than the registry's default
              "load_from_disk": engine.cfg.disk_file_max_chars + 1_000}

    def handler(run: SyscallRun) -> Callable[[Any, ToolContext], Awaitable[str]]:
        async def handle(args: Any, ctx: ToolContext) -> str:
            session = _session(ctx)
            guard(engine, session)
            return await run(engine, session, args)
        return handle

    return [localized_tool(name, TOOL_TEXTS[name], model, handler(run),
                           max_result_chars=limits.get(name),
                           changes_state=name not in CONTEXT_ONLY)
            for name, (model, run) in _SYSCALLS.items()]
