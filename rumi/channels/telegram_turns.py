"""What a Telegram message asks the core for: a `Turn` (text, an `/import` archive, a voice
note, a photo or a document), with files downloaded after Telegram's sizes are checked."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from telegram import Message
from telegram.constants import ChatType

from rumi import messages as msg
from rumi.base.replies import Attachment, Reply
from rumi.channels.telegram_send import send

MAX_IMPORT_BYTES = 10 * 1024 * 1024
MAX_AUDIO_DOWNLOAD_BYTES = 20 * 1024 * 1024  # the Bot API's getFile limit (any file)


@dataclass(frozen=True)
class Turn:
    """One thing for the core to answer and where its answer goes in the chat."""

    text: str
    channel_message_id: int | None = None     # the person's own message, if they typed it
    reply_to_message_id: int | None = None    # the message they replied to (for `/pin`)
    attachment: Attachment | None = None
    quote: int | None = None                  # the message our answer replies to (groups)
    voice: Attachment | None = None           # a voice note or audio file, to transcribe
    duration: float | None = None             # its length as Telegram reports it
    media: Attachment | None = None           # a photo or document for the core to read
    media_kind: str = ""                      # "photo" or "document"


async def message_turn(message: Message, text: str) -> Turn | None:
    """What a typed message asks for, with its document when it is an `/import`; None
    when there is nothing for the core (already answered here, or empty)."""
    audio = message.voice or message.audio
    if audio is not None:
        return await voice_turn(message, audio)
    if message.photo or (message.document is not None
                         and not text.strip().startswith("/")):
        return await media_turn(message, text)
    attachment: Attachment | None = None
    document = message.document
    if document is not None:
        if not text.strip().startswith("/import"):
            pass   # a command captioning a document: the command alone
        elif document.file_size and document.file_size > MAX_IMPORT_BYTES:
            await send(message.get_bot(), message.chat_id, Reply(
                msg.DOCUMENT_TOO_LARGE.format(max_mb=MAX_IMPORT_BYTES // 2**20),
                markdown=False))
            return None
        else:
            file = await document.get_file()
            data = bytes(await file.download_as_bytearray())
            attachment = Attachment(document.file_name or "archivo", data,
                                    document.mime_type)
    if not text.strip() and attachment is None:
        return None
    reply_to = message.reply_to_message
    return Turn(text, channel_message_id=message.message_id,
                reply_to_message_id=reply_to.message_id if reply_to else None,
                attachment=attachment, quote=_quote(message))


async def voice_turn(message: Message, audio: Any) -> Turn | None:
    """Download a voice note (Telegram's size checked first) for the core to transcribe."""
    if audio.file_size and audio.file_size > MAX_AUDIO_DOWNLOAD_BYTES:
        await send(message.get_bot(), message.chat_id, Reply(
            msg.VOICE_TOO_LARGE.format(size_mb=audio.file_size / 2**20,
                                       max_mb=MAX_AUDIO_DOWNLOAD_BYTES // 2**20),
            markdown=False))
        return None
    file = await audio.get_file()
    data = bytes(await file.download_as_bytearray())
    default = "voice.ogg" if message.voice is not None else "audio"
    name = getattr(audio, "file_name", None) or default
    return Turn("", channel_message_id=message.message_id, quote=_quote(message),
                voice=Attachment(name, data, audio.mime_type), duration=_seconds(audio))


async def media_turn(message: Message, caption: str) -> Turn | None:
    """Download a photo (its largest size) or a document for the core to read; a
    document that is an image is read as a photo."""
    if message.photo:
        file_ref: Any = message.photo[-1]
        kind, name, mime = "photo", "foto.jpg", "image/jpeg"
    else:
        file_ref = message.document
        name = file_ref.file_name or "archivo"
        mime = file_ref.mime_type
        kind = "photo" if (mime or "").startswith("image/") else "document"
    if file_ref.file_size and file_ref.file_size > MAX_AUDIO_DOWNLOAD_BYTES:
        await send(message.get_bot(), message.chat_id, Reply(
            msg.DOCUMENT_TOO_LARGE.format(max_mb=MAX_AUDIO_DOWNLOAD_BYTES // 2**20),
            markdown=False))
        return None
    file = await file_ref.get_file()
    data = bytes(await file.download_as_bytearray())
    return Turn(caption, channel_message_id=message.message_id, quote=_quote(message),
                media=Attachment(name, data, mime), media_kind=kind)


def _quote(message: Message) -> int | None:
    """In groups the answer replies to the person's message, so it is clear whom it answers."""
    return message.message_id if message.chat.type != ChatType.PRIVATE else None


def _seconds(audio: Any) -> float | None:
    """An audio's duration in seconds (int today, timedelta in PTB's next major)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        value = audio.duration
    if hasattr(value, "total_seconds"):
        return float(value.total_seconds())
    return float(value) if value else None
