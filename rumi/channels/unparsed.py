"""An update python-telegram-bot cannot parse is set aside; polling goes on.

PTB parses a whole getUpdates batch at once (`Update.de_list`): one update it cannot read
(`entities` as an object, an entity `{}`, a poll without a field PTB requires, JSON nested
deeper than Python's parser goes) fails the batch, the offset is never confirmed, and the
same batch comes back forever — no chat is answered again and every try logs a traceback.

So the getUpdates request parses the answer itself (PTB's documented hook,
`BaseRequest.parse_json_payload`): each update is tried alone, and one that fails is
replaced by a bare `{"update_id": N}` that PTB reads fine. PTB then moves the offset past it
like past any other, no handler matches it, and `JournaledQueue` records it (bounded,
secrets masked) in `inbox/unparsed.jsonl`. The failure is logged once per update id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import deque
from pathlib import Path
from typing import Any

from telegram import Update
from telegram.error import TelegramError
from telegram.request import HTTPXRequest

from rumi.fileio import atomic_write_bytes
from rumi.secret_mask import mask_secrets

log = logging.getLogger(__name__)

UNPARSED = "rumi_unparsed"   # the placeholder's field: PTB keeps it in `Update.api_kwargs`
EXCERPT_CHARS = 1_000
KEEP_RECORDS = 50
_LOGGED_KEEP = 1_000
_UPDATE_ID = re.compile(r'"update_id"\s*:\s*(\d+)')
_OK = re.compile(r'^\s*\{\s*"ok"\s*:\s*true')


class UpdatesRequest(HTTPXRequest):
    """The getUpdates connection: an update PTB cannot parse becomes a bare placeholder."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._logged: deque[int] = deque(maxlen=_LOGGED_KEEP)

    def parse_json_payload(self, payload: bytes) -> dict[str, Any]:  # type: ignore[override]
        text = payload.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except RecursionError:
            data = _shallow(text)
        except ValueError as exc:
            log.error("Telegram answered something that is not JSON (%d bytes)", len(payload))
            raise TelegramError("Invalid server response") from exc
        result = data.get("result") if isinstance(data, dict) else None
        if isinstance(result, list):
            data["result"] = [self._checked(item) for item in result]
        return data  # type: ignore[no-any-return]

    def _checked(self, item: Any) -> Any:
        if isinstance(item, _Raw):
            return self._placeholder(item.update_id, item.text, "RecursionError: nested "
                                     "deeper than the JSON parser goes")
        if not isinstance(item, dict) or not isinstance(item.get("update_id"), int):
            return item
        try:
            Update.de_json(item, None)
        except Exception as exc:
            raw = json.dumps(item, ensure_ascii=False)
            return self._placeholder(item["update_id"], raw, f"{type(exc).__name__}: {exc}")
        return item

    def _placeholder(self, update_id: int | None, raw: str, error: str) -> Any:
        if update_id is None:   # nothing to move the offset past: PTB will retry the batch
            raise TelegramError("an update without an update_id could not be parsed")
        error = mask_secrets(error)[:300]
        if update_id not in self._logged:
            self._logged.append(update_id)
            log.warning("telegram update %s cannot be parsed (%s); set aside in "
                        "inbox/unparsed.jsonl, polling goes on", update_id, error)
        record = {"error": error, "excerpt": mask_secrets(raw[:EXCERPT_CHARS]),
                  "size": len(raw)}
        return {"update_id": update_id, UNPARSED: record}


def unparsed_record(update: Any) -> dict[str, Any] | None:
    """What `UpdatesRequest` kept of an update it could not parse, or None."""
    extra = getattr(update, "api_kwargs", None) or {}
    record = extra.get(UNPARSED)
    return record if isinstance(record, dict) else None


class UnparsedLog:
    """`inbox/unparsed.jsonl`: the last `KEEP_RECORDS` updates that could not be parsed, for
    whoever looks into why a message went unanswered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def add(self, update_id: int, record: dict[str, Any], at: float) -> None:
        line = json.dumps({"update_id": update_id, "at": at, **record}, ensure_ascii=False)
        async with self._lock:
            await asyncio.to_thread(self._append, line)

    def _append(self, line: str) -> None:
        lines = []
        if self.path.exists():
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        lines = [*lines[-(KEEP_RECORDS - 1):], line]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, ("\n".join(lines) + "\n").encode("utf-8"))


class _Raw:
    """One update's text that `json.loads` could not take (too deep)."""

    def __init__(self, text: str) -> None:
        self.text = text
        found = _UPDATE_ID.search(text)   # Telegram writes update_id first in each update
        self.update_id = int(found.group(1)) if found else None


def _shallow(text: str) -> dict[str, Any]:
    """The answer `{"ok": …, "result": [u, …]}` parsed without recursion past its updates:
    each update is cut out by a scan of brackets and strings and parsed alone; one still too
    deep is kept as `_Raw`."""
    depth, in_string, escaped = 0, False, False
    key, string_start, item_start = "", 0, -1
    in_result = False
    items: list[str] = []
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1:
                    key = text[string_start + 1:i]
            continue
        if char == '"':
            in_string, string_start = True, i
        elif char in "{[":
            if depth == 1 and char == "[" and key == "result":
                in_result = True
            elif in_result and depth == 2:
                item_start = i
            depth += 1
        elif char in "}]":
            depth -= 1
            if in_result and depth == 2 and item_start >= 0:
                items.append(text[item_start:i + 1])
                item_start = -1
            elif in_result and depth == 1:
                in_result = False
    if not _OK.search(text):
        raise TelegramError("Invalid server response")
    parsed: list[Any] = []
    for item in items:
        try:
            parsed.append(json.loads(item))
        except RecursionError:
            parsed.append(_Raw(item))
        except ValueError as exc:
            raise TelegramError("Invalid server response") from exc
    return {"ok": True, "result": parsed}
