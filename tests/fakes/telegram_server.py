"""A fake Telegram Bot API server, so the real python-telegram-bot client runs unchanged.

Speaks `/bot<token>/<method>` (getMe, getUpdates long poll, sendMessage, editMessageText,
sendChatAction, setMyCommands, getMyCommands, deleteWebhook, sendDocument multipart, getFile,
getChatMember: `set_admin(chat, user)` makes a group member an admin, everyone else a member,
sendMessageDraft: see tests/fakes/telegram_drafts.py, recorded in `drafts`)
and serves downloads under `/file/bot<token>/<path>`. Tests push user messages with
`push_text` / `push_document` / `push_voice` (or any JSON text with `push_raw`, as the real
server may deliver what a client sent) and read what the bot sent from `sent`. Like the
real API it rejects texts over 4096 characters and malformed HTML; `fail_parse(n)` makes the next n
formatted sends fail with "can't parse entities", and `flood(n, retry_after)` answers the next
n sendMessage calls with 429 flood control. `echo_path(n)` makes the next n formatted sends
fail with an error body that quotes the request path, token included (what a self-hosted Bot
API server or a proxy in front of one may answer), so tests can look for the token in logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.fakes.telegram_drafts import Drafts

MAX_TEXT = 4096
_RAW = "\0raw"   # an update queued as JSON text (push_raw)
HTML_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "a",
             "tg-spoiler", "span", "blockquote", "tg-emoji"}


@dataclass
class Sent:
    """One message the bot sent (sendMessage / sendDocument) or edited."""

    method: str
    chat_id: int
    message_id: int
    text: str | None = None
    parse_mode: str | None = None
    reply_to_message_id: int | None = None
    document_name: str | None = None
    document: bytes | None = None
    caption: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


class _HTMLCheck(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in HTML_TAGS:
            self.error = self.error or f"unsupported start tag \"{tag}\""
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.error = self.error or f"can't find end tag corresponding to start tag {tag}"
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_html(text: str) -> tuple[str | None, str]:
    """(error or None, the plain text Telegram would show)."""
    parser = _HTMLCheck()
    parser.feed(text)
    parser.close()
    if parser.stack and not parser.error:
        parser.error = f"can't find end tag corresponding to start tag {parser.stack[-1]}"
    if "<" in "".join(parser.text) and "&lt;" not in text:
        parser.error = parser.error or "unexpected '<'"
    return parser.error, "".join(parser.text)


class FakeTelegramServer:
    def __init__(self, token: str = "777:TEST-token", *, bot_username: str = "rumi_test_bot"
                 ) -> None:
        self.token = token
        self.bot_id = int(token.split(":", 1)[0]) if token.split(":", 1)[0].isdigit() else 777
        self.bot_username = bot_username
        self.updates: list[dict[str, Any]] = []
        self.sent: list[Sent] = []
        self.edits: list[Sent] = []
        self.actions: list[tuple[int, str]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.commands: list[dict[str, Any]] = []
        self.commands_by_language: dict[str, list[dict[str, Any]]] = {}   # "" = the default
        self.files: dict[str, tuple[str, bytes]] = {}
        self.parse_failures = 0
        self.path_echoes = 0
        self.floods: list[int] = []
        self.edit_floods: list[int] = []
        self.deleted: list[tuple[int, int]] = []
        self.answered_callbacks: list[str] = []
        self.admins: dict[int, dict[int, str]] = {}   # chat -> {user: creator|administrator}
        # called once a sent message is accepted, before the bot gets its answer (a test may
        # kill the bot there: the message is in the chat, the bot never learns its id)
        self.on_accepted: Callable[[Sent], None] | None = None
        self.drafts = Drafts()
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._file_ids = itertools.count(1)
        self._messages: dict[tuple[int, int], dict[str, Any]] = {}
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._closing = False
        self.port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What goes into `telegram.base_url` (PTB appends the token)."""
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    def bot_user(self) -> dict[str, Any]:
        return {"id": self.bot_id, "is_bot": True, "first_name": "Rumi",
                "username": self.bot_username, "can_join_groups": True,
                "can_read_all_group_messages": False, "supports_inline_queries": False}

    async def start(self) -> FakeTelegramServer:
        app = web.Application(client_max_size=50 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            self._closing = True
            async with self._changed:
                self._changed.notify_all()
            await self._runner.cleanup()
            self._runner = None

    # -- what tests do -----------------------------------------------------------------------

    def push_text(self, user_id: int, chat_id: int, text: str, *, reply_to: int | None = None,
                  chat_type: str = "private", first_name: str = "Ana",
                  language_code: str | None = None) -> int:
        """Queue an incoming text message (from a person whose app uses `language_code`, if
        given); returns its message_id."""
        message = self._incoming(user_id, chat_id, chat_type, first_name, reply_to)
        if language_code is not None:
            message["from"]["language_code"] = language_code
        message["text"] = text
        entities = []
        if text.startswith("/"):
            entities.append({"type": "bot_command", "offset": 0,
                             "length": len(text.split(" ", 1)[0])})
        mention = f"@{self.bot_username}"
        if mention in text and not text.startswith("/"):
            entities.append({"type": "mention", "offset": text.index(mention),
                             "length": len(mention)})
        if entities:
            message["entities"] = entities
        self._push({"message": message})
        return message["message_id"]

    def push_message(self, user_id: int, chat_id: int, **fields: Any) -> int:
        """Queue a message with arbitrary fields, as any client can produce within the Bot
        API schema (a field given as None is left out, like the optional `from`)."""
        message = self._incoming(user_id, chat_id, "private", "Ana", None)
        message.update(fields)
        for name in [k for k, v in message.items() if v is None]:
            del message[name]
        self._push({"message": message})
        return message["message_id"]

    def push_raw(self, body: str) -> int:
        """Queue an update given as JSON text (`{"message": …}` without its id), delivered
        byte for byte inside the getUpdates answer: what a client can make Telegram carry
        (any nesting, any shape) reaches the bot as it was. Returns its update_id."""
        update_id = next(self._update_ids)
        self.updates.append({"update_id": update_id, _RAW: body})
        asyncio.get_running_loop().create_task(self._notify())
        return update_id

    def push_document(self, user_id: int, chat_id: int, filename: str, data: bytes, *,
                      caption: str | None = None, mime_type: str = "application/octet-stream",
                      chat_type: str = "private") -> int:
        message = self._incoming(user_id, chat_id, chat_type, "Ana", None)
        file_id = self._store_file(filename, data)
        message["document"] = {"file_id": file_id, "file_unique_id": f"u{file_id}",
                               "file_name": filename, "mime_type": mime_type,
                               "file_size": len(data)}
        if caption is not None:
            message["caption"] = caption
            if caption.startswith("/"):
                message["caption_entities"] = [{"type": "bot_command", "offset": 0,
                                                "length": len(caption.split(" ", 1)[0])}]
        self._push({"message": message})
        return message["message_id"]

    def push_photo(self, user_id: int, chat_id: int, data: bytes, *,
                   caption: str | None = None, chat_type: str = "private",
                   thumbnail: bytes = b"thumb") -> int:
        """Queue a photo as Telegram sends it: several sizes, the largest last (`data`); each
        size is its own file for getFile."""
        message = self._incoming(user_id, chat_id, chat_type, "Ana", None)
        sizes = []
        for blob, side in ((thumbnail, 90), (data, 1280)):
            file_id = self._store_file("photo.jpg", blob)
            sizes.append({"file_id": file_id, "file_unique_id": f"u{file_id}", "width": side,
                          "height": side * 3 // 4, "file_size": len(blob)})
        message["photo"] = sizes
        if caption is not None:
            message["caption"] = caption
        self._push({"message": message})
        return message["message_id"]

    def push_voice(self, user_id: int, chat_id: int, data: bytes, *, duration: int = 3,
                   kind: str = "voice", filename: str = "nota.mp3",
                   mime_type: str = "audio/ogg", chat_type: str = "private",
                   file_size: int | None = None) -> int:
        """Queue a voice note (`kind="voice"`) or an audio file (`kind="audio"`); its bytes
        are served by getFile + the file download like a document's."""
        message = self._incoming(user_id, chat_id, chat_type, "Ana", None)
        file_id = self._store_file("voice.ogg" if kind == "voice" else filename, data)
        media: dict[str, Any] = {"file_id": file_id, "file_unique_id": f"u{file_id}",
                                 "duration": duration, "mime_type": mime_type,
                                 "file_size": len(data) if file_size is None else file_size}
        if kind == "audio":
            media["file_name"] = filename
        message[kind] = media
        self._push({"message": message})
        return message["message_id"]

    def push_callback(self, user_id: int, chat_id: int, message_id: int, data: str) -> str:
        """Queue a press of an inline button on bot message `message_id`; returns the query id
        (answered queries are listed in `answered_callbacks`)."""
        query_id = f"cb{next(self._update_ids)}"
        message = self._messages.get((chat_id, message_id)) or self._bot_message(chat_id)
        self._push({"callback_query": {
            "id": query_id, "chat_instance": f"ci{chat_id}", "data": data, "message": message,
            "from": {"id": user_id, "is_bot": False, "first_name": "Ana"}}})
        return query_id

    def set_admin(self, chat_id: int, user_id: int, status: str = "administrator") -> None:
        """getChatMember will answer `status` (creator or administrator) for this member."""
        self.admins.setdefault(chat_id, {})[user_id] = status

    def fail_parse(self, count: int = 1) -> None:
        """The next `count` sends with a parse_mode fail like Telegram's entity parser."""
        self.parse_failures += count

    def echo_path(self, count: int = 1) -> None:
        """The next `count` sends with a parse_mode fail with a 400 whose description quotes
        the request's path (`/bot<token>/sendMessage`)."""
        self.path_echoes += count

    def flood(self, count: int = 1, retry_after: int = 1) -> None:
        """The next `count` sendMessage calls fail with 429 flood control."""
        self.floods.extend([retry_after] * count)

    def flood_edits(self, count: int = 1, retry_after: int = 1) -> None:
        """The next `count` editMessageText calls fail with 429 flood control."""
        self.edit_floods.extend([retry_after] * count)

    def texts(self, chat_id: int | None = None) -> list[str]:
        return [s.text or "" for s in self.sent
                if s.method == "sendMessage" and (chat_id is None or s.chat_id == chat_id)]

    async def wait_for_sent(self, n: int, timeout: float = 10.0) -> list[Sent]:
        """Wait until at least `n` messages were sent; returns the first `n`."""
        async def enough() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.sent) >= n)

        try:
            await asyncio.wait_for(enough(), timeout)
        except TimeoutError:
            got = [(s.method, (s.text or s.caption or "")[:80]) for s in self.sent]
            raise TimeoutError(f"expected {n} sent messages, got {len(self.sent)}: {got}"
                               ) from None
        return self.sent[:n]

    async def wait_for_call(self, method: str, timeout: float = 10.0) -> dict[str, Any]:
        async def seen() -> dict[str, Any]:
            async with self._changed:
                await self._changed.wait_for(lambda: any(m == method for m, _ in self.calls))
            return next(p for m, p in self.calls if m == method)

        return await asyncio.wait_for(seen(), timeout)

    # -- internals ---------------------------------------------------------------------------

    def _incoming(self, user_id: int, chat_id: int, chat_type: str, first_name: str,
                  reply_to: int | None) -> dict[str, Any]:
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat["first_name"] = first_name
        else:
            chat["title"] = "Grupo de prueba"
        message: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": {"id": user_id, "is_bot": False, "first_name": first_name},
        }
        if reply_to is not None:
            original = self._messages.get((chat_id, reply_to))
            if original is not None:
                message["reply_to_message"] = original
        self._messages[(chat_id, message["message_id"])] = message
        return message

    def _push(self, update: dict[str, Any]) -> None:
        update["update_id"] = next(self._update_ids)
        self.updates.append(update)
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _store_file(self, filename: str, data: bytes) -> str:
        file_id = f"file{next(self._file_ids)}"
        # Telegram names the stored file itself ("documents/file_3.pdf"): the client's name
        # lives only in `file_name`, its extension kept when it is plain
        suffix = Path(filename).suffix
        plain = suffix if suffix.isascii() and suffix[1:].isalnum() else ""
        self.files[file_id] = (f"documents/{file_id}{plain}", data)
        return file_id

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    def _error(code: int, description: str) -> web.Response:
        return web.json_response({"ok": False, "error_code": code, "description": description},
                                 status=code)

    async def _params(self, request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
        params: dict[str, Any] = dict(request.query)
        files: dict[str, Any] = {}
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, web.FileField):
                    files[key] = (value.filename, value.file.read())
                else:
                    params[key] = value
        return params, files

    async def _dispatch(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return self._error(401, "Unauthorized")
        method = request.match_info["method"]
        params, files = await self._params(request)
        self.calls.append((method, params))
        await self._notify()
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return self._error(404, "Not Found: method not found")
        return await handler(params, files)

    async def _m_getMe(self, params: dict[str, Any], files: dict[str, Any]) -> web.Response:
        return self._ok(self.bot_user())

    async def _m_deleteWebhook(self, params: dict[str, Any], files: dict[str, Any]
                               ) -> web.Response:
        return self._ok(True)

    async def _m_setMyCommands(self, params: dict[str, Any], files: dict[str, Any]
                               ) -> web.Response:
        commands = params.get("commands", "[]")
        parsed = json.loads(commands) if isinstance(commands, str) else commands
        language = str(params.get("language_code") or "")
        self.commands_by_language[language] = parsed
        if not language:
            self.commands = parsed
        return self._ok(True)

    async def _m_getMyCommands(self, params: dict[str, Any], files: dict[str, Any]
                               ) -> web.Response:
        return self._ok(self.commands)

    async def _m_getChatMember(self, params: dict[str, Any], files: dict[str, Any]
                               ) -> web.Response:
        chat_id, user_id = int(params["chat_id"]), int(params["user_id"])
        status = self.admins.get(chat_id, {}).get(user_id, "member")
        member: dict[str, Any] = {"status": status,
                                  "user": {"id": user_id, "is_bot": False, "first_name": "M"}}
        if status == "creator":
            member["is_anonymous"] = False
        elif status == "administrator":
            member.update({name: True for name in (
                "can_be_edited", "can_manage_chat", "can_delete_messages",
                "can_manage_video_chats", "can_restrict_members", "can_promote_members",
                "can_change_info", "can_invite_users", "can_post_stories", "can_edit_stories",
                "can_delete_stories")}, is_anonymous=False)
        return self._ok(member)

    async def _m_sendChatAction(self, params: dict[str, Any], files: dict[str, Any]
                                ) -> web.Response:
        self.actions.append((int(params["chat_id"]), str(params.get("action"))))
        return self._ok(True)

    async def _m_getUpdates(self, params: dict[str, Any], files: dict[str, Any]
                            ) -> web.Response:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        self.updates = [u for u in self.updates if u["update_id"] >= offset]
        if not self.updates and timeout > 0:
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: bool(self.updates) or self._closing),
                        timeout,
                    )
        limit = int(params.get("limit") or 100)
        # Telegram writes each update's update_id first, then its content
        parts = [json.dumps(u) if _RAW not in u else
                 f'{{"update_id":{u["update_id"]},' + u[_RAW].lstrip()[1:]
                 for u in self.updates[:limit]]
        return web.Response(text='{"ok":true,"result":[' + ",".join(parts) + "]}",
                            content_type="application/json")

    def _check_text(self, text: str, parse_mode: str | None) -> str | None:
        if not text.strip():
            return "Bad Request: message text is empty"
        shown = text
        if parse_mode:
            if self.parse_failures > 0:
                self.parse_failures -= 1
                return "Bad Request: can't parse entities: unsupported start tag at byte offset 0"
            if parse_mode.upper() == "HTML":
                error, shown = check_html(text)
                if error:
                    return f"Bad Request: can't parse entities: {error}"
        if len(shown) > MAX_TEXT:
            return "Bad Request: message is too long"
        return None

    async def _m_sendMessage(self, params: dict[str, Any], files: dict[str, Any]
                             ) -> web.Response:
        chat_id = int(params["chat_id"])
        if self.floods:
            wait = self.floods.pop(0)
            return web.json_response(
                {"ok": False, "error_code": 429, "parameters": {"retry_after": wait},
                 "description": f"Too Many Requests: retry after {wait}"}, status=429)
        text = str(params.get("text", ""))
        parse_mode = params.get("parse_mode")
        if parse_mode and self.path_echoes > 0:
            self.path_echoes -= 1
            return self._error(400, "Bad Request: can't parse entities in request "
                                    f"POST /bot{self.token}/sendMessage")
        problem = self._check_text(text, parse_mode)
        if problem:
            return self._error(400, problem)
        reply_to = _reply_to(params)
        message = self._bot_message(chat_id, text=text)
        sent = Sent("sendMessage", chat_id, message["message_id"], text=text,
                    parse_mode=parse_mode, reply_to_message_id=reply_to, params=params)
        await self._record(sent)
        if self.on_accepted is not None:
            self.on_accepted(sent)
        return self._ok(message)

    async def _m_sendMessageDraft(self, params: dict[str, Any], files: dict[str, Any]
                                  ) -> web.Response:
        problem = self.drafts.check(params)
        if problem:
            return self._error(400, problem)
        text = str(params.get("text") or "")
        shown = text
        if text.strip():
            problem = self._check_text(text, params.get("parse_mode"))
            if problem:
                return self._error(400, problem)
            if str(params.get("parse_mode") or "").upper() == "HTML":
                shown = check_html(text)[1]
        async with self._changed:
            self.drafts.accept(params, shown)
            self._changed.notify_all()
        return self._ok(True)

    def press_stop(self, chat_id: int, draft_id: int) -> None:
        """The person pressed the stop button of a draft sent with `can_stop` (Bot API 10.3)."""
        self._push({"stopped_message_generation": {
            "chat": {"id": chat_id, "type": "private", "first_name": "Ana"},
            "draft_id": draft_id}})

    async def _m_editMessageText(self, params: dict[str, Any], files: dict[str, Any]
                                 ) -> web.Response:
        chat_id = int(params["chat_id"])
        message_id = int(params["message_id"])
        text = str(params.get("text", ""))
        problem = self._check_text(text, params.get("parse_mode"))
        if problem:
            return self._error(400, problem)
        original = self._messages.get((chat_id, message_id))
        if original is None:
            return self._error(400, "Bad Request: message to edit not found")
        if self.edit_floods:
            wait = self.edit_floods.pop(0)
            return web.json_response(
                {"ok": False, "error_code": 429, "parameters": {"retry_after": wait},
                 "description": f"Too Many Requests: retry after {wait}"}, status=429)
        if original.get("text") == text and not params.get("reply_markup"):
            return self._error(400, "Bad Request: message is not modified: specified new "
                                    "message content and reply markup are exactly the same "
                                    "as a current content and reply markup of the message")
        original["text"] = text
        self.edits.append(Sent("editMessageText", chat_id, message_id, text=text,
                               parse_mode=params.get("parse_mode"), params=params))
        await self._notify()
        return self._ok(original)

    async def _m_deleteMessage(self, params: dict[str, Any], files: dict[str, Any]
                               ) -> web.Response:
        key = (int(params["chat_id"]), int(params["message_id"]))
        if key not in self._messages:
            return self._error(400, "Bad Request: message to delete not found")
        del self._messages[key]
        self.deleted.append(key)
        await self._notify()
        return self._ok(True)

    async def _m_answerCallbackQuery(self, params: dict[str, Any], files: dict[str, Any]
                                     ) -> web.Response:
        self.answered_callbacks.append(str(params.get("callback_query_id")))
        await self._notify()
        return self._ok(True)

    async def _m_editMessageReplyMarkup(self, params: dict[str, Any], files: dict[str, Any]
                                        ) -> web.Response:
        original = self._messages.get((int(params["chat_id"]), int(params["message_id"])))
        if original is None:
            return self._error(400, "Bad Request: message to edit not found")
        markup = params.get("reply_markup")
        if markup:
            original["reply_markup"] = json.loads(markup) if isinstance(markup, str) else markup
        else:
            original.pop("reply_markup", None)
        return self._ok(original)

    async def _m_sendDocument(self, params: dict[str, Any], files: dict[str, Any]
                              ) -> web.Response:
        chat_id = int(params["chat_id"])
        if "document" not in files:
            return self._error(400, "Bad Request: there is no document in the request")
        filename, data = files["document"]
        file_id = self._store_file(filename, data)
        message = self._bot_message(chat_id, caption=params.get("caption"))
        message["document"] = {"file_id": file_id, "file_unique_id": f"u{file_id}",
                               "file_name": filename, "file_size": len(data)}
        sent = Sent("sendDocument", chat_id, message["message_id"], document_name=filename,
                    document=data, caption=params.get("caption"),
                    parse_mode=params.get("parse_mode"), reply_to_message_id=_reply_to(params),
                    params=params)
        await self._record(sent)
        return self._ok(message)

    async def _m_getFile(self, params: dict[str, Any], files: dict[str, Any]) -> web.Response:
        file_id = str(params.get("file_id"))
        if file_id not in self.files:
            return self._error(400, "Bad Request: invalid file_id")
        path, data = self.files[file_id]
        return self._ok({"file_id": file_id, "file_unique_id": f"u{file_id}",
                         "file_size": len(data), "file_path": path})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return self._error(401, "Unauthorized")
        wanted = request.match_info["path"]
        for path, data in self.files.values():
            if path == wanted:
                return web.Response(body=data)
        return self._error(404, "Not Found")

    def _bot_message(self, chat_id: int, **content: Any) -> dict[str, Any]:
        message = {"message_id": next(self._message_ids), "date": int(time.time()),
                   "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                   "from": self.bot_user()}
        message.update({k: v for k, v in content.items() if v is not None})
        self._messages[(chat_id, message["message_id"])] = message
        return message

    async def _record(self, sent: Sent) -> None:
        async with self._changed:
            self.drafts.real_message(sent.chat_id)
            self.sent.append(sent)
            self._changed.notify_all()


def _reply_to(params: dict[str, Any]) -> int | None:
    if params.get("reply_to_message_id"):
        return int(params["reply_to_message_id"])
    raw = params.get("reply_parameters")
    if raw:
        data = json.loads(raw) if isinstance(raw, str) else raw
        return int(data["message_id"])
    return None
