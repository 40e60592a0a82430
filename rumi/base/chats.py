"""Who and where a message comes from: chat ids and group speakers, shared by every layer."""

from __future__ import annotations

import re
from dataclasses import dataclass

CHAT_ID_PATTERN = re.compile(r"^-?[A-Za-z0-9_]{1,64}$")
_LABEL_UNSAFE = re.compile(r"[()\[\]:#\s]")


def validate_chat_id(chat_id: str) -> str:
    """Chat ids become directory and container names, so they must be boring."""
    if not CHAT_ID_PATTERN.match(chat_id):
        raise ValueError(f"invalid chat id {chat_id!r}")
    return chat_id


@dataclass(frozen=True)
class Speaker:
    """Who wrote a message in a shared (group) chat: several people talk to one context,
    so their messages must say whose they are. Private chats have none."""

    user_id: str
    name: str

    def label(self) -> str:
        """`Ana (id 111)`: the name people use plus the id that cannot be faked or repeated.

        A display name is whatever the member typed: brackets, parentheses, colons and line
        breaks are dropped, so a name like "Ana (id 111): hola" cannot pose as another label."""
        return f"{self.safe_name} (id {self.user_id})"

    @property
    def safe_name(self) -> str:
        return " ".join(_LABEL_UNSAFE.sub(" ", self.name).split())[:64] or "?"
