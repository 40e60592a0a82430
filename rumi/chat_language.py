"""Which language each chat is answered in, remembered so later notices speak it too.

`agent.language` is "es", "en" or "auto". Fixed: every chat gets that language. "auto": the
language a channel reports for the person writing (Telegram's `language_code`, the terminal's
locale) wins while Rumi speaks it; otherwise the one last seen in that chat. It is kept in
`chats/<id>/language` because a reminder or a memory notice may fire after a restart, with
no message in hand to read the person's language from.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from rumi import messages as msg
from rumi.fileio import atomic_write_text
from rumi.paths import ChatPaths, chats_root

log = logging.getLogger(__name__)

AUTO = "auto"
FILE_NAME = "language"


def locale_language(environ: dict[str, str] | None = None) -> str | None:
    """The language of the terminal's locale (LC_ALL, then LC_MESSAGES, then LANG), if spoken."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value and value not in ("C", "POSIX") and not value.startswith("C."):
            return msg.normalize_language(value.split(".", 1)[0])
    return None


class ChatLanguages:
    """The chat → language choice; `data_dir=None` keeps it in memory only (tests, tools)."""

    def __init__(self, setting: str = msg.DEFAULT_LANGUAGE, data_dir: Path | None = None,
                 *, default: str | None = None) -> None:
        self.setting = setting
        self.data_dir = data_dir
        fixed = msg.normalize_language(setting)
        self.fixed = fixed if setting != AUTO else None
        self.default = fixed or msg.normalize_language(default) or msg.DEFAULT_LANGUAGE
        self._known: dict[str, str] = {}

    def for_chat(self, chat_id: str) -> str:
        """The language to speak in `chat_id` now, without a fresh hint (notices, reminders)."""
        if self.fixed is not None:
            return self.fixed
        return self._known.get(chat_id, self.default)

    async def resolve(self, chat_id: str, hint: str | None = None, *,
                      remember: bool = True) -> str:
        """The language for a message from `chat_id`; with "auto" a spoken hint is remembered
        (`remember=False`: not, e.g. for a stranger whose messages must leave nothing behind)."""
        if self.fixed is not None:
            return self.fixed
        code = msg.normalize_language(hint)
        if code is None:
            return self.for_chat(chat_id)
        if not remember:
            return code
        if self._known.get(chat_id) != code:
            self._known[chat_id] = code
            await self._save(chat_id, code)
        return code

    async def load(self) -> int:
        """Read every remembered choice (at start, before queued notices go out)."""
        if self.fixed is not None or self.data_dir is None:
            return 0
        found = await asyncio.to_thread(_read_all, chats_root(self.data_dir))
        for chat_id, code in found.items():
            self._known.setdefault(chat_id, code)
        return len(found)

    async def _save(self, chat_id: str, code: str) -> None:
        if self.data_dir is None:
            return
        try:
            path = ChatPaths(self.data_dir, chat_id).root / FILE_NAME
            await asyncio.to_thread(atomic_write_text, path, code + "\n")
        except (OSError, ValueError) as exc:   # still right in memory until the next restart
            log.warning("could not remember the language of chat %s: %s", chat_id, exc)


def _read_all(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    if not root.is_dir():
        return found
    for path in root.glob(f"*/{FILE_NAME}"):
        try:
            code = msg.normalize_language(path.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            continue
        if code is not None:
            found[path.parent.name] = code
    return found
