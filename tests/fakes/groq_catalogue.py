"""The fake Groq's model catalogue and the error bodies Groq answers with.

The catalogue is plain data a test may change while the server runs (`add`, `remove`,
`retire`), because "the model we were using disappeared" is the failure Rumi must survive:
Groq retires models with little notice, and a retired id answers 404 `model_not_found` (recent
retirements) or 400 `model_decommissioned` (older ones) instead of a completion.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

DEPRECATIONS_URL = "https://console.groq.com/docs/deprecations"
MODEL = "{model}"  # in a scripted error message: replaced by the request's model when served


class GroqError(Exception):
    """An HTTP error the fake answers with: raised by validators, turned into a response once."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        super().__init__(f"HTTP {status}: {body.get('error', {}).get('message', '')}")
        self.status = status
        self.body = body
        self.headers = headers or {}


def error_body(message: str, type_: str = "invalid_request_error", code: str | None = None,
               **extra: Any) -> dict[str, Any]:
    """Groq's error envelope; `code` is left out when Groq sends none (e.g. schema errors)."""
    error: dict[str, Any] = {"message": message, "type": type_}
    if code is not None:
        error["code"] = code
    error.update(extra)
    return {"error": error}


def invalid_request(message: str, code: str | None = None) -> GroqError:
    return GroqError(400, error_body(message, code=code))


def model_not_found(model: str) -> GroqError:
    return GroqError(404, error_body(
        f"The model `{model}` does not exist or you do not have access to it.",
        code="model_not_found"))


def model_decommissioned(model: str) -> GroqError:
    return GroqError(400, error_body(
        f"The model `{model}` has been decommissioned and is no longer supported. Please refer "
        f"to {DEPRECATIONS_URL} for a recommendation on which model to use instead.",
        code="model_decommissioned"))


def status_body(status: int, code: str | None = None,
                message: str | None = None) -> dict[str, Any]:
    """A realistic error body for `status` (and `code`), as Groq sends it."""
    if status == 404 or code == "model_not_found":
        body = model_not_found(MODEL).body
    elif code == "model_decommissioned":
        body = model_decommissioned(MODEL).body
    else:
        text, type_, default_code = {
            400: ("Bad Request", "invalid_request_error", None),
            401: ("Invalid API Key", "invalid_request_error", "invalid_api_key"),
            403: ("Permission denied", "permissions_error", "permission_denied"),
            498: ("Flex tier capacity exceeded. This is a known issue and we are working to "
                  "add more capacity.", "invalid_request_error", "capacity_exceeded"),
            500: ("Internal Server Error", "internal_server_error", None),
            502: ("Bad Gateway", "internal_server_error", None),
            503: ("Service Unavailable", "internal_server_error", None),
        }.get(status, (_phrase(status), "api_error", None))
        body = error_body(text, type_, code or default_code)
    if message is not None:
        body["error"]["message"] = message
    if code is not None:
        body["error"]["code"] = code
    return body


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


@dataclass(frozen=True)
class ModelSpec:
    """One served model. `reasoning` models (gpt-oss) think before answering and spend output
    tokens doing so; `caching` models report prompt-cache hits; `chat` is False for audio;
    `vision` models accept images."""

    id: str
    owned_by: str
    context_window: int
    max_completion_tokens: int
    reasoning: bool = False
    caching: bool = False
    chat: bool = True
    vision: bool = False   # takes `image_url` content parts
    created: int = 1_754_000_000

    def listing(self) -> dict[str, Any]:
        return {"id": self.id, "object": "model", "created": self.created,
                "owned_by": self.owned_by, "active": True,
                "context_window": self.context_window, "public_apps": None,
                "max_completion_tokens": self.max_completion_tokens}


def _gpt_oss(model_id: str) -> ModelSpec:
    return ModelSpec(model_id, "OpenAI", 131_072, 65_536, reasoning=True, caching=True)


def default_models() -> list[ModelSpec]:
    """What Groq serves in November 2026, plus "fake": a plain chat model that exists only so
    tests that do not care about the model can say so; no real Groq serves it."""
    return [
        _gpt_oss("openai/gpt-oss-120b"),
        _gpt_oss("openai/gpt-oss-20b"),
        ModelSpec("qwen/qwen3.6-27b", "Alibaba Cloud", 131_072, 8_192, vision=True),  # preview
        ModelSpec("whisper-large-v3", "OpenAI", 448, 448, chat=False),
        ModelSpec("whisper-large-v3-turbo", "OpenAI", 448, 448, chat=False),
        ModelSpec("fake", "rumi-tests", 131_072, 32_768),
    ]


RETIRED_NOT_FOUND = ("llama-3.3-70b-versatile", "llama-3.1-8b-instant",
                     "meta-llama/llama-4-scout-17b-16e-instruct")
RETIRED_DECOMMISSIONED = ("mixtral-8x7b-32768", "gemma2-9b-it", "llama3-70b-8192")


@dataclass
class Catalogue:
    """Active models by id, and the ids retired with a 400 "decommissioned" answer. Anything
    neither active nor decommissioned is unknown and answers 404, like recent retirements."""

    models: dict[str, ModelSpec] = field(
        default_factory=lambda: {spec.id: spec for spec in default_models()})
    decommissioned: set[str] = field(default_factory=lambda: set(RETIRED_DECOMMISSIONED))

    def add(self, spec: ModelSpec) -> None:
        self.models[spec.id] = spec
        self.decommissioned.discard(spec.id)

    def remove(self, model_id: str) -> None:
        """Forget a model: from now on it answers 404 `model_not_found`."""
        self.models.pop(model_id, None)
        self.decommissioned.discard(model_id)

    def retire(self, model_id: str, *, decommissioned: bool = False) -> None:
        """Retire a model: 404 `model_not_found` (how Groq answers today), or 400
        `model_decommissioned` with `decommissioned=True` (older retirements)."""
        self.remove(model_id)
        if decommissioned:
            self.decommissioned.add(model_id)

    def get(self, model_id: str) -> ModelSpec | None:
        return self.models.get(model_id)

    def listing(self) -> list[dict[str, Any]]:
        return [spec.listing() for spec in self.models.values()]

    def chat_model(self, model_id: str) -> ModelSpec:
        """The spec for a chat request, or the GroqError Groq would answer with."""
        spec = self.models.get(model_id)
        if spec is not None:
            if not spec.chat:
                raise invalid_request(f"model `{model_id}` does not support chat completions")
            return spec
        if model_id in self.decommissioned:
            raise model_decommissioned(model_id)
        raise model_not_found(model_id)

    def chat_models(self) -> Iterable[ModelSpec]:
        return [spec for spec in self.models.values() if spec.chat]
