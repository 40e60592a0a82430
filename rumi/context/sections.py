"""Sections 1 and 3–6: the `.smma/*.md` files, loaded with their size limits enforced.

Files are the source of truth: a human may edit them at any time, so each build checks
their mtime/size and re-reads only what changed. A file over its section's budget is
truncated *in the prompt* (never on disk) with a visible marker, and the dashboard warns.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rumi.context.syscall_text import say
from rumi.context.tokens import TokenCounter
from rumi.fileio import UnreadableFile, atomic_write_text, read_bounded

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SectionSpec:
    number: int
    name: str
    title: str
    file_name: str | None
    editable: bool


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec(1, "identity", "Identidad y reglas SMMA", "identity.md", False),
    SectionSpec(2, "dashboard", "Dashboard de metacognición", None, False),
    SectionSpec(3, "user_profile", "Perfil del usuario", "user_profile.md", True),
    SectionSpec(4, "project_context", "Contexto del proyecto", "project_context.md", True),
    SectionSpec(5, "current_task", "Estado de la tarea actual", "current_task.md", True),
    SectionSpec(6, "agent_notes", "Notas del agente", "agent_notes.md", True),
    SectionSpec(7, "action_log", "Log de acciones", None, True),
    SectionSpec(8, "workspace", "Espacio de trabajo", None, True),
)
BY_NAME = {s.name: s for s in SECTIONS}
# A file is read up to this many bytes per token of its section's limit: more than the limit
# can ever show (it is cut to the limit afterwards), so a 56 MB file costs a few KB, not RAM.
BYTES_PER_TOKEN_CAP = 8
DISK_SECTIONS = tuple(s for s in SECTIONS if s.file_name)
EDITABLE_FILE_SECTIONS = tuple(s for s in DISK_SECTIONS if s.editable)
BY_FILE = {s.file_name: s for s in DISK_SECTIONS}

ALIASES = {
    "perfil": "user_profile", "profile": "user_profile", "usuario": "user_profile",
    "proyecto": "project_context", "project": "project_context",
    "tarea": "current_task", "task": "current_task",
    "notas": "agent_notes", "notes": "agent_notes",
    "identidad": "identity",
}



def resolve_section(name: str) -> SectionSpec | None:
    """Accept `user_profile`, `user_profile.md`, `3`, or a Spanish alias like `notas`."""
    key = name.strip().lower()
    if key.endswith(".md"):
        key = key[:-3]
    if key.isdigit():
        return next((s for s in SECTIONS if s.number == int(key)), None)
    key = ALIASES.get(key, key)
    return BY_NAME.get(key)


def default_text(file_name: str, language: str = "es") -> str:
    """The packaged default for an `.smma` file (identity and templates) in `language`:
    `defaults/<name>` is Spanish, `defaults/<language>/<name>` another language's."""
    base = resources.files("rumi").joinpath("defaults")
    localized = base.joinpath(language, file_name)
    chosen = localized if language != "es" and localized.is_file() else base.joinpath(file_name)
    return chosen.read_text(encoding="utf-8")


@dataclass
class LoadedSection:
    spec: SectionSpec
    text: str = ""
    raw_tokens: int = 0
    tokens: int = 0
    limit: int = 0
    loaded: bool = False
    truncated: bool = False
    error: str | None = None
    stamp: tuple[int, int] | None = None


