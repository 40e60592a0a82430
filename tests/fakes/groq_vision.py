"""Images in chat completions for the fake Groq, kept apart from the conversation's requests.

Like Groq (console.groq.com/docs/vision): only vision models take `image_url` content parts
(others answer 400, the request does not match their schema); at most 5 images a request; an
inline image must be a base64 `data:image/…` URL; each image counts as 2,048 prompt tokens.
A vision request is answered with the next scripted description (`enqueue`), and kept in
`requests`, not in the server's `requests` (those stay the chat model's conversation).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from typing import Any

from tests.fakes.groq_catalogue import GroqError, ModelSpec, invalid_request

MAX_IMAGES = 5
IMAGE_TOKENS = 2_048
MAX_BASE64_BYTES = 4 * 1024 * 1024


def image_urls(body: dict[str, Any]) -> list[str]:
    """Every image URL in the request's messages."""
    urls = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    urls.append(str((part.get("image_url") or {}).get("url", "")))
    return urls


class FakeVision:
    def __init__(self) -> None:
        self.queue: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.images: list[bytes] = []   # every decoded inline image, in order
        self.default_text = "Una imagen."
        self.failures: deque[GroqError] = deque()

    def enqueue(self, description: str) -> None:
        self.queue.append(description)

    def fail_next(self, error: GroqError) -> None:
        self.failures.append(error)

    def answer(self, body: dict[str, Any], spec: ModelSpec) -> tuple[str, int]:
        """(description, prompt tokens), or the GroqError Groq would answer with."""
        self.requests.append(body)
        urls = image_urls(body)
        if not spec.vision:
            index = next(i for i, m in enumerate(body.get("messages") or [])
                         if isinstance(m.get("content"), list))
            where = f"'messages.{index}'"
            raise invalid_request(f"{where} : for 'role:user' the following must be satisfied"
                                  f"[('messages.{index}.content' : value must be a string)]")
        if len(urls) > MAX_IMAGES:
            raise invalid_request(f"Too many images provided. This model supports up to "
                                  f"{MAX_IMAGES} images")
        for url in urls:
            self.images.append(_decode(url))
        if self.failures:
            raise self.failures.popleft()
        text = self.queue.popleft() if self.queue else self.default_text
        words = len(json.dumps(body.get("messages"))) // 4 if not urls else 0
        return text, words + IMAGE_TOKENS * len(urls) + 20


def _decode(url: str) -> bytes:
    if url.startswith(("http://", "https://")):
        return b""
    header, _, payload = url.partition(",")
    if not header.startswith("data:image/") or not header.endswith(";base64"):
        raise invalid_request("image_url must be a URL or a base64 `data:image/...` URL")
    if len(payload) > MAX_BASE64_BYTES:
        raise GroqError(413, {"error": {"message": "Request Entity Too Large",
                                        "type": "invalid_request_error",
                                        "code": "request_too_large"}})
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise invalid_request("invalid base64 image data") from exc
