"""Wire photos and documents into the core (`Assistant.handle_media`).

Photos need only Groq; documents need the sandbox, whose manager is passed in (None when
`sandbox.enabled` is false, and then documents are refused with that reason).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rumi.config import Settings
from rumi.core import Assistant
from rumi.media.documents import DocumentService, SaveFailed
from rumi.media.photos import PhotoService
from rumi.media.vision import Describer

log = logging.getLogger(__name__)


def install_media(settings: Settings, *, assistant: Assistant,
                  sandbox: Any | None) -> list[Callable[[], Awaitable[None]]]:
    """Register the readers (always: a disabled part still explains itself, after an
    unsupported file has been told so); returns what to close at shutdown."""
    closers: list[Callable[[], Awaitable[None]]] = []
    describer = None
    if settings.vision.enabled:
        describer = Describer(settings.llm, settings.vision.model,
                              settings.vision.max_description_tokens)
        closers.append(describer.close)
    else:
        log.info("photos not described (vision.enabled = false)")
    photos = PhotoService(describer, settings.vision, settings.agent.language)
    assistant.set_media_reader("photo", photos.read)
    if sandbox is None:
        documents = DocumentService(None, lambda: False, settings.documents)
    else:
        documents = DocumentService(_saver(sandbox), sandbox.available, settings.documents)
    assistant.set_media_reader("document", documents.read)
    return closers


def _saver(manager: Any) -> Callable[[str, str, str, bytes], Awaitable[str]]:
    from rumi.sandbox.manager import SandboxError, SandboxUnavailable
    from rumi.sandbox.tools import save_new_file

    async def save(chat_id: str, directory: str, name: str, data: bytes) -> str:
        try:
            return await save_new_file(manager, chat_id, directory, name, data)
        except SandboxUnavailable as exc:
            raise SaveFailed(str(exc), unavailable=True) from exc
        except SandboxError as exc:
            raise SaveFailed(str(exc)) from exc

    return save
