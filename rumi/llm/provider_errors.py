"""Groq HTTP errors as one typed value, so the client decides on facts instead of strings.

Groq reports most failures as `{"error": {"message", "type", "code"}}`, but the useful details
(which limit was hit, how long to wait, which model is gone) live only in the English message.
Parsing them here, once and defensively, lets the client choose between waiting, shrinking the
request, switching model or giving up without each caller re-reading raw responses. Nothing in
this module raises: a malformed error must never turn into a second, more confusing error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

ErrorKind = Literal[
    "rate_limited",
    "request_too_large",
    "auth",
    "model_gone",
    "tool_use_failed",
    "context_length",
    "provider_down",
    "bad_request",
]

DAILY_SCOPES = frozenset({"RPD", "TPD", "ASD"})
PROVIDER_DOWN_STATUS = frozenset({408, 409, 425, 498, 500, 502, 503, 504, *range(520, 530)})
MAX_MESSAGE_CHARS = 2000

_NUM = r"\d+(?:\.\d+)?"
_DURATION = re.compile(
    rf"""^\s*
    (?:(?P<h>{_NUM})\s*h\s*)?
    (?:(?P<m>{_NUM})\s*m(?!s)\s*)?
    (?:(?P<s>{_NUM})\s*s\s*)?
    (?:(?P<ms>{_NUM})\s*ms\s*)?
    $""",
    re.VERBOSE,
)
_PLAIN_SECONDS = re.compile(rf"^\s*({_NUM})\s*$")
_TRY_AGAIN = re.compile(rf"try again in\s+((?:{_NUM}\s*(?:ms|h|m|s)\s*)+)", re.IGNORECASE)
_SCOPE = re.compile(r"\((RPM|RPD|TPM|TPD|ITPM|OTPM|ASH|ASD)\)")
_LIMIT = re.compile(r"\bLimit:?\s+([\d,]+)")
_USED = re.compile(r"\bUsed:?\s+([\d,]+)")
_REQUESTED = re.compile(r"\bRequested:?\s+~?([\d,]+)")
_MODEL_NAMED = re.compile(r"\bmodel\s+`([^`]+)`", re.IGNORECASE)
_API_KEY = re.compile(r"gsk_[A-Za-z0-9]{8,}")
_CONTEXT_HINTS = ("reduce the length of the messages", "context length", "context_length")
_MODEL_GONE_HINT = "does not exist or you do not have access to it"


@dataclass(frozen=True)
class ProviderError:
    """What went wrong with one Groq request, with every number the message carried."""

    kind: ErrorKind
    status: int | None
    code: str | None
    message: str
    retry_after: float | None = None
    scope: str | None = None
    limit: int | None = None
    used: int | None = None
    requested: int | None = None
    model: str | None = None
    failed_generation: str | None = None

    @property
    def daily(self) -> bool:
        """A daily quota resets hours later: waiting inside one turn is pointless."""
        return self.scope in DAILY_SCOPES

    @property
    def retryable(self) -> bool:
        """Worth retrying the same request after a pause (per-minute limits, outages)."""
        if self.kind == "rate_limited":
            return not self.daily
        return self.kind == "provider_down"


def parse_duration(text: str | None) -> float | None:
    """Seconds from Groq's duration strings ("7.66s", "2m59.56s", "450ms", "12").

    Groq writes waits this way both in `x-ratelimit-reset-*` headers and in 429 messages;
    anything else (garbage, negatives) is None so the caller falls back to its own backoff.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    plain = _PLAIN_SECONDS.match(text)
    if plain:
        return float(plain.group(1))
    match = _DURATION.match(text)
    if not match or not any(match.groupdict().values()):
        return None
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return parts["h"] * 3600 + parts["m"] * 60 + parts["s"] + parts["ms"] / 1000


