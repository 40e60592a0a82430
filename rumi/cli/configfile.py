"""Edit the person's config.toml without losing what they wrote in it.

tomlkit (not tomllib + a writer) because a config file is also documentation: a round trip
through plain dicts would drop every comment and reorder the keys, and `rumi setup` or
`rumi pairing approve` must change two values, not rewrite the file. The file holds the Groq key
and the bot token, so it is replaced atomically and left readable by its owner only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from rumi.config import ConfigError
from rumi.fileio import atomic_write_text, ensure_private_dir

HEADER = (
    "Rumi's settings, written by `rumi setup` (run it again to change them).\n"
    "Every setting is described in config.example.toml and docs/configuration.md;\n"
    "edit freely: `rumi setup` and `rumi pairing approve` keep your comments."
)


def read_document(path: Path) -> tomlkit.TOMLDocument:
    """The file as an editable document, or a new one with a short header."""
    path = path.expanduser()
    if not path.exists():
        doc = tomlkit.document()
        for line in HEADER.splitlines():
            doc.add(tomlkit.comment(line))
        doc.add(tomlkit.nl())
        return doc
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"{path}: cannot edit it ({exc}); nothing was changed") from exc


def set_value(doc: tomlkit.TOMLDocument, dotted: str, value: Any) -> None:
    """Set `section.key` (or a top-level key), creating the section at the end if needed."""
    section, _, key = dotted.rpartition(".")
    if not section:
        doc[key] = value
        return
    table = doc.get(section)
    if table is None:
        table = tomlkit.table()
        doc[section] = table
    table[key] = value


def get_value(doc: tomlkit.TOMLDocument, dotted: str, default: Any = None) -> Any:
    section, _, key = dotted.rpartition(".")
    table = doc.get(section) if section else doc
    if table is None or key not in table:
        return default
    return table[key]


def add_allowed_user(doc: tomlkit.TOMLDocument, user_id: int) -> bool:
    """Append a Telegram user id to telegram.allowed_users; False when already there."""
    current = [int(u) for u in get_value(doc, "telegram.allowed_users", [])]
    if user_id in current:
        return False
    set_value(doc, "telegram.allowed_users", [*current, user_id])
    return True


def write_private(path: Path, doc: tomlkit.TOMLDocument) -> Path:
    """Replace the file atomically, mode 600, in a directory only its owner can enter when
    Rumi creates it (the default ~/.rumi is also the data dir)."""
    path = path.expanduser()
    ensure_private_dir(path.parent)
    atomic_write_text(path, tomlkit.dumps(doc))
    os.chmod(path, 0o600)
    return path
