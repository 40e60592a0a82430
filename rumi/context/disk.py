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
        raise ToolError(f"Nombre no válido {name!r}: solo un nombre de archivo, sin rutas "
                        "(p. ej. 'decisiones.md').")
    if not FILE_NAME.match(candidate):
        raise ToolError(f"Nombre no válido {name!r}: usa letras, números, '_' o '-' y la "
                        "extensión .md (p. ej. 'decisiones.md').")
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
        raise ToolError(f"No se puede leer .smma/{path.name}: {exc}.") from exc
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
        raise ToolError(f".smma/{path.name} ocupa {size:,} bytes, demasiado para guardar una "
                        "copia antes de sobrescribirlo; no se ha modificado. Pide a quien "
                        "administra Rumi que lo reduzca.")
    return text


async def save_file(engine: EngineView, session: SessionState, file_name: str,
                    content: str) -> str:
    name = check_file_name(file_name)
    if name.lower() == READ_ONLY:
        raise ToolError("identity.md es de solo lectura: no se puede modificar.")
    limit = engine.cfg.disk_file_max_chars
    if len(content) > limit:
        raise ToolError(f"El contenido tiene {len(content):,} caracteres y el máximo por archivo "
                        f"es {limit:,}. Resúmelo o divídelo en varios archivos.")
    section = BY_FILE.get(name.lower())
    if section is not None:
        return await edit_section(engine, session, section.name, content, via="save_to_disk")
    rt = engine.runtime(session)
    path = rt.paths.smma / name

    def _write() -> str | None:
        previous = _previous(path, limit)
        if previous is None and len(list(path.parent.glob("*.md"))) >= MAX_FILES:
            raise ToolError(f"Ya hay {MAX_FILES} archivos .md en .smma/: reutiliza o "
                            "consolida alguno.")
        atomic_write_text(path, content)
        return previous

    previous = await asyncio.to_thread(_write)
    await rt.tape.append(event("save_to_disk", file=name, content=content, previous=previous))
    verb = "actualizado" if previous is not None else "creado"
    return f"Archivo .smma/{name} {verb} ({len(content):,} caracteres)."


async def load_file(engine: EngineView, session: SessionState, file_name: str) -> str:
    name = check_file_name(file_name)
    rt = engine.runtime(session)
    path = rt.paths.smma / name
    limit = engine.cfg.disk_file_max_chars
    read = await asyncio.to_thread(_read, path, limit)
    if read is None:
        available = await asyncio.to_thread(
            lambda: sorted(p.name for p in rt.paths.smma.glob("*.md")))
        raise ToolError(f"No existe .smma/{name}. Archivos disponibles: "
                        f"{', '.join(available) or 'ninguno'}.")
    text, size = read
    note = ""
    if size > len(text.encode("utf-8")):
        note = (f"\n…[archivo truncado: {size:,} B en disco, se muestran los primeros "
                f"{len(text):,} caracteres]")
    section = BY_FILE.get(name.lower())
    if section is not None:
        note += (f"\n(Este archivo es la sección {section.number} · {section.name}, que ya está "
                 "en el prompt del sistema.)")
    await rt.tape.append(event("load_from_disk", file=name, chars=len(text)))
    tokens = engine.tokens.count(text)
    return f"Contenido de .smma/{name} ({tokens:,} tokens):\n\n{text}{note}"


async def edit_section(engine: EngineView, session: SessionState, section_name: str,
                       new_content: str, *, via: str = "edit_section") -> str:
    spec = resolve_section(section_name)
    editable = "user_profile, project_context, current_task, agent_notes"
    if spec is None:
        raise ToolError(f"Sección desconocida {section_name!r}. Editables: {editable}.")
    if spec.name == "identity":
        raise ToolError("La sección 1 (identidad) es de solo lectura: no se puede modificar.")
    if spec.file_name is None:
        raise ToolError(f"La sección {spec.number} ({spec.name}) no se edita así: usa "
                        f"prune_messages o summarize_range. Editables: {editable}.")
    limit = engine.cfg.disk_file_max_chars
    if len(new_content) > limit:
        raise ToolError(f"El contenido tiene {len(new_content):,} caracteres; el máximo es "
                        f"{limit:,}.")
    rt = engine.runtime(session)
    reason = rt.files.check_size(spec, new_content)
    if reason:
        raise ToolError(reason)
    previous = await asyncio.to_thread(_previous, rt.files.path(spec), limit)
    await rt.files.write(spec, new_content)
    await rt.tape.append(event(via, section=spec.name, file=spec.file_name,
                               content=new_content, previous=previous))
    section = rt.files.sections[spec.name]
    return (f"Sección {spec.number} ({spec.name}) actualizada y guardada en "
            f".smma/{spec.file_name}: {section.tokens:,} de {section.limit:,} tokens.")
