"""Tool names gpt-oss leaks its harmony wrapping into, read back to the declared tool.

The shapes are the published ones: `<|channel|>` glued to the name (openai/harmony and vLLM
issues, Groq community reports), the `functions.` namespace harmony renders tools under, and
`json` from `<|constrain|>json` glued before or after the name.
"""

from __future__ import annotations

import pytest

from rumi.llm.tool_names import resolve
from rumi.llm.tool_repair import recover

DECLARED = ["calculator", "bash", "memory_search", "load_from_disk", "json_tool"]


@pytest.mark.parametrize("leaked, meant", [
    ("calculator<|channel|>commentary", "calculator"),
    ("functions.calculator", "calculator"),
    ("calculatorjson", "calculator"),
    ("json.calculator", "calculator"),
    ("calculator.json", "calculator"),
    ("calculator<|constrain|>json", "calculator"),
    ("<|constrain|>jsoncalculator", "calculator"),
    ("to=functions.bash<|channel|>commentary <|constrain|>json", "bash"),
    ("functions.memory_search<|channel|>commentary", "memory_search"),
    ("memory_searchjson", "memory_search"),
    (" bash ", "bash"),
    ("json_tooljson", "json_tool"),
])
def test_a_leaked_name_reads_as_the_one_tool_it_means(leaked: str, meant: str) -> None:
    assert resolve(leaked, DECLARED) == meant


@pytest.mark.parametrize("name", [
    "calculator bash",                        # two tools named: never guess
    "functions.calculator<|channel|>to=bash",
    "weather<|channel|>commentary",           # no declared tool
    "json", "commentary", "functions", "",
    "Calculator",                             # case is not a leak
    "calc",                                   # neither is a prefix
    "x" * 5000,
])
def test_no_or_several_matches_leave_the_name_alone(name: str) -> None:
    assert resolve(name, DECLARED) is None


def test_a_declared_name_is_itself_even_if_it_looks_wrapped() -> None:
    assert resolve("json", ["json", "calculator"]) == "json"
    assert resolve("functions.memory.search", ["memory", "memory.search"]) == "memory.search"


def test_nothing_declared_or_not_a_string_is_none() -> None:
    assert resolve("calculator", []) is None
    assert resolve(None, DECLARED) is None
    assert resolve(42, DECLARED) is None


def test_a_recovered_call_carries_the_clean_name() -> None:
    recovery = recover(
        '{"name": "calculator<|channel|>commentary", "arguments": {"expression": "2+2"}}',
        "tool call validation failed: attempted to call tool "
        "'calculator<|channel|>commentary' which was not in request.tools",
        DECLARED)
    assert [(c.name, c.arguments) for c in recovery.calls] == [
        ("calculator", '{"expression": "2+2"}')]
    assert recovery.feedback is None


def test_a_whole_harmony_call_in_failed_generation_is_recovered() -> None:
    generation = ("<|channel|>commentary to=functions.bash <|constrain|>json<|message|>"
                  '{"command": "ls"}<|call|>')
    recovery = recover(generation, "Failed to call a function.", DECLARED)
    assert [(c.name, c.arguments) for c in recovery.calls] == [("bash", '{"command": "ls"}')]


def test_an_ambiguous_leaked_name_still_gets_feedback() -> None:
    recovery = recover('{"name": "calculator<|channel|>bash", "arguments": {}}',
                       "Failed to call a function.", DECLARED)
    assert not recovery.calls
    assert recovery.feedback and "calculator<|channel|>bash" in recovery.feedback
