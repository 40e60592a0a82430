"""The disk system calls: `save_to_disk`, `load_from_disk`, `edit_section` on `.smma/`.

Only plain `*.md` names directly inside the chat's `.smma/` are accepted (no paths, no
traversal, no hidden files), `identity.md` is read-only, sizes are capped, writes are
atomic, and the tape records each change with the previous content so an overwrite can
always be undone by hand.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from rumi.base.tools import ToolError
from rumi.context.host import EngineView
from rumi.context.sections import BY_FILE, resolve_section
from rumi.context.syscall_text import say
from rumi.context.tape import event
from rumi.fileio import UnreadableFile, atomic_write_text, read_bounded
from rumi.sessions.state import SessionState

FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}\.md$")
READ_ONLY = "identity.md"
MAX_FILES = 64
PREVIOUS_FACTOR = 16  # a file up to 16× the size limit is still kept whole on the tape


def check_file_name(name: str) -> str:
    """The validated name, or ToolError saying why it is refused."""
    candidate = name.strip()
    if "/" in candidate or "\\" in candidate or ".." in candidate:
        raise ToolError(say("bad_path", name=name))
    if not FILE_NAME.match(candidate):
        raise ToolError(say("bad_name", name=name))
    return candidate


def _read(path: Path, max_chars: int) -> tuple[str, int] | None:
    """(up to `max_chars` characters, the file's size in bytes), None when absent.

    Bounded and non-blocking: a FIFO or device in `.smma/` is a ToolError, not a hang.
    """
    try:
        data, size = read_bounded(path, max_chars * 4)  # UTF-8: at most 4 bytes a character
    except FileNotFoundError:
        return None
    except UnreadableFile as exc:
        raise ToolError(say("unreadable", name=path.name, why=str(exc))) from exc
    return data.decode("utf-8", errors="replace")[:max_chars], size


def _previous(path: Path, limit: int) -> str | None:
    """The whole current content, which the tape keeps so an overwrite can be undone.

    A file too large to keep whole (edited by hand, far past the limit) is not overwritten:
    its content would be lost.
    """
    cap = limit * PREVIOUS_FACTOR
    read = _read(path, cap)
    if read is None:
        return None
    text, size = read
    if size > len(text.encode("utf-8")):
        raise ToolError(say("too_big_to_keep", name=path.name, size=size))
    return text


async def save_file(engine: EngineView, session: SessionState, file_name: str,
                    content: str) -> str:
    name = check_file_name(file_name)
    if name.lower() == READ_ONLY:
        raise ToolError(say("identity_read_only"))
    limit = engine.cfg.disk_file_max_chars
    if len(content) > limit:
        raise ToolError(say("file_too_long", chars=len(content), limit=limit))
    section = BY_FILE.get(name.lower())
    if section is not None:
        return await edit_section(engine, session, section.name, content, via="save_to_disk")
    rt = engine.runtime(session)
    path = rt.paths.smma / name

    def _write() -> str | None:
        previous = _previous(path, limit)
        if previous is None and len(list(path.parent.glob("*.md"))) >= MAX_FILES:
            raise ToolError(say("too_many_files", count=MAX_FILES))
        atomic_write_text(path, content)
        return previous

    previous = await asyncio.to_thread(_write)
    await rt.tape.append(event("save_to_disk", file=name, content=content, previous=previous))
    done = "file_updated" if previous is not None else "file_created"
    return say(done, name=name, chars=len(content))


async def load_file(engine: EngineView, session: SessionState, file_name: str) -> str:
    name = check_file_name(file_name)
    rt = engine.runtime(session)
    path = rt.paths.smma / name
    limit = engine.cfg.disk_file_max_chars
    read = await asyncio.to_thread(_read, path, limit)
    if read is None:
        available = await asyncio.to_thread(
            lambda: sorted(p.name for p in rt.paths.smma.glob("*.md")))
        raise ToolError(say("no_such_file", name=name,
                            available=", ".join(available) or say("none")))
    text, size = read
    note = ""
    if size > len(text.encode("utf-8")):
        note = say("file_truncated", size=size, chars=len(text))
    section = BY_FILE.get(name.lower())
    if section is not None:
        note += say("file_is_section", number=section.number, section=section.name)
    await rt.tape.append(event("load_from_disk", file=name, chars=len(text)))
    tokens = engine.tokens.count(text)
    return say("file_content", name=name, tokens=tokens, text=text, note=note)


async def edit_section(engine: EngineView, session: SessionState, section_name: str,
                       new_content: str, *, via: str = "edit_section") -> str:
    spec = resolve_section(section_name)
    editable = "user_profile, project_context, current_task, agent_notes"
    if spec is None:
        raise ToolError(say("unknown_section", name=section_name, editable=editable))
    if spec.name == "identity":
        raise ToolError(say("identity_section"))
    if spec.file_name is None:
        raise ToolError(say("not_editable", number=spec.number, section=spec.name,
                            editable=editable))
    limit = engine.cfg.disk_file_max_chars
    if len(new_content) > limit:
        raise ToolError(say("section_too_long", chars=len(new_content), limit=limit))
    rt = engine.runtime(session)
    reason = rt.files.check_size(spec, new_content)
    if reason:
        raise ToolError(reason)
    previous = await asyncio.to_thread(_previous, rt.files.path(spec), limit)
    await rt.files.write(spec, new_content)
    await rt.tape.append(event(via, section=spec.name, file=spec.file_name,
                               content=new_content, previous=previous))
    section = rt.files.sections[spec.name]
    return say("section_saved", number=spec.number, section=spec.name, file=spec.file_name,
               tokens=section.tokens, limit=section.limit)
