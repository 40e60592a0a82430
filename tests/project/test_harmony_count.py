"""benchmarks/harmony_count.py: requests counted as gpt-oss reads them (OpenAI's harmony
renderer, o200k). Needs the `openai-harmony` dev extra and the o200k file in the tokenizer
cache; skips without them, fails in strict mode."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import REPO, require

sys.path.insert(0, str(REPO / "benchmarks"))
import harmony_count  # noqa: E402

TOOL = {"type": "function", "function": {
    "name": "bash", "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
BODY = {"reasoning_effort": "low", "tools": [TOOL], "messages": [
    {"role": "system", "content": "Eres Rumi."},
    {"role": "user", "content": "¿Qué hay en mi carpeta?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "informe.pdf"},
]}


@pytest.fixture(scope="module")
def text() -> str:
    missing = harmony_count.available()
    require(missing is None, f"openai-harmony cannot count offline: {missing}")
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    return encoding.decode_utf8(harmony_count.render(BODY))


def test_every_part_of_the_request_is_rendered_the_harmony_way(text: str) -> None:
    assert text.startswith("<|start|>system<|message|>")
    assert "Reasoning: low" in text
    developer = text.split("<|start|>developer<|message|>", 1)[1].split("<|end|>", 1)[0]
    assert "# Instructions\n\nEres Rumi." in developer
    assert "namespace functions {" in developer and "type bash = (_: {" in developer
    assert "<|start|>user<|message|>¿Qué hay en mi carpeta?<|end|>" in text
    assert ("<|start|>assistant to=functions.bash<|channel|>commentary <|constrain|>json"
            '<|message|>{"command": "ls"}<|call|>') in text
    assert ("<|start|>functions.bash to=assistant<|channel|>commentary<|message|>"
            "informe.pdf<|end|>") in text
    assert text.endswith("<|start|>assistant")


def test_counts_grow_with_the_conversation_and_share_its_prefix(text: str) -> None:
    first = harmony_count.render({**BODY, "messages": BODY["messages"][:2]})
    second = harmony_count.render(BODY)
    assert harmony_count.count(BODY) == len(second) > len(first)
    shared = harmony_count.common_prefix(first, second)
    assert shared == len(first)  # its closing "<|start|>assistant" opens the call too
    assert harmony_count.common_prefix(second, second) == len(second)


def test_a_later_system_message_is_a_developer_message(text: str) -> None:
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    body = {**BODY, "messages": [*BODY["messages"], {"role": "system", "content": "Aviso."}]}
    rendered = encoding.decode_utf8(harmony_count.render(body))
    assert rendered.count("<|start|>developer<|message|>") == 2
    assert "# Instructions\n\nAviso.<|end|>" in rendered
