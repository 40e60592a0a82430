"""Groq error bodies (as Groq sends them) become the right ProviderError."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rumi.llm.provider_errors import ProviderError, classify, parse_duration

TPM_429 = (
    "Rate limit reached for model `openai/gpt-oss-120b` in organization `org_01abc` service tier "
    "`on_demand` on tokens per minute (TPM): Limit 8000, Used 7012, Requested 2456. Please try "
    "again in 10.854s. Need more tokens? Upgrade to Dev Tier today at "
    "https://console.groq.com/settings/billing"
)
RPD_429 = (
    "Rate limit reached for model `llama-3.1-8b-instant` in organization `org_01abc` service tier "
    "`on_demand` on requests per day (RPD): Limit 14400, Used 14400, Requested 1. Please try "
    "again in 7m12.5s. Need more requests? Upgrade to Dev Tier today at "
    "https://console.groq.com/settings/billing"
)
TOO_LARGE_413 = (
    "Request too large for model `openai/gpt-oss-120b` in organization `org_01abc` service tier "
    "`on_demand` on tokens per minute (TPM): Limit 8000, Requested 9413, please reduce your "
    "message size and try again. Need more tokens? Upgrade to Dev Tier today at "
    "https://console.groq.com/settings/billing"
)


def groq_body(message: str, code: str | None = None, type_: str = "invalid_request_error",
              **extra: object) -> dict[str, object]:
    return {"error": {"message": message, "type": type_, "code": code, **extra}}


# --- parse_duration ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("7.66s", 7.66),
        ("2m59.56s", 179.56),
        ("1h2m3.5s", 3723.5),
        ("450ms", 0.45),
        ("12", 12.0),
        ("0.5", 0.5),
        ("0s", 0.0),
        (" 3 s", 3.0),
        ("1m", 60.0),
        ("2h", 7200.0),
        ("1m 30s", 90.0),
        ("1s500ms", 1.5),
    ],
)
def test_parse_duration_reads_groq_formats(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", [None, "", "   ", "soon", "-5", "-1s", "1.2.3s", "s", "ms", "5x", "1e3", "nan", "3s2m"]
)
def test_parse_duration_rejects_garbage(text: str | None) -> None:
    assert parse_duration(text) is None


@given(st.text(max_size=40))
def test_parse_duration_never_raises_and_is_never_negative(text: str) -> None:
    result = parse_duration(text)
    assert result is None or result >= 0


# --- rate limits ------------------------------------------------------------------------------

def test_429_tpm_fills_every_number_and_uses_the_message_wait() -> None:
    err = classify(429, groq_body(TPM_429, "rate_limit_exceeded", "tokens"))
    assert err.kind == "rate_limited"
    assert err.code == "rate_limit_exceeded"
    assert (err.scope, err.limit, err.used, err.requested) == ("TPM", 8000, 7012, 2456)
    assert err.model == "openai/gpt-oss-120b"
    assert err.retry_after == pytest.approx(10.854)
    assert not err.daily
    assert err.retryable
    assert err.failed_generation is None


def test_429_retry_after_header_wins_and_lookup_is_case_insensitive() -> None:
    err = classify(429, groq_body(TPM_429, "rate_limit_exceeded"), {"Retry-After": "3.5"})
    assert err.retry_after == pytest.approx(3.5)


def test_429_daily_limit_is_not_retryable() -> None:
    err = classify(429, groq_body(RPD_429, "rate_limit_exceeded", "requests"))
    assert err.scope == "RPD"
    assert err.daily
    assert not err.retryable
    assert err.retry_after == pytest.approx(432.5)
    assert (err.limit, err.used, err.requested) == (14400, 14400, 1)
    assert err.model == "llama-3.1-8b-instant"


@pytest.mark.parametrize("body", [None, "", "Too Many Requests", {"weird": True}, [1, 2], 42])
def test_429_without_a_parsable_message_is_still_rate_limited(body: object) -> None:
    err = classify(429, body)
    assert err.kind == "rate_limited"
    assert err.scope is None
    assert err.retry_after is None
    assert err.retryable


def test_429_falls_back_to_groq_reset_headers_by_scope() -> None:
    headers = {"x-ratelimit-reset-tokens": "7.66s", "x-ratelimit-reset-requests": "2m59.56s"}
    tokens = classify(429, groq_body("Rate limit reached on tokens per minute (TPM)"), headers)
    requests = classify(429, groq_body("Rate limit reached on requests per minute (RPM)"), headers)
    assert tokens.retry_after == pytest.approx(7.66)
    assert requests.retry_after == pytest.approx(179.56)


def test_unparsable_retry_after_header_falls_back_to_the_message() -> None:
    err = classify(429, groq_body(TPM_429), {"retry-after": "later"})
    assert err.retry_after == pytest.approx(10.854)


def test_413_is_request_too_large_with_limit_and_requested() -> None:
    err = classify(413, groq_body(TOO_LARGE_413, "rate_limit_exceeded", "tokens"))
    assert err.kind == "request_too_large"
    assert (err.scope, err.limit, err.requested, err.used) == ("TPM", 8000, 9413, None)
    assert err.model == "openai/gpt-oss-120b"
    assert not err.retryable


# --- auth, models, requests -------------------------------------------------------------------

@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors(status: int) -> None:
    err = classify(status, groq_body("Invalid API Key", "invalid_api_key"))
    assert err.kind == "auth"
    assert err.code == "invalid_api_key"
    assert err.message == "Invalid API Key"
    assert not err.retryable


def test_api_key_never_survives_into_the_message() -> None:
    err = classify(401, groq_body("Invalid API Key gsk_abcdefghijklmnopqrstuvwxyz0123"))
    assert "gsk_abcdefghijklmnop" not in err.message
    assert err.kind == "auth"


def test_404_model_not_found_is_model_gone() -> None:
    msg = "The model `llama-9-huge` does not exist or you do not have access to it."
    err = classify(404, groq_body(msg, "model_not_found"))
    assert err.kind == "model_gone"
    assert err.model == "llama-9-huge"


def test_404_with_only_the_message_is_model_gone() -> None:
    msg = "The model `x-model` does not exist or you do not have access to it."
    assert classify(404, groq_body(msg)).kind == "model_gone"


def test_400_decommissioned_is_model_gone() -> None:
    msg = ("The model `gemma2-9b-it` has been decommissioned and is no longer supported. Please "
           "refer to https://console.groq.com/docs/deprecations for a recommendation on which "
           "model to use instead.")
    err = classify(400, groq_body(msg, "model_decommissioned"))
    assert err.kind == "model_gone"
    assert err.model == "gemma2-9b-it"


def test_other_404_is_bad_request() -> None:
    assert classify(404, groq_body("Unknown request URL: POST /openai/v1/nope")).kind == (
        "bad_request"
    )


def test_tool_use_failed_keeps_the_failed_generation() -> None:
    body = groq_body("Failed to call a function. Please adjust your prompt. See "
                     "'failed_generation' for more details.", "tool_use_failed",
                     failed_generation='<function=bash>{"command": "ls"}</function>')
    err = classify(400, body)
    assert err.kind == "tool_use_failed"
    assert err.failed_generation == '<function=bash>{"command": "ls"}</function>'
    assert not err.retryable


def test_tool_use_failed_with_empty_or_missing_generation() -> None:
    empty = classify(400, groq_body("Failed to call a function.", "tool_use_failed",
                                    failed_generation=""))
    missing = classify(400, groq_body("Failed to call a function.", "tool_use_failed"))
    assert empty.kind == missing.kind == "tool_use_failed"
    assert empty.failed_generation == ""
    assert missing.failed_generation is None


def test_failed_generation_is_ignored_for_other_kinds() -> None:
    err = classify(400, groq_body("bad", "invalid_value", failed_generation="x"))
    assert err.kind == "bad_request"
    assert err.failed_generation is None


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("context_length_exceeded", "Please reduce the length of the messages or completion."),
        (None, "Please reduce the length of the messages or completion."),
        (None, "This model's maximum context length is 131072 tokens."),
        ("invalid_request_error", "context_length exceeded"),
    ],
)
def test_context_length(code: str | None, message: str) -> None:
    assert classify(400, groq_body(message, code)).kind == "context_length"


@pytest.mark.parametrize("status", [400, 405, 415, 422])
def test_other_4xx_is_bad_request(status: int) -> None:
    err = classify(status, groq_body("'messages' : property 'messages' is missing", "invalid"))
    assert err.kind == "bad_request"
    assert not err.retryable


# --- provider down ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "status", [None, 408, 409, 425, 498, 500, 502, 503, 504, 520, 524, 529, 501]
)
def test_provider_down(status: int | None) -> None:
    err = classify(status, None)
    assert err.kind == "provider_down"
    assert err.retryable
    assert err.status == status


def test_flex_capacity_exceeded_498_keeps_code_and_retry_after() -> None:
    body = groq_body("Capacity exceeded for flex tier, please try again later",
                     "capacity_exceeded")
    err = classify(498, body, {"retry-after": "2"})
    assert err.kind == "provider_down"
    assert err.code == "capacity_exceeded"
    assert err.retry_after == 2.0


# --- odd bodies -------------------------------------------------------------------------------

def test_json_text_body_is_decoded() -> None:
    text = '{"error": {"message": "Invalid API Key", "code": "invalid_api_key"}}'
    err = classify(401, text)
    assert err.code == "invalid_api_key"
    assert err.message == "Invalid API Key"


def test_bytes_body_is_decoded() -> None:
    err = classify(400, b'{"error": {"message": "x", "code": "tool_use_failed"}}')
    assert err.kind == "tool_use_failed"


def test_plain_dict_without_error_key() -> None:
    err = classify(400, {"message": "Please reduce the length of the messages", "code": None})
    assert err.kind == "context_length"
    assert err.message == "Please reduce the length of the messages"


def test_string_error_field() -> None:
    err = classify(400, {"error": "something broke", "code": "tool_use_failed"})
    assert err.message == "something broke"
    assert err.kind == "tool_use_failed"


def test_plain_text_body_becomes_the_message() -> None:
    err = classify(502, "<html>Bad Gateway</html>")
    assert err.kind == "provider_down"
    assert err.message == "<html>Bad Gateway</html>"


def test_non_string_fields_are_dropped() -> None:
    err = classify(400, {"error": {"message": 12, "code": ["x"], "failed_generation": 3}})
    assert (err.kind, err.message, err.code, err.failed_generation) == (
        "bad_request", "", None, None,
    )


def test_huge_message_is_capped() -> None:
    assert len(classify(400, groq_body("x" * 100_000)).message) <= 2000


def test_error_is_frozen() -> None:
    err = classify(429, None)
    assert isinstance(err, ProviderError)
    with pytest.raises(AttributeError):
        err.kind = "auth"  # type: ignore[misc]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["error", "message", "code", "type", "failed_generation"])
                      | st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@given(
    st.one_of(st.none(), st.integers(min_value=0, max_value=999)),
    json_values | st.text(max_size=80) | st.binary(max_size=40),
    st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=3),
)
def test_classify_never_raises(status: int | None, body: object, headers: dict[str, str]) -> None:
    err = classify(status, body, headers)
    assert err.status == status
    assert isinstance(err.message, str)
    assert err.retry_after is None or err.retry_after >= 0
