"""MEMORY.md's format: the sections, the header a person reads, rendering and parsing.

Pure text in, text out (no files, no store): `render` writes the stable Markdown Rumi keeps,
`parse` reads back what a person saved, and says which line it cannot understand.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rumi import messages as msg
from rumi.memory.files.markdown_merge import Item
from rumi.memory.store.models import Memory, MemoryType

SECTIONS: tuple[tuple[MemoryType, str], ...] = (
    (MemoryType.PROFILE, "Perfil"),
    (MemoryType.FACT, "Hechos"),
    (MemoryType.ENTITY, "Personas y cosas"),
    (MemoryType.PREFERENCE, "Preferencias"),
    (MemoryType.DECISION, "Decisiones"),
)
TITLE_TO_TYPE = {title.casefold(): mtype for mtype, title in SECTIONS}
RENDERED_TYPES = tuple(t for t, _ in SECTIONS)
HEADER = """# Memoria de Rumi

> Rumi mantiene este archivo y tú puedes editarlo. Cada línea «- …» es un recuerdo:
> bórrala para olvidarlo, cámbiala para corregirlo o añade una línea nueva (sin [#número],
> o copiando otra y cambiándola) en la sección que corresponda.
> Formato: `- [#id] **clave**: texto` (la clave es opcional).
"""
VERSION_LINE = "<!-- rumi:v{version} · no borres esta línea: así sé desde qué copia editas -->\n"
MAX_ID = 2**63 - 1   # SQLite's INTEGER and PostgreSQL's bigint: a larger id cannot be stored
ITEM = re.compile(r"^[-*]\s+(?:\[#(\d+)\]\s*)?(?:\*\*([^*]+?)\*\*\s*:\s*)?(.*)$")
Entry = Item


class MalformedMemoryFile(ValueError):
    """The person's edit cannot be understood; the message says where (Spanish, user-facing)."""


def is_rendered(memory: Memory) -> bool:
    return (memory.type in RENDERED_TYPES
            and (memory.metadata or {}).get("category") != "self_correction")


def render(memories: Sequence[Memory], version: int | None = None) -> str:
    """Stable Markdown: fixed section order, then by key (keyless last), then by id."""
    out = [HEADER]
    if version is not None:
        out.append(VERSION_LINE.format(version=version))
    for mtype, title in SECTIONS:
        chosen = [m for m in memories if m.type == mtype and is_rendered(m)]
        chosen.sort(key=lambda m: (m.key is None, m.key or "", m.id))
        out.append(f"\n## {title}\n")
        if chosen:
            out.append("\n")
        for memory in chosen:
            text = " ".join(memory.content.split())
            key = f"**{memory.key}**: " if memory.key else ""
            out.append(f"- [#{memory.id}] {key}{text}\n")
    return "".join(out)


def parse(text: str) -> list[Entry]:
    """Read a MEMORY.md back (BOM and CRLF accepted); MalformedMemoryFile names the first line
    that is not understood. Repeated ids are allowed: the three-way merge decides which copy is
    the original."""
    entries: list[Entry] = []
    current: MemoryType | None = None
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        raw = raw.removeprefix("\ufeff")
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(">") or stripped.startswith("<!--"):
            continue
        if line.startswith("# "):
            continue
        if line.startswith("## "):
            title = line[3:].strip().casefold()
            if title not in TITLE_TO_TYPE:
                known = ", ".join(t for _, t in SECTIONS)
                raise MalformedMemoryFile(msg.MD_LINE.format(
                    line=number, reason=msg.MD_UNKNOWN_SECTION.format(title=line[3:].strip(),
                                                                      known=known)))
            current = TITLE_TO_TYPE[title]
            continue
        if raw.startswith(("  ", "\t")) and entries and not stripped.startswith(("-", "*")):
            last = entries[-1]
            entries[-1] = Entry(last.type, f"{last.content} {stripped}", last.key,
                                last.memory_id, last.line)
            continue
        match = ITEM.match(stripped)
        if match is None:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=number,
                                                         reason=msg.MD_NOT_AN_ITEM))
        if current is None:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=number,
                                                         reason=msg.MD_OUTSIDE_SECTION))
        raw_id, key, content = match.groups()
        content = content.strip()
        if not content:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=number,
                                                         reason=msg.MD_EMPTY_ITEM))
        memory_id = int(raw_id) if raw_id else None
        if memory_id is not None and memory_id > MAX_ID:
            raise MalformedMemoryFile(msg.MD_LINE.format(
                line=number, reason=msg.MD_ID_TOO_LARGE.format(memory_id=_clip_id(raw_id))))
        key = "_".join(key.strip().split()) if key and key.strip() else None
        entries.append(Entry(current, content, key, memory_id, number))
    return entries


def _clip_id(raw_id: str) -> str:
    """A pasted id may be thousands of digits long: the note quotes its start."""
    return raw_id if len(raw_id) <= 24 else raw_id[:20] + "…"