class SectionFiles:
    """The disk sections of one chat, cached with their file stamps."""

    def __init__(self, smma_dir: Path, budgets: dict[str, int], tokens: TokenCounter,
                 templates: Path | None = None) -> None:
        self.dir = smma_dir
        self.templates = templates
        self.budgets = budgets
        self.tokens = tokens
        self.sections: dict[str, LoadedSection] = {
            s.name: LoadedSection(s, limit=budgets.get(s.name, 2_000)) for s in DISK_SECTIONS
        }

    def path(self, spec: SectionSpec) -> Path:
        assert spec.file_name is not None
        return self.dir / spec.file_name

    async def ensure_defaults(self, language: str = "es") -> None:
        await asyncio.to_thread(self._ensure_defaults, language)

    def _ensure_defaults(self, language: str) -> None:
        """New chats start from the operator's templates (`data_dir/smma_defaults/*.md`)
        when present, else from the packaged defaults in the chat's language; existing files
        are never touched (a chat keeps the identity it was created with)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for spec in DISK_SECTIONS:
            path = self.path(spec)
            if path.exists():
                continue
            name = spec.file_name or ""
            template = self.templates / name if self.templates else None
            if template is not None and template.is_file():
                text = template.read_text(encoding="utf-8")
            else:
                text = default_text(name, language)
            atomic_write_text(path, text)

    async def refresh(self) -> bool:
        """Re-read files whose mtime/size changed; True if anything was reloaded.

        The per-build check is five `stat` calls on inodes the kernel has cached (~µs), done
        inline: a thread hop would cost more than the work. Reading happens off the loop.
        """
        if not self._stale():
            return False
        return await asyncio.to_thread(self._refresh)

    def _stale(self) -> bool:
        for section in self.sections.values():
            try:
                st = self.path(section.spec).stat()
                stamp = (st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = (0, 0)
            if stamp != section.stamp:
                return True
        return False

    def _refresh(self) -> bool:
        changed = False
        for section in self.sections.values():
            path = self.path(section.spec)
            try:
                st = path.stat()
                stamp = (st.st_mtime_ns, st.st_size)
            except FileNotFoundError:
                if section.loaded or section.stamp is None:
                    changed = True
                section.loaded, section.text, section.stamp = False, "", (0, 0)
                section.tokens = section.raw_tokens = 0
                section.error = "archivo no encontrado"
                continue
            if stamp == section.stamp:
                continue
            changed = True
            cap = section.limit * BYTES_PER_TOKEN_CAP
            try:
                data, size = read_bounded(path, cap)
                text = data.decode("utf-8", errors="ignore" if size > cap else "strict")
            except UnreadableFile as exc:
                section.loaded, section.text, section.stamp = False, "", stamp
                section.error = f"no se pudo leer: {exc}"
                log.warning("cannot read %s: %s", path, exc)
                continue
            except (OSError, UnicodeDecodeError) as exc:
                section.loaded, section.text, section.stamp = False, "", stamp
                section.error = f"no se pudo leer ({type(exc).__name__})"
                log.warning("cannot read %s: %s", path, exc)
                continue
            self._set(section, text, stamp)
            if size > cap:
                section.truncated = True
                section.error = (f"el archivo ocupa {size:,} bytes; solo se leyeron los "
                                 f"primeros {cap:,}")
        return changed

    def _set(self, section: LoadedSection, text: str, stamp: tuple[int, int] | None) -> None:
        raw = self.tokens.count(text)
        section.raw_tokens = raw
        section.stamp = stamp
        section.loaded = True
        section.error = None
        if raw > section.limit:
            section.text = self._truncate(section, text, raw)
            section.truncated = True
        else:
            section.text = text
            section.truncated = False
        section.tokens = self.tokens.count(section.text)

    def _truncate(self, section: LoadedSection, text: str, raw: int) -> str:
        marker = say("section_truncated", file=section.spec.file_name, tokens=raw,
                     limit=section.limit)
        room = max(0, section.limit - self.tokens.count(marker) - 2)
        return self.tokens.truncate(text, room).rstrip() + marker

    def check_size(self, spec: SectionSpec, text: str) -> str | None:
        """The reason an edit is too big for its section, or None when it fits."""
        limit = self.budgets.get(spec.name, 2_000)
        tokens = self.tokens.count(text)
        if tokens > limit:
            return say("section_over_budget", tokens=tokens, section=spec.name, limit=limit)
        return None

    async def write(self, spec: SectionSpec, text: str) -> None:
        """Persist an agent edit and take it as loaded without waiting for the next refresh."""
        path = self.path(spec)

        def _do() -> tuple[int, int]:
            atomic_write_text(path, text)
            st = path.stat()
            return (st.st_mtime_ns, st.st_size)

        stamp = await asyncio.to_thread(_do)
        self._set(self.sections[spec.name], text, stamp)

    def loaded_count(self) -> tuple[int, int]:
        loaded = sum(1 for s in self.sections.values() if s.loaded)
        return loaded, len(self.sections)
