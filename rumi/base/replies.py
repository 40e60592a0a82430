"""What goes into a turn besides text and what comes out of it: the channel-agnostic shapes
channels render and features return, so neither needs the core to speak."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attachment:
    """A file the person sent (e.g. the archive for /import)."""

    filename: str
    data: bytes
    mime_type: str | None = None


@dataclass(frozen=True)
class ReplyDocument:
    """A file to send back (e.g. the /export archive)."""

    filename: str
    data: bytes
    caption: str | None = None


@dataclass
class Reply:
    text: str
    document: ReplyDocument | None = None
    is_error: bool = False
    markdown: bool = True  # False: send exactly as is (no formatting conversion)
    item_id: int | None = None  # the context item this text shows (for `/pin` as a reply)
    # Choices as rows of (label, command text), e.g. ("Olvidar #12", "/forget #12"). Telegram
    # shows inline buttons that send the command; channels without buttons rely on the text,
    # which must always say how to answer by typing.
    buttons: list[list[tuple[str, str]]] | None = None
    stopped: bool = False  # the turn was cut short by /stop (not an error, not finished)
    # the disk is full: nothing of the turn could be kept; the channel answers the message
    # again once there is room (the text says so)
    disk_full: bool = False


class InputRefused(Exception):
    """An input the core will not take as it is (a voice note too long…); the text is the
    person's explanation, already in their language."""
