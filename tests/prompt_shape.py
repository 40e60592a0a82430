"""Where Rumi puts what in a request, for tests that read requests the fake Groq received.

The person's newest message is the last user-role message; Rumi's automatic message (the
recalled memories, this turn's notes, the dashboard) is the message right before it; after
it come only this turn's tool steps. These helpers check that shape as they read it.
"""

from __future__ import annotations

from typing import Any

from rumi.context.prompt import AUTO_MARKER, AUTO_ROLE
from tests.fakes.chat_model import latest_user_index, text_of


def _messages(request: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return request if isinstance(request, list) else list(request.get("messages") or [])


def person_index(request: dict[str, Any] | list[dict[str, Any]]) -> int:
    """Index of the person's newest message: the last user-role message, not Rumi's own."""
    messages = _messages(request)
    index = latest_user_index({"messages": messages})
    assert index is not None, "the request has no user-role message"
    assert not text_of(messages[index]).startswith(AUTO_MARKER), \
        "the last user-role message is Rumi's automatic message, not the person's"
    return index


def person(request: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    """The person's newest message (the last user-role message), checked as such."""
    return _messages(request)[person_index(request)]


def automatic(request: dict[str, Any] | list[dict[str, Any]]) -> str:
    """The text of Rumi's automatic message, checked to sit right before the person's newest
    message (or, with no message of the person, right after the system message)."""
    messages = _messages(request)
    index = latest_user_index({"messages": messages})
    if index is not None and text_of(messages[index]).startswith(AUTO_MARKER):
        assert index == 1, "an automatic message after the conversation started"
        found = messages[index]
    else:
        assert index is not None and index >= 2, "no automatic message before the person's"
        found = messages[person_index(messages) - 1]
    assert found["role"] == AUTO_ROLE
    text = text_of(found)
    assert text.startswith(AUTO_MARKER + "\n\n"), text[:80]
    return text[len(AUTO_MARKER) + 2:]
