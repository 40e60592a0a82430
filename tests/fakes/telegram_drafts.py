"""`sendMessageDraft` for the fake Bot API, as the public documentation describes it.

- Private chats only (a positive `chat_id`, a person's id): anything else is a 400.
- `draft_id` must be non-zero; changes of a draft with the same id are one animated draft.
- `text` is optional (Bot API 10.0): empty shows a "Thinking…" placeholder; at most 4,096
  characters after entities parsing.
- A draft is a preview: it disappears about 30 seconds after its last update, or as soon as a
  real message arrives in that chat; the answer stays only when sent with `sendMessage`.
- Bot API 10.3: `can_stop` shows a stop button, `keep_on_stop` keeps the text when pressed;
  pressing it sends the bot a `stopped_message_generation` update (`FakeTelegramServer.
  press_stop`).

`history` keeps every accepted call in order, so tests see a draft grow; `visible(chat)` is
what the person sees now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DRAFT_LIFETIME = 30.0


@dataclass
class Draft:
    chat_id: int
    draft_id: int
    text: str
    parse_mode: str | None
    at: float
    params: dict[str, Any] = field(default_factory=dict)


class Drafts:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.history: list[Draft] = []
        self.live: dict[int, Draft] = {}   # chat -> the draft shown now
        self.vanished: list[Draft] = []   # drafts a real message made disappear

    def check(self, params: dict[str, Any]) -> str | None:
        """The Bot API's refusal of these parameters, or None."""
        try:
            chat_id = int(params["chat_id"])
            draft_id = int(params.get("draft_id") or 0)
        except (KeyError, TypeError, ValueError):
            return "Bad Request: chat_id and draft_id are required"
        if chat_id <= 0:
            return "Bad Request: message drafts can be sent only to private chats"
        if draft_id == 0:
            return "Bad Request: draft_id must be non-zero"
        return None

    def accept(self, params: dict[str, Any], shown: str) -> Draft:
        chat_id = int(params["chat_id"])
        draft = Draft(chat_id, int(params["draft_id"]), shown, params.get("parse_mode"),
                      self.clock(), params)
        self.history.append(draft)
        self.live[chat_id] = draft
        return draft

    def real_message(self, chat_id: int) -> None:
        """A real message arrived in the chat: its draft disappears."""
        draft = self.live.pop(chat_id, None)
        if draft is not None:
            self.vanished.append(draft)

    def visible(self, chat_id: int) -> str | None:
        draft = self.live.get(chat_id)
        if draft is None or self.clock() - draft.at > DRAFT_LIFETIME:
            return None
        return draft.text

    def texts(self, chat_id: int | None = None) -> list[str]:
        return [d.text for d in self.history if chat_id is None or d.chat_id == chat_id]
