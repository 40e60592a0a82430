"""Photos for the core: size checked before upload, described by the vision model, and the
description plus the caption handed on as the person's message, marked with its origin."""

from __future__ import annotations

import logging

from rumi import messages as msg
from rumi.base.replies import Attachment, InputRefused
from rumi.config import VisionSettings
from rumi.llm.side_client import FailureTexts, explain
from rumi.media.vision import Describer, DescriptionFailed

log = logging.getLogger(__name__)

MB = 1024 * 1024
# What Groq's vision models take (console.groq.com/docs/vision); Telegram photos are JPEG
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"})


class PhotoService:
    def __init__(self, describer: Describer | None, settings: VisionSettings,
                 language: str) -> None:
        self.describer = describer
        self.settings = settings
        self.language = language

    async def read(self, chat_id: str, photo: Attachment, caption: str) -> str:
        """The conversation's text for this photo, or InputRefused with the reason."""
        if self.describer is None:
            raise InputRefused(msg.PHOTO_DISABLED)
        size_mb = len(photo.data) / MB
        if size_mb > self.settings.max_image_mb:
            raise InputRefused(msg.PHOTO_TOO_LARGE.format(size_mb=size_mb,
                                                          max_mb=self.settings.max_image_mb))
        mime = photo.mime_type if photo.mime_type in IMAGE_TYPES else "image/jpeg"
        try:
            language = (msg.current_language() if self.language == "auto"
                        else self.language)
            description = await self.describer.describe(photo.data, mime, caption, language)
        except DescriptionFailed as exc:
            raise InputRefused(self._explain(exc)) from exc
        log.info("chat=%s photo described (%d bytes -> %d chars)", chat_id, len(photo.data),
                 len(description))
        if not description:
            raise InputRefused(msg.PHOTO_EMPTY)
        text = f"{msg.PHOTO_ORIGIN.format(model=self.describer.model)}\n{description}"
        if caption:
            text += "\n\n" + msg.PHOTO_CAPTION.format(caption=caption)
        return text

    def _explain(self, exc: DescriptionFailed) -> str:
        assert self.describer is not None
        error = exc.error
        log.warning("describing a photo failed: %s (HTTP %s)", error.kind, error.status)
        texts = FailureTexts(msg.PHOTO_RATE_LIMITED, msg.PHOTO_TOO_LARGE, msg.PHOTO_AUTH,
                             msg.PHOTO_MODEL_GONE, msg.PHOTO_REFUSED, msg.PHOTO_UNAVAILABLE,
                             refused_kinds=("bad_request", "context_length"))
        return explain(error, texts, model=self.describer.model,
                       max_mb=self.settings.max_image_mb)
