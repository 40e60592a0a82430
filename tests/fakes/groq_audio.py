"""Groq's speech-to-text endpoint for the fake server: `POST /openai/v1/audio/transcriptions`.

Multipart like Groq's (`file`, `model`, optional `language`, `response_format`, `prompt`,
`temperature`). Answers `json` (`{"text", "x_groq"}`) or `verbose_json` (adds `task`,
`language`, `duration`, `segments`), and Groq's 400/404/413 error bodies for a file that is not
audio, an unknown model, or an upload over the limit (25 MB on the free tier:
console.groq.com/docs/speech-text, "Audio file limitations"). The file is read from the
multipart stream, so aiohttp's 1 MB body limit for the rest of the server does not apply.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, web

from tests.fakes.groq_catalogue import error_body

MODELS = frozenset({"whisper-large-v3-turbo", "whisper-large-v3"})
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
# How audio containers start: OGG (Telegram voice notes), RIFF/WAVE, MP3, FLAC, WebM, MP4/M4A.
_MAGIC = (b"OggS", b"RIFF", b"ID3", b"\xff\xfb", b"\xff\xf3", b"fLaC", b"\x1a\x45\xdf\xa3")


@dataclass
class ScriptedTranscript:
    text: str
    duration: float = 3.0
    language: str = "spanish"


def looks_like_audio(data: bytes) -> bool:
    return data.startswith(_MAGIC) or data[4:8] == b"ftyp"


class FakeTranscriptions:
    """Scripted transcripts in order (`enqueue`); every request is kept in `requests`."""

    def __init__(self, auth_error: Callable[[web.Request], web.Response | None]) -> None:
        self.auth_error = auth_error
        self.queue: deque[ScriptedTranscript] = deque()
        self.requests: list[dict[str, Any]] = []
        self.max_upload_bytes = MAX_UPLOAD_BYTES
        self.failures: deque[tuple[int, dict[str, Any], dict[str, str]]] = deque()

    def register(self, app: web.Application) -> None:
        app.router.add_post("/openai/v1/audio/transcriptions", self.handle)

    def enqueue(self, text: str, duration: float = 3.0, language: str = "spanish") -> None:
        self.queue.append(ScriptedTranscript(text, duration, language))

    def fail_next(self, status: int, body: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
        """Answer the next request with this Groq error (e.g. a 429 on ASH/ASD)."""
        self.failures.append((status, body, headers or {}))

    async def handle(self, request: web.Request) -> web.Response:
        if (denied := self.auth_error(request)) is not None:
            return denied
        if self.failures:
            status, body, headers = self.failures.popleft()
            await request.read()
            return web.json_response(body, status=status, headers=headers)
        if not request.content_type.startswith("multipart/"):
            return _bad("Request must be multipart/form-data")
        fields: dict[str, str] = {}
        file: tuple[str, bytes] | None = None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader) or part.name is None:
                continue
            if part.name == "file":
                data = await part.read()
                if len(data) > self.max_upload_bytes:
                    body = error_body("Request Entity Too Large", code="request_too_large")
                    return web.json_response(body, status=413)
                file = (part.filename or "file", bytes(data))
            else:
                fields[part.name] = await part.text()
        self.requests.append({**fields, "filename": file[0] if file else None,
                              "size": len(file[1]) if file else 0})
        model = fields.get("model", "")
        if model not in MODELS:
            body = error_body(f"The model `{model}` does not exist or you do not have access "
                              "to it.", code="model_not_found")
            return web.json_response(body, status=404)
        if file is None:
            return _bad("file or url must be provided")
        if not looks_like_audio(file[1]):
            return _bad("could not process file - is it a valid media file?")
        scripted = self.queue.popleft() if self.queue else ScriptedTranscript("")
        payload: dict[str, Any] = {"text": scripted.text,
                                   "x_groq": {"id": f"req_{uuid.uuid4().hex[:26]}"}}
        fmt = fields.get("response_format", "json")
        if fmt == "verbose_json":
            payload.update(task="transcribe", language=scripted.language,
                           duration=scripted.duration,
                           segments=[{"id": 0, "start": 0.0, "end": scripted.duration,
                                      "text": scripted.text}])
        elif fmt == "text":
            return web.Response(text=scripted.text)
        elif fmt != "json":
            return _bad(f"response_format `{fmt}` is not supported")
        return web.json_response(payload)


def _bad(message: str) -> web.Response:
    return web.json_response(error_body(message), status=400)