def classify(
    status: int | None, body: object, headers: Mapping[str, str] | None = None
) -> ProviderError:
    """Turn one failed response (or `status=None` for a connection failure) into a value.

    `body` is whatever the transport gave us: the decoded JSON, its text, or nothing.
    """
    error = _error_fields(body)
    message = _clean_message(error.get("message"))
    code = _str_or_none(error.get("code"))
    header = _lower_keys(headers)
    kind = _kind(status, code, message)

    failed_generation = None
    if kind == "tool_use_failed":
        failed_generation = _str_or_none(error.get("failed_generation"), keep_empty=True)

    return ProviderError(
        kind=kind,
        status=status,
        code=code,
        message=message,
        retry_after=_retry_after(kind, message, header),
        scope=_first(_SCOPE, message),
        limit=_int(_first(_LIMIT, message)),
        used=_int(_first(_USED, message)),
        requested=_int(_first(_REQUESTED, message)),
        model=_first(_MODEL_NAMED, message),
        failed_generation=failed_generation,
    )


def _kind(status: int | None, code: str | None, message: str) -> ErrorKind:
    if status is None or status in PROVIDER_DOWN_STATUS or 500 <= status <= 599:
        return "provider_down"
    if status in (401, 403):
        return "auth"
    if status == 413:
        return "request_too_large"
    if status == 429:
        return "rate_limited"
    lowered = message.lower()
    if code in ("model_not_found", "model_decommissioned") or (
        status in (400, 404) and _MODEL_GONE_HINT in lowered
    ):
        return "model_gone"
    if code == "tool_use_failed":
        return "tool_use_failed"
    if code == "context_length_exceeded" or any(hint in lowered for hint in _CONTEXT_HINTS):
        return "context_length"
    return "bad_request"


def _retry_after(kind: ErrorKind, message: str, header: Mapping[str, str]) -> float | None:
    """The server's own wait beats ours: header first, then the message's "try again in".

    For rate limits without either, Groq's reset headers still tell when the bucket refills.
    """
    seconds = parse_duration(header.get("retry-after"))
    if seconds is not None:
        return seconds
    said = _TRY_AGAIN.search(message)
    if said:
        seconds = parse_duration(said.group(1))
        if seconds is not None:
            return seconds
    if kind == "rate_limited":
        scope = _first(_SCOPE, message) or ""
        reset = (
            "x-ratelimit-reset-requests" if scope.startswith("R") else "x-ratelimit-reset-tokens"
        )
        return parse_duration(header.get(reset))
    return None


def _error_fields(body: object, depth: int = 0) -> dict[str, object]:
    """The `error` object of any body shape; `{}` when there is nothing usable."""
    if isinstance(body, bytes | bytearray):
        body = bytes(body).decode("utf-8", errors="replace")
    if isinstance(body, str):
        text = body.strip()
        if depth == 0 and text[:1] in ("{", "["):
            try:
                return _error_fields(json.loads(text), depth + 1)
            except ValueError:
                pass
        return {"message": text} if text else {}
    if not isinstance(body, Mapping):
        return {}
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return {str(k): v for k, v in inner.items()}
    if isinstance(inner, str):
        return {"message": inner, "code": body.get("code")}
    return {str(k): v for k, v in body.items()}


def _clean_message(value: object) -> str:
    """Loggable text: never an API key, never megabytes."""
    if not isinstance(value, str):
        return ""
    text = _API_KEY.sub("gsk_***", value.strip())
    return text[:MAX_MESSAGE_CHARS]


def _lower_keys(headers: Mapping[str, str] | None) -> dict[str, str]:
    if not headers:
        return {}
    try:
        return {str(k).lower(): str(v) for k, v in headers.items()}
    except (AttributeError, TypeError):
        return {}


def _str_or_none(value: object, *, keep_empty: bool = False) -> str | None:
    if not isinstance(value, str):
        return None
    return value if value or keep_empty else None


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1) if match else None


def _int(text: str | None) -> int | None:
    if not text:
        return None
    digits = text.replace(",", "")
    return int(digits) if digits.isdigit() else None
